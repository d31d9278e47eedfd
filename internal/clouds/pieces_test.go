package clouds

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/kit"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// piece is one thing every cloud brings (docs/adding-a-cloud.md): present
// says whether the cloud has it, and what is missing, in words a newcomer can
// act on.
type piece struct {
	name string
	// applies says whether the cloud needs the piece (nil: every cloud).
	applies func(k kit.Kit) bool
	present func(t *testing.T, cloud string) (ok bool, missing string)
}

func emulated(k kit.Kit) bool { return k.Emulate != nil }

// remote: a cloud behind an API (every one with an emulator), not the local one.
var remote = emulated

// pieces is every piece, in the order docs/adding-a-cloud.md lists them.
var pieces = []piece{
	{name: "provider files", present: func(t *testing.T, c string) (bool, string) {
		return files(t, "internal/provider/"+c, "cloud.go", "config.go", "instances.go", "cycle.go", "inventory.go")
	}},
	{name: "provider files of a cloud with an API", applies: remote, present: func(t *testing.T, c string) (bool, string) {
		return files(t, "internal/provider/"+c, "lbspec.go", "doctor.go", "sweep.go")
	}},
	{name: "the cloud's API in a package of its own", applies: remote, present: func(t *testing.T, c string) (bool, string) {
		if ok, _ := matches(t, "internal/provider/"+c+"/*api/client.go"); ok {
			return true, ""
		}
		return false, "internal/provider/" + c + "/<name>api/client.go: the package that alone calls the cloud (see cloudstack/csapi)"
	}},
	{name: "test that only the API package calls the cloud", applies: remote, present: func(t *testing.T, c string) (bool, string) {
		return files(t, "internal/provider/"+c, "gateway_only_test.go")
	}},
	{name: "explanation of what it holds (overcast explain)", present: func(t *testing.T, c string) (bool, string) {
		if !provider.Explains(c) {
			return false, "internal/provider/" + c + "/explain.go with the Cloud's ExplainService and ExplainNode (provider.Explainer)"
		}
		return files(t, "internal/provider/"+c, "explain.go")
	}},
	{name: "annotation table", present: func(t *testing.T, c string) (bool, string) {
		return contains(t, "internal/annotation/"+c+".go", "-out ../../docs/reference/"+c+"-annotations.md")
	}},
	{name: "annotation checks and their admission policy", present: func(t *testing.T, c string) (bool, string) {
		if annotation.ChecksOf(c) == nil {
			return false, "internal/annotation/" + c + "_checks.go registering the checks of every annotation of the table"
		}
		return files(t, "deploy/chart/overcast-ccm/admission", c+".yaml")
	}},
	{name: "annotation reference", present: func(t *testing.T, c string) (bool, string) {
		return files(t, "docs/reference", c+"-annotations.md")
	}},
	{name: "config reference", present: func(t *testing.T, c string) (bool, string) {
		return matches(t, "docs/reference/"+c+"-*.md", c+"-annotations.md")
	}},
	{name: "chart's cloud", present: func(t *testing.T, c string) (bool, string) {
		return files(t, "deploy/chart/overcast-ccm/clouds", c+".yaml")
	}},
	{name: "chart's example values", present: func(t *testing.T, c string) (bool, string) {
		return files(t, "deploy/chart/overcast-ccm/ci", c+"-values.yaml")
	}},
	{name: "deploy directory", present: func(t *testing.T, c string) (bool, string) {
		return files(t, "deploy/"+c, "deployment.yaml")
	}},
	{name: "example config beside the manifest", present: func(t *testing.T, c string) (bool, string) {
		return matches(t, "deploy/"+c+"/*.yaml", "deployment.yaml")
	}},
	{name: "docs page, linked from the README", present: func(t *testing.T, c string) (bool, string) {
		if ok, missing := matches(t, "docs/"+c+"*.md", "docs/"+c+"-emulator.md"); !ok {
			return ok, missing
		}
		return contains(t, "README.md", "docs/"+c)
	}},
	{name: "emulator", applies: emulated, present: func(t *testing.T, c string) (bool, string) {
		return files(t, "internal/emulator/"+c, "emulator.go")
	}},
	{name: "emulator's docs page", applies: emulated, present: func(t *testing.T, c string) (bool, string) {
		return files(t, "docs", c+"-emulator.md")
	}},
	{name: "make run's help", applies: func(k kit.Kit) bool { return k.Dev != nil && k.Name != "local" }, present: func(t *testing.T, c string) (bool, string) {
		return matchesLine(t, "Makefile", `^run:.*CLOUD=.*\b`+c+`\b`)
	}},
	{name: "CI's smoke run of make run", applies: func(k kit.Kit) bool { return k.Dev != nil }, present: func(t *testing.T, c string) (bool, string) {
		// .ci/run loops over the registry's list (overcast clouds --dev), or names the cloud
		listed, _ := matchesLine(t, ".ci/run", `^clouds=\$\(bin/overcast clouds --dev\)$`)
		if loops, _ := matchesLine(t, ".ci/run", `^for cloud in \$clouds; do$`); listed && loops {
			return true, ""
		}
		return matchesLine(t, ".ci/run", `^\s*make run .*CLOUD=`+c+`\b`)
	}},
}

// A cloud is its folders plus one line: each piece of every registered cloud
// is there, and a missing one is named with where it goes.
func TestEveryCloudHasEveryPiece(t *testing.T) {
	names := kit.Names()
	if len(names) < 4 {
		t.Fatalf("kit.Names() = %v: the clouds are not linked", names)
	}
	for _, c := range names {
		k, err := kit.Get(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pieces {
			if p.applies != nil && !p.applies(k) {
				continue
			}
			if ok, missing := p.present(t, c); !ok {
				t.Errorf("%s lacks its %s: %s (docs/adding-a-cloud.md)", c, p.name, missing)
			}
		}
	}
}

// files: every name is a file in dir.
func files(t *testing.T, dir string, names ...string) (bool, string) {
	t.Helper()
	var missing []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(root, dir, n)); err != nil {
			missing = append(missing, filepath.Join(dir, n))
		}
	}
	return len(missing) == 0, strings.Join(missing, ", ")
}

// matches: glob matches a file other than those excepted.
func matches(t *testing.T, glob string, except ...string) (bool, string) {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(root, glob))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		rel, _ := filepath.Rel(root, f)
		if !slices.Contains(except, rel) && !slices.Contains(except, filepath.Base(rel)) {
			return true, ""
		}
	}
	return false, "no file " + glob
}

// contains: file holds s.
func contains(t *testing.T, file, s string) (bool, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil || !strings.Contains(string(data), s) {
		return false, file + " with " + s
	}
	return true, ""
}

// matchesLine: a line of file matches expr.
func matchesLine(t *testing.T, file, expr string) (bool, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err == nil && regexp.MustCompile(`(?m)`+expr).Match(data) {
		return true, ""
	}
	return false, "a line of " + file + " matching " + expr
}
