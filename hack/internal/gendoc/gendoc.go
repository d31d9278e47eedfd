// Package gendoc is what the reference-page generators of hack/ share.
package gendoc

import (
	"os"
	"path/filepath"
)

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
