package annotation

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namesIn are the values of the constants of type Name in a table file.
func namesIn(t *testing.T, file string) []Name {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var out []Name
	for _, vs := range constSpecs(f) {
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Name" {
			continue
		}
		for _, v := range vs.Values {
			if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				n, _ := strconv.Unquote(lit.Value)
				out = append(out, Name(n))
			}
		}
	}
	slices.Sort(out)
	return out
}

// constSpecs are the specs of f's const declarations.
func constSpecs(f *ast.File) []*ast.ValueSpec {
	var out []*ast.ValueSpec
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				out = append(out, s.(*ast.ValueSpec))
			}
		}
	}
	return out
}

// Every annotation of every cloud's table has a check (what the admission
// policy refuses at apply, or where else it is checked), and every check
// is of an annotation of the table.
func TestEveryAnnotationHasItsCheck(t *testing.T) {
	clouds := CheckedClouds()
	require.NotEmpty(t, clouds) // every registered cloud has its own: internal/clouds' pieces test
	for _, cloud := range clouds {
		checks := ChecksOf(cloud)
		assert.Equal(t, namesIn(t, cloud+".go"), checks.Names(), "%s: the annotations of %s.go and the checks of %s_checks.go", cloud, cloud, cloud)
		for _, n := range checks.Names() {
			c := checks[n]
			switch {
			case c.AtApply() && (len(c.Invalid) == 0 || c.Where != ""):
				t.Errorf("%s: %s is checked at apply: it needs invalid samples and no Where", cloud, n)
			case !c.AtApply() && c.Where == "":
				t.Errorf("%s: %s is not checked at apply: its check says where it is", cloud, n)
			case c.Scope.CEL != "" && (c.Scope.Set == nil && c.Scope.Out == nil):
				t.Errorf("%s: %s's scope names no annotations to put a Service in or out of it", cloud, n)
			}
		}
	}
}
