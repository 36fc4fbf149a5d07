package soak

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// release is another release of followfeed, built from this repository's
// history.
type release struct {
	ref    string // as asked (a commit, tag or branch)
	commit string // the full commit hash
	tree   string // its source tree (git archive), e.g. for its migrations
	exe    string // its followfeed binary
	took   time.Duration
}

// repoRoot finds the git work tree the soak runs from: the current
// directory's (make soak runs at the repository root), else the one
// holding the followfeed binary (bin/followfeed).
func repoRoot(ctx context.Context, e *env) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", errors.New("git is not installed: the scenario builds the previous release from the repository's history")
	}
	var errs []string
	for _, dir := range []string{".", filepath.Join(filepath.Dir(e.opts.Exe), "..")} {
		out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel").CombinedOutput()
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
		errs = append(errs, fmt.Sprintf("%s: %s", dir, oneLine(string(out))))
	}
	return "", fmt.Errorf("not inside the followfeed git repository (%s): run the soak from the repository", strings.Join(errs, "; "))
}

// buildRelease builds the followfeed binary of ref (a commit of the
// repository at root) into the work directory: `git archive` of the
// commit, extracted, then `go build ./cmd/followfeed` in it (Go's build and
// module caches make a second build quick).
func buildRelease(ctx context.Context, e *env, root, ref string) (*release, error) {
	start := time.Now()
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
	if err != nil {
		return nil, fmt.Errorf("the previous release %q is not a commit of the repository at %s (a shallow clone? `git fetch --unshallow`, or pass --previous-release)", ref, root)
	}
	r := &release{ref: ref, commit: strings.TrimSpace(string(out))}
	r.tree = filepath.Join(e.workDir, "release-"+r.commit[:12])
	if err := os.MkdirAll(r.tree, 0o755); err != nil {
		return nil, err
	}
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", r.commit)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Start(); err != nil {
		return nil, fmt.Errorf("git archive %s: %w", r.commit, err)
	}
	extractErr := untar(pipe, r.tree)
	_, _ = io.Copy(io.Discard, pipe)
	if err := archive.Wait(); err != nil {
		return nil, fmt.Errorf("git archive %s: %v: %s", r.commit, err, oneLine(stderr.String()))
	}
	if extractErr != nil {
		return nil, fmt.Errorf("extracting release %s: %w", r.commit, extractErr)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, errors.New("the go command is not on PATH: the scenario builds the previous release from source")
	}
	r.exe = filepath.Join(r.tree, "bin", "followfeed")
	build := exec.CommandContext(ctx, goBin, "build", "-o", r.exe, "./cmd/followfeed")
	build.Dir = r.tree
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building release %s: %v: %s", r.commit[:12], err, oneLine(lastBytes(string(out), 600)))
	}
	r.took = time.Since(start)
	return r, nil
}

// untar extracts the regular files and directories of a tar stream under
// dir (git archive writes nothing else that a build needs).
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if name == "." || strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			continue
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
