// Package gendoc is what the reference-page generators of hack/ share.
package gendoc

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes a generated page to path, creating its directory. A page
// that is already as it should be is not written at all, and a changed one
// replaces the old at once (a temporary file renamed over it): .ci/run runs
// make verify while the unit tests read these pages, and a reader never sees
// one half written.
func WriteFile(path string, page []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, page) {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	_, err = tmp.Write(page)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ModulePath names path relative to the root of its module (the nearest
// go.mod), so that a page is the same whatever directory its generator runs
// in (make generate runs them from each cloud's folder, by go:generate).
func ModulePath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.ToSlash(filepath.Clean(path))
	}
	for root := abs; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			if rel, err := filepath.Rel(root, abs); err == nil {
				return filepath.ToSlash(rel)
			}
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			break
		}
		root = parent
	}
	return filepath.ToSlash(filepath.Clean(path))
}

// Main runs a generator's run with the command line and exits 1 when it
// fails, printing the error after the command's name (not for -h, which
// the flag package has answered).
func Main(name string, run func(args []string, stdout, stderr io.Writer) error) {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, name+":", err)
		}
		os.Exit(1)
	}
}

// Out is the run of a generator whose one flag, -out, names what it
// writes: write is called with it once the command line is checked.
func Out(name, what string, write func(out string) error) func(args []string, stdout, stderr io.Writer) error {
	return func(args []string, _, stderr io.Writer) error {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		out := fs.String("out", "", what)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if *out == "" || fs.NArg() > 0 {
			return fmt.Errorf("usage: %s -out PATH (%s)", name, what)
		}
		return write(*out)
	}
}
