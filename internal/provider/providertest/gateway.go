package providertest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// GatewayOnly fails t for every import of a forbidden package (the cloud's
// SDK, net/http: a path or a prefix of paths) by a non-test Go file of dir
// other than the gateway's files, naming its file:line. A cloud's gateway
// is the one place its API is called (docs/adding-a-cloud.md): a call made
// elsewhere escapes its error translation, its limits and its metrics.
func GatewayOnly(t testing.TB, dir string, gateway, forbidden []string) {
	t.Helper()
	found, err := ImportsOutside(dir, gateway, forbidden)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: only the gateway (%s) may import it", f, strings.Join(gateway, ", "))
	}
}

// ImportsOutside lists, as "file:line imports path", each import of a
// forbidden package by a non-test Go file of dir not named in gateway.
func ImportsOutside(dir string, gateway, forbidden []string) ([]string, error) {
	fset, files, err := Sources(dir, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var found []string
	for name, f := range files {
		if slices.Contains(gateway, filepath.Base(name)) {
			continue
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if slices.ContainsFunc(forbidden, func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") }) {
				pos := fset.Position(im.Pos())
				found = append(found, name+":"+strconv.Itoa(pos.Line)+" imports "+path)
			}
		}
	}
	slices.Sort(found)
	return found, nil
}

// Sources are the non-test Go files of dir, parsed with mode, by path: what
// a test of a package's own code (its gateway, the commands it sends) reads.
func Sources(dir string, mode parser.Mode) (*token.FileSet, map[string]*ast.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if files[name], err = parser.ParseFile(fset, name, nil, mode); err != nil {
			return nil, nil, err
		}
	}
	return fset, files, nil
}

// NotServed are the annotations of an annotation table file (a file of
// internal/annotation) whose doc comment has a "Not served:" line: what
// the cloud's reference says it refuses, for a test that the provider
// refuses exactly those.
func NotServed(file string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if vs.Doc == nil || !strings.Contains("\n"+vs.Doc.Text(), "\nNot served:") || len(vs.Values) != 1 {
				continue
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				name, _ := strconv.Unquote(lit.Value)
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
