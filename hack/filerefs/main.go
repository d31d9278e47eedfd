// Command filerefs measures how a package's files depend on each other: for
// each package directory given, its files, lines, the references from one
// file to another (distinct pairs: file A names something declared in B),
// how many of those lie on a cycle of files (A reaches B and B reaches A:
// references no order of the files can put all downwards) and its longest
// function. Test files are left out.
//
//	go run ./hack/filerefs internal/provider/cloudstack internal/provider/cloudstack/csapi
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
)

// emptyImporter answers every import with an empty package: only the
// package's own declarations are resolved, which is all a file-to-file
// reference needs.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}

type measure struct {
	files, lines, refs, cyclic, longest int
	longestName                         string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: filerefs DIR...")
		os.Exit(2)
	}
	fmt.Printf("%-45s %5s %6s %5s %6s %s\n", "package", "files", "lines", "refs", "cyclic", "longest function")
	for _, dir := range os.Args[1:] {
		m, err := measureDir(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%-45s %5d %6d %5d %6d %d (%s)\n", dir, m.files, m.lines, m.refs, m.cyclic, m.longest, m.longestName)
	}
}

func measureDir(dir string) (measure, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return measure{}, err
	}
	var files []*ast.File
	var m measure
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			return measure{}, err
		}
		files = append(files, f)
		m.files++
		m.lines += fset.File(f.Pos()).LineCount()
		longestIn(fset, f, &m)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check(dir, fset, files, info)
	edges := map[[2]string]bool{}
	add := func(at token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return
		}
		if obj.Parent() != pkg.Scope() && !isMember(obj) {
			return
		}
		from, to := fset.Position(at).Filename, fset.Position(obj.Pos()).Filename
		if from != to {
			edges[[2]string{from, to}] = true
		}
	}
	for id, obj := range info.Uses {
		add(id.Pos(), obj)
	}
	m.refs = len(edges)
	reach := closure(edges)
	for e := range edges {
		if reach[[2]string{e[1], e[0]}] {
			m.cyclic++
		}
	}
	return m, nil
}

// isMember: a method or a struct field (declared in a type's file).
func isMember(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}

// closure is which file reaches which through the references.
func closure(edges map[[2]string]bool) map[[2]string]bool {
	next := map[string][]string{}
	for e := range edges {
		next[e[0]] = append(next[e[0]], e[1])
	}
	reach := map[[2]string]bool{}
	for from := range next {
		seen := map[string]bool{}
		stack := []string{from}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, to := range next[n] {
				if !seen[to] {
					seen[to] = true
					reach[[2]string{from, to}] = true
					stack = append(stack, to)
				}
			}
		}
	}
	return reach
}

// longestIn notes f's longest function in m (its lines, braces included).
func longestIn(fset *token.FileSet, f *ast.File, m *measure) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		if n > m.longest {
			m.longest, m.longestName = n, filepath.Base(fset.Position(fd.Pos()).Filename)+":"+fd.Name.Name
		}
	}
}
