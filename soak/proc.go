package soak

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// proc is one started followfeed process (serve, api or worker).
type proc struct {
	name    string
	cmd     *exec.Cmd
	pid     int
	base    string // http://host:port once it listens
	logPath string

	done    chan struct{}
	waitErr error
}

var listeningRE = regexp.MustCompile(`msg=listening .*?\baddr=(\S+)`)

// startProc starts `exe mode args...` with env, its output (stdout and
// stderr) going straight to logPath, and waits until it logs its listening
// address.
func startProc(ctx context.Context, exe, mode string, env []string, logPath string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{mode}, args...)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", mode, err)
	}
	f.Close() // the child has its own descriptor
	p := &proc{name: mode, cmd: cmd, pid: cmd.Process.Pid, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if b, err := os.ReadFile(logPath); err == nil {
			if m := listeningRE.FindSubmatch(b); m != nil {
				p.base = "http://" + string(m[1])
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before listening (%v): %s", mode, p.waitErr, p.tail())
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("%s did not log its listening address within 90s: %s", mode, p.tail())
		}
	}
}

// tail returns the last lines of the process's output.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-6, 0):], " / ")
}

// alive reports whether the process is still running.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to shut down (SIGINT) and waits up to 30 s before
// killing it.
func (p *proc) stop() {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// terminate drains the process as an orchestrator does: SIGTERM, then
// wait up to timeout for it to exit (SIGKILL after that). It returns how
// long the exit took and the exit error (nil for status 0).
func (p *proc) terminate(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), p.waitErr
	case <-time.After(timeout):
		p.kill()
		return time.Since(start), fmt.Errorf("%s did not exit within %s of SIGTERM (killed)", p.name, timeout)
	}
}

// runCmd runs `exe args...` with env to completion, output to logPath.
func runCmd(ctx context.Context, exe string, env []string, logPath string, args ...string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s %s: %v: %s", exe, strings.Join(args, " "), err, oneLine(lastBytes(string(b), 600)))
	}
	return nil
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

var riverClientRE = regexp.MustCompile(`msg="working jobs" .*?\briver_client_id=(\S+)`)

// riverClientID returns the id River knows a working process by (its
// start-up line "working jobs"), as river_leader and attempted_by name it;
// "" when it logged none.
func (p *proc) riverClientID() string {
	b, _ := os.ReadFile(p.logPath)
	if m := riverClientRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}
