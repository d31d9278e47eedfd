package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheCommittedOpenStackReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	file := filepath.Join("internal", "provider", "openstack", "config.go")
	sections, err := Parse(filepath.Join(root, file), "Config")
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(root, "docs", "reference", "openstack-cloud-conf.md"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(Render("OpenStack cloud.conf", file, sections)), "run `make generate`")
}

func TestAnUndocumentedKeyIsAnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.go")
	require.NoError(t, os.WriteFile(file, []byte("package c\n\ntype Config struct {\n\tA A `ini:\"A\"`\n}\n\n// A is a section.\ntype A struct {\n\t// Documented.\n\t// Default: 1\n\tX int `ini:\"x\"`\n\tY string `ini:\"y\"`\n}\n"), 0o600))
	sections, err := Parse(file, "Config")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "[A] y has no doc comment")
	require.Len(t, sections, 1)
	assert.Equal(t, []Key{{Name: "x", Type: "integer", Default: "1", Description: "Documented."}}, sections[0].Keys)
	assert.True(t, strings.Contains(string(Render("t", file, sections)), "| `x` | integer | 1 | Documented. |"))
}
