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

func TestAYAMLConfigIsKeyedByPathAndNested(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.go")
	require.NoError(t, os.WriteFile(file, []byte("package c\n\ntype Config struct {\n\t// The name.\n\tName string `json:\"name\"`\n\tLB *LB `json:\"loadBalancer\"`\n\tskip int\n}\n\n// LB is the load balancers.\ntype LB struct {\n\t// The subnet.\n\t// Default: none\n\tSubnet string `json:\"subnet1,omitempty\"`\n\t// Lists.\n\tLists map[string]string `json:\"securityLists\"`\n\tRate float32 `json:\"rate\"`\n}\n"), 0o600))
	sections, err := ParseYAML(file, "Config")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "loadBalancer.rate has no doc comment")
	require.Len(t, sections, 2)
	assert.Equal(t, []Key{{Name: "name", Type: "string", Description: "The name."}}, sections[0].Keys)
	assert.Equal(t, "loadBalancer", sections[1].Name)
	assert.Equal(t, "LB is the load balancers.", sections[1].Description)
	assert.Equal(t, []Key{
		{Name: "loadBalancer.subnet1", Type: "string", Default: "none", Description: "The subnet."},
		{Name: "loadBalancer.securityLists", Type: "mapping", Description: "Lists."},
	}, sections[1].Keys)
	page := string(Render("t", file, sections))
	assert.Contains(t, page, "## Top level")
	assert.Contains(t, page, "## `loadBalancer`")
}
