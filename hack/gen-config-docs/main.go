// Command gen-config-docs writes the reference page of an INI cloud config from
// the Go structs that decode it (internal/cfgutil.DecodeINI): every field of the
// root struct with an `ini` tag is a section, every field of a section's struct
// with an `ini` tag is a key, described by its doc comment. A "Default: ..." line
// of the comment becomes the Default column. A key without a doc comment is an
// error naming it, so that an undocumented key cannot be added.
//
//	go run ./hack/gen-config-docs -file internal/provider/openstack/config.go \
//	    -root Config -title "OpenStack cloud.conf" -out docs/reference/openstack-cloud-conf.md
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/overcast-ccm/overcast/hack/internal/gendoc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gen-config-docs:", err)
		}
		os.Exit(1)
	}
}

// Key is one row of the page.
type Key struct {
	Name, Type, Default, Description string
}

// Section is one INI section.
type Section struct {
	Name, Description string
	Named             bool // [Name "x"] sections, many of them
	Keys              []Key
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen-config-docs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "", "Go file with the config structs")
	root := fs.String("root", "Config", "the root struct")
	title := fs.String("title", "", "what the page documents")
	out := fs.String("out", "", "output file (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || *title == "" {
		return errors.New("-file and -title are required")
	}
	sections, err := Parse(*file, *root)
	if err != nil {
		return err
	}
	page := Render(*title, gendoc.ModulePath(*file), sections)
	if *out == "" {
		_, err := stdout.Write(page)
		return err
	}
	return os.WriteFile(*out, page, 0o644)
}

// Parse reads the sections of root from file.
func Parse(file, root string) ([]Section, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	structs := map[string]*ast.StructType{}
	docs := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			if st, ok := ts.Type.(*ast.StructType); ok {
				structs[ts.Name.Name] = st
				docs[ts.Name.Name] = strings.TrimSpace(gd.Doc.Text())
			}
		}
	}
	rs, ok := structs[root]
	if !ok {
		return nil, fmt.Errorf("no struct %s in %s", root, file)
	}
	var sections []Section
	var errs []error
	for _, field := range rs.Fields.List {
		name := iniTag(field)
		if name == "" {
			continue
		}
		typeName, named := structName(field.Type)
		st, ok := structs[typeName]
		if !ok {
			errs = append(errs, fmt.Errorf("section [%s]: struct %s is not in %s", name, typeName, file))
			continue
		}
		sec := Section{Name: name, Named: named, Description: firstParagraph(docs[typeName])}
		for _, kf := range st.Fields.List {
			key := iniTag(kf)
			if key == "" {
				continue
			}
			doc := strings.TrimSpace(kf.Doc.Text())
			if doc == "" {
				errs = append(errs, fmt.Errorf("[%s] %s has no doc comment", name, key))
				continue
			}
			k := Key{Name: key, Type: typeOf(kf.Type)}
			var desc []string
			for _, line := range strings.Split(doc, "\n") {
				if v, ok := strings.CutPrefix(line, "Default: "); ok {
					k.Default = v
					continue
				}
				desc = append(desc, line)
			}
			k.Description = strings.Join(desc, " ")
			sec.Keys = append(sec.Keys, k)
		}
		sections = append(sections, sec)
	}
	return sections, errors.Join(errs...)
}

func iniTag(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	return reflect.StructTag(tag).Get("ini")
}

// structName is the struct a section field decodes into; a map of pointers to it
// is a named section.
func structName(e ast.Expr) (string, bool) {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name, false
	case *ast.StarExpr:
		return structName(t.X)
	case *ast.MapType:
		n, _ := structName(t.Value)
		return n, true
	}
	return "", false
}

func typeOf(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		switch t.Name {
		case "bool":
			return "boolean"
		case "int", "uint":
			return "integer"
		}
		return t.Name
	case *ast.StarExpr:
		return typeOf(t.X)
	case *ast.ArrayType:
		return typeOf(t.Elt) + " (repeatable)"
	case *ast.SelectorExpr:
		if t.Sel.Name == "Duration" {
			return "duration"
		}
		return t.Sel.Name
	}
	return "?"
}

func firstParagraph(s string) string {
	p, _, _ := strings.Cut(s, "\n\n")
	return strings.Join(strings.Fields(p), " ")
}

// Render is the Markdown page.
func Render(title, file string, sections []Section) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s reference\n\n", title)
	fmt.Fprintf(&b, "<!-- Generated by hack/gen-config-docs from %s; do not edit. Run `make generate`. -->\n\n", file)
	b.WriteString("Every key of every section. An unknown section or key, or a value of the wrong type, is an error that names its line; every problem is reported at once and the CCM exits with status 2.\n\n")
	for _, s := range sections {
		head := "[" + s.Name + "]"
		if s.Named {
			head = "[" + s.Name + ` "name"]`
		}
		fmt.Fprintf(&b, "## %s\n\n", head)
		if s.Description != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Description)
		}
		b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
		for _, k := range s.Keys {
			def := k.Default
			if def == "" {
				def = "—"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Name, k.Type, cell(def), cell(k.Description))
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
