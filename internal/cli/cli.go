// Package cli holds what the followfeed and followfeed-lab commands share
// about their command lines: usage errors, flag sets whose errors are usage
// errors, and the mapping of an error to an exit status.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
