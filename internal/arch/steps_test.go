package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// embedded names each struct type called name in the non-test Go files of
// dir that embeds a field (its type, as written).
func embedded(t *testing.T, dir, name string) (found bool, embeds []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != name {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			found = true
			for _, fl := range st.Fields.List {
				if len(fl.Names) == 0 {
					embeds = append(embeds, typeText(fl.Type))
				}
			}
			return false
		})
	}
	return found, embeds
}

// typeText is a field's type as written, for a message.
func typeText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + typeText(e.X)
	case *ast.SelectorExpr:
		return typeText(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// Every cloud's load-balancer work is a steps struct with each field it
// reads named: none embedded, so that a step reaches only what it is given
// (never all of Cloud: the config, the Nodes' code).
func TestEveryCloudsStepsEmbedNothing(t *testing.T) {
	dirs, err := filepath.Glob("../provider/*/cycle.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 4 {
		t.Fatalf("found the steps of %d clouds (%v): the walk is broken", len(dirs), dirs)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		found, embeds := embedded(t, dir, "steps")
		if !found {
			t.Errorf("%s: no struct type steps (the load-balancer work, docs/adding-a-cloud.md)", dir)
		}
		for _, e := range embeds {
			t.Errorf("%s: steps embeds %s: name the fields the steps read instead", dir, e)
		}
	}
}

// The check sees an embedded field, by pointer or by value, and no named one.
func TestTheEmbeddedFieldCheckCatchesWhatItMust(t *testing.T) {
	dir := t.TempDir()
	src := "package a\n\ntype Cloud struct{}\ntype Base struct{}\n\ntype steps struct {\n\t*Cloud\n\tBase\n\tapi int\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	found, embeds := embedded(t, dir, "steps")
	if !found || len(embeds) != 2 || embeds[0] != "*Cloud" || embeds[1] != "Base" {
		t.Errorf("embedded = %v, %v; want true, [*Cloud Base]", found, embeds)
	}
}
