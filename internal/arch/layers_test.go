package arch

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/overcast-ccm/overcast/"

// layers are the module's packages from the bottom up (docs/architecture.md);
// "*" stands for one path element, one cloud.
var layers = [][]string{
	// foundation: no knowledge of clouds or of the CCM
	{"internal/annotation", "internal/cfgutil", "internal/cfgutil/cfgtest", "internal/cloudapi",
		"internal/deletionguard", "internal/events", "internal/l4proxy", "internal/netaddr",
		"internal/outcome", "internal/providerid", "internal/metricstest", "internal/selfsigned", "internal/snapshot",
		"internal/version", "internal/signature", "internal/emulator/core/coretest", "hack/internal/gendoc", "internal/arch"},
	// mechanisms: the load-balancer cycle, the Service controller, the doctor's checks, the emulators' core
	{"internal/lbcycle", "internal/servicecontroller", "internal/doctor", "internal/emulator/core", "internal/admission", "internal/dashboard"},
	// the provider contract shared by every cloud, each cloud's emulator (and
	// its tests' support, internal/emulator/<cloud>/<x>test) and
	// each cloud's API (internal/provider/<cloud>/<x>api: it knows no provider)
	{"internal/provider", "internal/provider/providertest", "internal/emulator/*", "internal/emulator/*/*test", "internal/provider/*/*api"},
	// each cloud's provider, and what the tools know of each cloud
	{"internal/provider/*", "internal/kit"},
	// the registry of clouds and what works across them
	{"internal/clouds", "internal/sweep", "internal/explain"},
	// programs and their harness
	{"internal/ccm", "internal/devenv", "cmd/*", "bench", "hack/*"},
	// tests
	{"test/framework", "test/*", "test/e2e/*"},
}

// perCloud are the patterns whose "*" is a cloud: one such package never
// imports another cloud's.
var perCloud = []string{"internal/provider/*", "internal/provider/*/*api", "internal/emulator/*", "internal/emulator/*/*test", "test/e2e/*"}

// layerOf is pkg's layer and, for a per-cloud package, its cloud ("" if
// none), or -1.
func layerOf(pkg string) (int, string) {
	for i, l := range layers {
		for _, p := range l {
			if p == pkg {
				return i, ""
			}
		}
	}
	for i, l := range layers {
		for _, p := range l {
			if ok, _ := path.Match(p, pkg); ok && strings.Contains(p, "*") {
				if slices.Contains(perCloud, p) {
					// the cloud is the element the first "*" stands for
					before, _, _ := strings.Cut(p, "*")
					at := strings.Count(before, "/")
					return i, strings.Split(pkg, "/")[at]
				}
				return i, ""
			}
		}
	}
	return -1, ""
}

// imports lists every package of the module (a directory with non-test Go
// files) with the module's packages it imports, not its tests'. It reads the
// files itself, so that the test's cache knows what it read.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := "../.."
	all := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, seen := all[pkg]; !seen {
			all[pkg] = nil
		}
		for _, imp := range f.Imports {
			if dep, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module); ok {
				all[pkg] = append(all[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestEveryPackageImportsOnlyItsLayerAndBelow(t *testing.T) {
	all := imports(t)
	if len(all) < 30 {
		t.Fatalf("go list found %d packages", len(all))
	}
	for pkg, deps := range all {
		layer, cloud := layerOf(pkg)
		if layer < 0 {
			t.Errorf("%s has no layer: add it to the layers of this test and docs/architecture.md", pkg)
			continue
		}
		for _, dep := range deps {
			dl, dcloud := layerOf(dep)
			switch {
			case dl > layer:
				t.Errorf("%s (layer %d) imports %s (layer %d), above it", pkg, layer, dep, dl)
			case cloud != "" && dcloud != "" && cloud != dcloud:
				t.Errorf("%s imports %s: one cloud never imports another's", pkg, dep)
			}
		}
	}
}

// The test's own rules hold on what they must catch.
func TestLayersCatchWhatTheyMust(t *testing.T) {
	cases := []struct {
		pkg   string
		layer int
		cloud string
	}{
		{"internal/outcome", 0, ""},
		{"internal/provider/oci", 3, "oci"},
		{"internal/provider/cloudstack/csapi", 2, "cloudstack"},
		{"internal/provider/providertest", 2, ""},
		{"internal/emulator/openstack", 2, "openstack"},
		{"test/e2e/openstack", 6, "openstack"},
		{"internal/new", -1, ""},
		{"cmd/overcast", 5, ""},
		{"hack/gen-config-docs", 5, ""},
	}
	for _, c := range cases {
		if l, cloud := layerOf(c.pkg); l != c.layer || cloud != c.cloud {
			t.Errorf("layerOf(%s) = %d, %q; want %d, %q", c.pkg, l, cloud, c.layer, c.cloud)
		}
	}
}

// sdksOnlyTestsUse are the clouds' SDKs that drive the emulators in tests
// while the providers have clients of their own: linking one would cost
// every user of overcast-ccm its pages, whatever cloud they run
// (cloudstack-go: 15 MB of resident memory, 12 MB of binary).
var sdksOnlyTestsUse = []string{"github.com/apache/cloudstack-go", "github.com/oracle/oci-go-sdk"}

// overcast-ccm links none of them, even through another package; a failure
// names the package that imports one.
func TestOvercastCCMLinksNoSDKOnlyTestsUse(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./cmd/overcast-ccm")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if !strings.Contains(string(out), module+"internal/provider/oci") {
		t.Fatalf("go list -deps did not list the providers:\n%s", out)
	}
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
		for im := range strings.FieldsSeq(imports) {
			for _, sdk := range sdksOnlyTestsUse {
				if (im == sdk || strings.HasPrefix(im, sdk+"/")) && !strings.HasPrefix(pkg, sdk) {
					t.Errorf("%s imports %s: overcast-ccm would link %s", pkg, im, sdk)
				}
			}
		}
	}
}
