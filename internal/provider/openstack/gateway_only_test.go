package openstack

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// sdk is the import path of every package of the SDK.
const sdk = "github.com/gophercloud"

// gatewayFiles are the gateway's: the one place the SDK and HTTP live
// (docs/adding-a-cloud.md).
var gatewayFiles = []string{
	"gateway.go", "gateway_compute.go", "gateway_errors.go", "gateway_keymanager.go",
	"gateway_lists.go", "gateway_loadbalancer.go", "gateway_network.go", "gateway_session.go", "gateway_settings.go", "gateway_types.go",
}

// isGatewayFile says whether a file of the package may call gophercloud.
func isGatewayFile(name string) bool { return slices.Contains(gatewayFiles, name) }

// The gateway's files reach nothing else of the provider but the [Global]
// section its session reads (config.go): they are ready to be a package of
// their own, but for [Global], which is to be passed in as its settings
// (issue 45; CloudStack's csapi and OCI's ociapi went so).
func TestTheGatewaysFilesReachNothingButGlobal(t *testing.T) {
	found, err := providertest.ReachesOutside(".", gatewayFiles)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if !strings.HasPrefix(f, "gateway_session.go:") || !strings.HasSuffix(f, "(declared in config.go)") {
			t.Errorf("%s: the gateway's files stand on their own but for [Global]: move it among them, or pass it in", f)
		}
	}
}

// Only the gateway imports gophercloud or net/http: no other file reads an
// HTTP status or names one of the SDK's types (they have types of their own,
// which the gateway turns into the SDK's).
func TestOnlyTheGatewayImportsGophercloudOrNetHTTP(t *testing.T) {
	providertest.GatewayOnly(t, ".", gatewayFiles, []string{sdk, "net/http"})
}

// TestOnlyTheGatewayCallsGophercloud type-checks the package's non-test files
// and fails, naming file:line, on any use of a function or method that
// gophercloud declares (a call, or one passed as a value: an Extract… to a
// pager) outside the gateway's files, however it is reached (a method of a
// value some gateway method returned).
func TestOnlyTheGatewayCallsGophercloud(t *testing.T) {
	fset := token.NewFileSet()
	files := parsePackage(t, fset, ".")
	for _, v := range sdkCalls(t, fset, files, exportData(t)) {
		t.Errorf("%s: gophercloud is called outside the gateway: make it a method of the gateway (gateway.go)", v)
	}
}

// parsePackage parses the directory's non-test files.
func parsePackage(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// listFlags are the build flags of the test binary that change export data
// (-race, gateway_only_race_test.go): go list then finds what building it built.
var listFlags []string

// exportData maps every dependency of the package to its export data file, as
// the go command built them (one `go list`, from the build cache).
func exportData(t *testing.T) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}"}, listFlags...)
	out, err := exec.Command("go", append(args, ".")...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "="); ok && file != "" {
			files[path] = file
		}
	}
	return files
}

// sdkCalls type-checks files and lists, as file:line and function, each use
// of a gophercloud function or method outside the gateway's files.
func sdkCalls(t *testing.T, fset *token.FileSet, files []*ast.File, export map[string]string) []string {
	t.Helper()
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := export[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	if _, err := conf.Check("openstack", fset, files, info); err != nil {
		t.Fatalf("type-checking the package: %v", err)
	}
	var out []string
	for id, obj := range info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil || !strings.HasPrefix(fn.Pkg().Path(), sdk+"/") {
			continue
		}
		p := fset.Position(id.Pos())
		if !isGatewayFile(filepath.Base(p.Filename)) {
			out = append(out, fmt.Sprintf("%s:%d: %s", filepath.Base(p.Filename), p.Line, fn.FullName()))
		}
	}
	sort.Strings(out)
	return out
}
