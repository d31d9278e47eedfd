package cfgutil

import (
	"fmt"
	"io"
	"os"
)

// NoConfigError is the error of no config at all: Need says what the cloud
// needs ("the openstack cloud needs a cloud.conf").
type NoConfigError struct{ Need string }

func (e *NoConfigError) Error() string { return "no --cloud-config given: " + e.Need }

// Read reads a cloud's whole config from r and decodes it with decode
// (DecodeINI, DecodeYAML) into a new C, every problem of its form reported at
// once; what could be decoded is returned even then. need says what the
// cloud needs, for the *NoConfigError of no config at all (r nil). path is the file the config came from ("" for a
// stream), from which a cloud that watches its config reads it again
// (Reread).
func Read[C any](r io.Reader, need string, decode func([]byte, any) error) (c C, path string, err error) {
	if r == nil {
		return c, "", &NoConfigError{Need: need}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return c, "", fmt.Errorf("reading the cloud config: %w", err)
	}
	if f, ok := r.(interface{ Name() string }); ok {
		path = f.Name()
	}
	return c, path, decode(data, &c)
}

// Reread reads the config at path again with read. A config that came from a
// stream (no path) cannot change: it is returned as it was.
func Reread[C any](path string, was C, read func(io.Reader) (C, error)) (C, error) {
	if path == "" {
		return was, nil
	}
	f, err := os.Open(path)
	if err != nil {
		var zero C
		return zero, err
	}
	defer f.Close()
	return read(f)
}
