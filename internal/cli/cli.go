// Package cli holds what the followfeed and followfeed-lab commands share
// about their command lines: usage errors, flag sets whose errors are usage
// errors, and the mapping of an error to an exit status.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"followfeed/config"
)

// UsageError is a command-line mistake; the process exits 2 for it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ExitCode maps a command's error to a process exit status and writes a
// one-line message prefixed with prog to w: 0 for nil and --help, 2 for
// usage and configuration errors, 1 otherwise.
func ExitCode(prog string, err error, w io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(w, prog+":", strings.Join(strings.Fields(err.Error()), " "))
	var ue *UsageError
	var ce *config.Error
	if errors.As(err, &ue) || errors.As(err, &ce) {
		return 2
	}
	return 1
}

// NewFlags returns a FlagSet for "prog name" whose usage prints help and
// the flags to stdout; parse it with Parse.
func NewFlags(prog, name string, stdout io.Writer, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: %s %s\n\n%s\nFlags:\n", prog, name, help)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args, turning flag errors and stray arguments into
// *UsageError and --help into flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{fmt.Sprintf("%s: %v", fs.Name(), err)}
	}
	if fs.NArg() > 0 {
		return &UsageError{fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// flagLine is a flag's line in PrintDefaults output: "  -name ARG".
var flagLine = regexp.MustCompile(`^  -([\w-]+)(?: (.+))?$`)

// HelpProblems lists what is wrong with a command's --help output: the flag
// package reads a backquoted word in a usage string as the flag's argument
// name (so "runs inside `serve`" printed "-once serve"). Every argument name
// must be a type name (string, int, duration, …) or an upper-case
// placeholder such as FILE, and no backquote may be left in a flag's text.
func HelpProblems(help string) []string {
	var out []string
	_, flags, _ := strings.Cut(help, "\nFlags:\n")
	for _, l := range strings.Split(flags, "\n") {
		if strings.Contains(l, "`") {
			out = append(out, fmt.Sprintf("a backquote in %q", l))
		}
		m := flagLine.FindStringSubmatch(l)
		if m == nil || m[2] == "" {
			continue
		}
		switch arg := m[2]; arg {
		case "string", "int", "uint", "int64", "uint64", "float", "duration", "value":
		default:
			if strings.ToUpper(arg) != arg || strings.ContainsAny(arg, " \t") {
				out = append(out, fmt.Sprintf("flag -%s shows the argument name %q (a backquoted word in its usage?)", m[1], arg))
			}
		}
	}
	return out
}
