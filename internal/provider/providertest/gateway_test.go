package providertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The check names each import of a forbidden package outside the gateway's
// files, and nothing else: the gateway's own, a test's, another package's.
func TestImportsOutsideNamesEachImportOutsideTheGateway(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"gateway.go":    "package x\n\nimport (\n\t\"net/http\"\n\n\tcs \"example.com/sdk/v2/cs\"\n)\n\nvar _, _ = http.MethodGet, cs.X\n",
		"cycle.go":      "package x\n\nimport (\n\t\"context\"\n\t\"net/http\"\n)\n\nvar _, _ = context.TODO, http.MethodPost\n",
		"nsg.go":        "package x\n\nimport \"example.com/sdk/v2/cs\"\n\nvar _ = cs.X\n",
		"url.go":        "package x\n\nimport \"net/url\"\n\nvar _ url.Values\n",
		"httpx.go":      "package x\n\nimport \"net/http/httptest\"\n\nvar _ = httptest.NewRecorder\n",
		"cycle_test.go": "package x\n\nimport \"net/http\"\n\nvar _ = http.MethodGet\n",
	}
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600))
	}
	found, err := ImportsOutside(dir, []string{"gateway.go"}, []string{"net/http", "example.com/sdk"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		filepath.Join(dir, "cycle.go") + ":5 imports net/http",
		filepath.Join(dir, "httpx.go") + ":3 imports net/http/httptest",
		filepath.Join(dir, "nsg.go") + ":3 imports example.com/sdk/v2/cs",
	}, found)
}

// ReachesOutside names each use, in the files that must stand on their
// own, of what another file of the package declares: a type, a function, a
// method or a field; a use the other way, an import's or a local name's
// is none.
func TestReachesOutsideNamesWhatTheFilesUseOfTheOthers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("package p\n\n"+src), 0o644))
	}
	write("api.go", "import \"strings\"\n\ntype Answer struct{ ID string }\n\n"+
		"func call(s spec) Answer { return Answer{ID: strings.TrimSpace(s.name) + suffix()} }\n")
	write("spec.go", "type spec struct{ name string }\n\nfunc suffix() string { return \"\" }\n\n"+
		"func use(a Answer) string { return a.ID }\n\nfunc (a Answer) short() string { return a.ID[:1] }\n")
	found, err := ReachesOutside(dir, []string{"api.go"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"api.go:7 uses name (declared in spec.go)",
		"api.go:7 uses spec (declared in spec.go)",
		"api.go:7 uses suffix (declared in spec.go)",
		"spec.go:9 declares method short of Answer (declared in api.go)",
	}, found)
	found, err = ReachesOutside(dir, []string{"api.go", "spec.go"})
	require.NoError(t, err)
	assert.Empty(t, found, "the two together stand on their own")
}
