package annotation

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svcWith(kv ...string) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Annotations[kv[i]] = kv[i+1]
	}
	return s
}

func TestGetters(t *testing.T) {
	const n Name = "example.io/x"
	tests := []struct {
		name    string
		svc     *v1.Service
		get     func(*v1.Service) (any, error)
		want    any
		wantErr error
		invalid bool
	}{
		{"an absent annotation is ErrNotSet", svcWith(), func(s *v1.Service) (any, error) { return n.Bool(s) }, false, ErrNotSet, false},
		{"a nil service is ErrNotSet", nil, func(s *v1.Service) (any, error) { return n.String(s) }, "", ErrNotSet, false},
		{"true parses in any case", svcWith(string(n), "TRUE"), func(s *v1.Service) (any, error) { return n.Bool(s) }, true, nil, false},
		{"a word that is not a bool is invalid", svcWith(string(n), "yes"), func(s *v1.Service) (any, error) { return n.Bool(s) }, false, nil, true},
		{"a duration in range parses", svcWith(string(n), "30s"), func(s *v1.Service) (any, error) { return n.Duration(s, time.Second, time.Minute) }, 30 * time.Second, nil, false},
		{"a duration out of range is invalid", svcWith(string(n), "2h"), func(s *v1.Service) (any, error) { return n.Duration(s, time.Second, time.Minute) }, time.Duration(0), nil, true},
		{"an integer in range parses", svcWith(string(n), " 42 "), func(s *v1.Service) (any, error) { return n.Int(s, 1, 100) }, 42, nil, false},
		{"a negative integer below range is invalid", svcWith(string(n), "-1"), func(s *v1.Service) (any, error) { return n.Int(s, 1, 100) }, 0, nil, true},
		{"an empty string is invalid where one is required", svcWith(string(n), "  "), func(s *v1.Service) (any, error) { return n.NonEmptyString(s) }, "", nil, true},
		{"an IP with a zone is invalid", svcWith(string(n), "fe80::1%eth0"), func(s *v1.Service) (any, error) { v, err := n.IP(s); return v.String(), err }, "invalid IP", nil, true},
		{"an IPv4 address parses", svcWith(string(n), "127.0.200.7"), func(s *v1.Service) (any, error) { v, err := n.IP(s); return v.String(), err }, "127.0.200.7", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get(tt.svc)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			case tt.invalid:
				var inv *InvalidError
				require.ErrorAs(t, err, &inv)
				assert.Equal(t, n, inv.Name)
				assert.Contains(t, err.Error(), string(n), "the error names the annotation")
				assert.Contains(t, err.Error(), "accepted values are", "the error lists what is accepted")
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

// The parsers never panic and either accept a value or explain it with an InvalidError.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{"", "true", "False", "30s", "-1s", "1e9h", "42", "99999999999999999999", "127.0.0.1", "::1", "fe80::1%lo", "1.2.3.4.5", "\x00"} {
		f.Add(s)
	}
	const n Name = "fuzz.io/x"
	f.Fuzz(func(t *testing.T, v string) {
		check := func(err error) {
			if err == nil {
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("error %v is not an InvalidError", err)
			}
		}
		_, err := ParseBool(n, v)
		check(err)
		_, err = ParseDuration(n, v, time.Second, time.Hour)
		check(err)
		_, err = ParseInt(n, v, 0, 65535)
		check(err)
		a, err := ParseIP(n, v)
		check(err)
		if err == nil && !a.IsValid() {
			t.Fatalf("ParseIP(%q) accepted an invalid address", v)
		}
	})
}

// Every annotation documented as written by the CCM is in Recorded, so that
// writing it does not start another sync of the Service.
func TestWrittenByTheCCMAreRecorded(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var written []Name
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, v := range constSpecs(file) {
			if v.Doc == nil || !strings.Contains(strings.Join(strings.Fields(v.Doc.Text()), " "), "written by the CCM") {
				continue
			}
			lit, ok := v.Values[0].(*ast.BasicLit)
			require.True(t, ok, v.Names[0].Name)
			written = append(written, Name(strings.Trim(lit.Value, `"`)))
		}
	}
	require.NotEmpty(t, written)
	assert.ElementsMatch(t, written, Recorded)
}

// A cloud's table file (the one with the go:generate line of its reference)
// holds its table and nothing else: no parser, no type, no getter. Value types
// and their parsers go in <cloud>_values.go, generic getters in getters.go,
// so that a new cloud's table does not reach into another cloud's file.
func TestACloudsFileHoldsOnlyItsTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	tables := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.HasSuffix(f, "_test.go") || !strings.Contains(string(src), "//go:generate go run ../../hack/gen-annotation-docs") {
			continue
		}
		tables++
		file, err := parser.ParseFile(fset, f, src, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name != "init" || d.Recv != nil {
					t.Errorf("%s: func %s belongs in getters.go or %s_values.go", fset.Position(d.Pos()), d.Name.Name, strings.TrimSuffix(f, ".go"))
				}
			case *ast.GenDecl:
				if d.Tok == token.TYPE {
					t.Errorf("%s: a type belongs in %s_values.go", fset.Position(d.Pos()), strings.TrimSuffix(f, ".go"))
				}
			}
		}
	}
	assert.GreaterOrEqual(t, tables, 4, "every cloud's table file")
}
