package providertest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"path/filepath"
	"slices"
)

// ReachesOutside lists, as "file:line uses name (declared in other.go)",
// each use in one of files of a declaration of another non-test file of
// dir (a type, function, variable or constant of its own, or a method or
// field of one), and each method another file declares on a type of
// theirs: what keeps the files from being a package of their own (a
// cloud's API, before its move) with no change but their package clause
// and the names exported. Only the package's own declarations are
// resolved (imports are read as empty packages): what a file reaches in
// the package is all it needs.
func ReachesOutside(dir string, files []string) ([]string, error) {
	fset, parsed, err := Sources(dir, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var all []*ast.File
	for _, name := range slices.Sorted(maps.Keys(parsed)) {
		all = append(all, parsed[name])
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check(dir, fset, all, info)
	var found []string
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() || !ownDeclaration(pkg, obj) {
			continue
		}
		at, decl := fset.Position(id.Pos()), fset.Position(obj.Pos())
		if slices.Contains(files, filepath.Base(at.Filename)) && !slices.Contains(files, filepath.Base(decl.Filename)) {
			found = append(found, fmt.Sprintf("%s:%d uses %s (declared in %s)", filepath.Base(at.Filename), at.Line, obj.Name(), filepath.Base(decl.Filename)))
		}
	}
	found = append(found, methodsOutside(fset, pkg, info, parsed, files)...)
	slices.Sort(found)
	return slices.Compact(found), nil
}

// methodsOutside are the methods declared outside files on a type declared
// in them: a package cannot declare methods on another's types.
func methodsOutside(fset *token.FileSet, pkg *types.Package, info *types.Info, parsed map[string]*ast.File, files []string) []string {
	var found []string
	for name, f := range parsed {
		if slices.Contains(files, filepath.Base(name)) {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			obj, ok := info.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			recv := obj.Type().(*types.Signature).Recv().Type()
			if p, ok := recv.(*types.Pointer); ok {
				recv = p.Elem()
			}
			named, ok := recv.(*types.Named)
			if !ok || named.Obj().Pkg() != pkg {
				continue
			}
			decl := fset.Position(named.Obj().Pos())
			if slices.Contains(files, filepath.Base(decl.Filename)) {
				at := fset.Position(fd.Pos())
				found = append(found, fmt.Sprintf("%s:%d declares method %s of %s (declared in %s)", filepath.Base(at.Filename), at.Line,
					fd.Name.Name, named.Obj().Name(), filepath.Base(decl.Filename)))
			}
		}
	}
	return found
}

// ownDeclaration: obj is declared at the package's level, or is a method
// or a field (declared with its type).
func ownDeclaration(pkg *types.Package, obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil || o.Parent() == pkg.Scope()
	case *types.Var:
		return o.IsField() || o.Parent() == pkg.Scope()
	}
	return obj.Parent() == pkg.Scope()
}

// emptyImporter answers every import with an empty package.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}
