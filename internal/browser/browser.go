// Package browser starts a headless Chromium for tests that drive a page with
// chromedp: one fresh browser per test, a record of the page's console errors,
// and screenshots written under the repository's screenshots directory.
//
// The browser is found the way scripts/browser-ensure.sh finds it
// (CHROMIUM_PATH, then chromium, chromium-browser or google-chrome on PATH).
// This package never installs one; without a browser the test is skipped.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Timeout bounds the life of the browser of one test. A test deadline that is
// nearer (go test -timeout) shortens it.
const Timeout = 60 * time.Second

// candidates are the names looked up on PATH, in the order of
// scripts/browser-ensure.sh.
var candidates = []string{"chromium", "chromium-browser", "google-chrome"}

// Browser is one headless Chromium started by Start for one test. Its methods
// are safe for concurrent use.
type Browser struct {
	// Path is the browser binary that runs.
	Path string

	mu     sync.Mutex
	errors []string
}

// Start returns a chromedp context for one test with a fresh headless Chromium
// (its own temporary profile), cancelled at t.Cleanup. The browser runs with
// --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
// --disable-background-networking --disable-component-update --disable-sync,
// which this machine's closed network needs, and lives at most Timeout.
//
// It finds the browser like scripts/browser-ensure.sh does (CHROMIUM_PATH, then
// PATH) but does not install anything; when there is none it calls t.Skip,
// except under CI=true, where a missing browser fails the test: CI must not
// be green without the browser tests.
//
// It records console messages of level error and warning and uncaught
// exceptions (and the browser's own error and warning log entries other than
// network ones, such as Content-Security-Policy violations) for ConsoleErrors.
func Start(t testing.TB) (ctx context.Context, b *Browser) {
	t.Helper()
	path, err := findBrowser()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Chromium under CI=true (the browser tests must run): %v", err)
		}
		t.Skipf("no Chromium: run scripts/browser-ensure.sh (make test does): %v", err)
	}
	b = &Browser{Path: path}

	timeout := Timeout
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dt.Deadline(); ok {
			// Leave the test a little time to report and clean up.
			if left := time.Until(d) - 5*time.Second; left > 0 && left < timeout {
				timeout = left
			}
		}
	}
	base, cancelBase := context.WithTimeout(context.Background(), timeout)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 800),
		// No UserDataDir: the allocator makes a fresh temporary profile for
		// each browser and removes it when the browser stops.
	)
	// chromedp reports protocol errors from its own goroutines; t.Logf must
	// not run after the test ends, so stop forwarding at cleanup.
	var logMu sync.Mutex
	ended := false
	errorf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		if !ended {
			t.Logf("chromedp: "+format, args...)
		}
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx,
		chromedp.WithListener(b.record),
		chromedp.WithErrorf(errorf),
	)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		cancelBase()
		logMu.Lock()
		ended = true
		logMu.Unlock()
	})
	// Start the browser now, so that a browser that cannot start fails here
	// and not in the first action of the test.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx, b
}

// findBrowser returns CHROMIUM_PATH when it is an executable file, else the
// first candidate on PATH.
func findBrowser() (string, error) {
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	for _, name := range candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("CHROMIUM_PATH is unset or not executable and none of %s is on PATH", strings.Join(candidates, ", "))
}

// record is the chromedp listener; it runs on chromedp's user goroutine and
// must return fast.
func (b *Browser) record(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeWarning &&
			e.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		msg = fmt.Sprintf("console.%s: %s%s", e.Type, argsText(e.Args), where(e.StackTrace))
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		if d == nil {
			return
		}
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			desc, _, _ := strings.Cut(d.Exception.Description, "\n")
			text += " " + desc
		}
		msg = fmt.Sprintf("exception: %s (%s:%d:%d)", text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
	case *log.EventEntryAdded:
		en := e.Entry
		// A failed request (an HTTP error the page handles, a missing
		// favicon) is the network's business, not the page's.
		if en == nil || en.Source == log.EntrySourceNetwork ||
			(en.Level != log.EntryLevelError && en.Level != log.EntryLevelWarning) {
			return
		}
		msg = fmt.Sprintf("log %s/%s: %s", en.Source, en.Level, en.Text)
		if en.URL != "" {
			msg += fmt.Sprintf(" (%s:%d)", en.URL, en.LineNumber+1)
		}
	default:
		return
	}
	b.mu.Lock()
	b.errors = append(b.errors, msg)
	b.mu.Unlock()
}

// argsText renders the arguments of a console call roughly as DevTools does.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case a == nil:
			parts = append(parts, "null")
		case a.Type == runtime.RemoteObjectTypeString && len(a.Value) > 0:
			var s string
			if json.Unmarshal(a.Value, &s) != nil {
				s = string(a.Value)
			}
			parts = append(parts, s)
		case a.Description != "":
			parts = append(parts, a.Description)
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		case a.UnserializableValue != "":
			parts = append(parts, string(a.UnserializableValue))
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// where names the top frame of a stack, or nothing.
func where(st *runtime.StackTrace) string {
	if st == nil || len(st.CallFrames) == 0 {
		return ""
	}
	f := st.CallFrames[0]
	return fmt.Sprintf(" (%s:%d:%d)", f.URL, f.LineNumber+1, f.ColumnNumber+1)
}

// ConsoleErrors returns the console errors and warnings and the uncaught
// exceptions recorded so far, oldest first.
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Screenshot writes a PNG of the current page (the full page, beyond the
// viewport) to dir/name.png, where dir is $SCREENSHOT_DIR or
// <repo root>/screenshots (created when missing), and returns the path.
func (b *Browser) Screenshot(ctx context.Context, t testing.TB, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	return writeShot(t, name, png)
}

// ElementScreenshot writes a PNG of the first element that matches the CSS
// selector, as Screenshot does for the page, and returns the path.
func (b *Browser) ElementScreenshot(ctx context.Context, t testing.TB, name, selector string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(selector)))
	if err != nil {
		t.Fatalf("screenshot %s of %s: %v", name, selector, err)
	}
	return writeShot(t, name, png)
}

// writeShot writes png as name.png into the screenshot directory.
func writeShot(t testing.TB, name string, png []byte) string {
	t.Helper()
	dir, err := ScreenshotDir()
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	clean := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '-'
		}
		return r
	}, name)
	if clean == "" || clean == "." || clean == ".." {
		t.Fatalf("screenshot: bad name %q", name)
	}
	path := filepath.Join(dir, clean+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	t.Logf("screenshot %s", path)
	return path
}

// ScreenshotDir returns, after creating it, the directory screenshots go to:
// $SCREENSHOT_DIR, or the screenshots directory at the repository root.
func ScreenshotDir() (string, error) {
	dir := os.Getenv("SCREENSHOT_DIR")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// RepoRoot returns the directory holding go.mod, found by walking up from the
// working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
