// Package tools only exists so that the module has a package; the binaries are
// declared with `tool` directives in go.mod.
package tools
