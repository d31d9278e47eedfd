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
