// Command gen-config-docs writes the reference page of a cloud config from the Go
// structs that decode it. An INI config (internal/cfgutil.DecodeINI): every field
// of the root struct with an `ini` tag is a section, every field of a section's
// struct with an `ini` tag is a key. A YAML config (-format yaml,
// internal/cfgutil.DecodeYAML): every field with a `json` tag is a key, named by
// its path (loadBalancer.subnet1), a field of a struct of the file a section of
// its own. A key is described by its doc comment; a "Default: ..." line of the
// comment becomes the Default column. A key without a doc comment is an error
// naming it, so that an undocumented key cannot be added.
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
	"reflect"
	"strconv"
	"strings"

	"github.com/overcast-ccm/overcast/hack/internal/gendoc"
)

func main() { gendoc.Main("gen-config-docs", run) }

// Key is one row of the page.
type Key struct {
	Name, Type, Default, Description string
}

// Section is one INI section, or the keys of one YAML mapping.
type Section struct {
	Name, Description string
	Named             bool // [Name "x"] sections, many of them
	YAML              bool // a YAML mapping: Name is its path ("" at the top)
	Keys              []Key
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen-config-docs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "", "Go file with the config structs")
	root := fs.String("root", "Config", "the root struct")
	title := fs.String("title", "", "what the page documents")
	format := fs.String("format", "ini", "the config's format: ini or yaml")
	out := fs.String("out", "", "output file (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || *title == "" {
		return errors.New("-file and -title are required")
	}
	parse := Parse
	if *format == "yaml" {
		parse = ParseYAML
	}
	sections, err := parse(*file, *root)
	if err != nil {
		return err
	}
	page := Render(*title, gendoc.ModulePath(*file), sections)
	if *out == "" {
		_, err := stdout.Write(page)
		return err
	}
	return gendoc.WriteFile(*out, page)
}

// structsOf are the struct types of file, with their doc comments.
func structsOf(file string) (map[string]*ast.StructType, map[string]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return nil, nil, err
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
				doc := gd.Doc
				if ts.Doc != nil {
					doc = ts.Doc
				}
				docs[ts.Name.Name] = strings.TrimSpace(doc.Text())
			}
		}
	}
	return structs, docs, nil
}

// key is the row of a field with its doc comment.
func key(name string, f *ast.Field) (Key, bool) {
	doc := strings.TrimSpace(f.Doc.Text())
	if doc == "" {
		return Key{}, false
	}
	k := Key{Name: name, Type: typeOf(f.Type)}
	var desc []string
	for _, line := range strings.Split(doc, "\n") {
		if v, ok := strings.CutPrefix(line, "Default: "); ok {
			k.Default = v
			continue
		}
		desc = append(desc, line)
	}
	k.Description = strings.Join(desc, " ")
	return k, true
}

// ParseYAML reads the keys of root from file, a section for each mapping.
func ParseYAML(file, root string) ([]Section, error) {
	structs, docs, err := structsOf(file)
	if err != nil {
		return nil, err
	}
	if _, ok := structs[root]; !ok {
		return nil, fmt.Errorf("no struct %s in %s", root, file)
	}
	var sections []Section
	var errs []error
	var walk func(path, typeName string)
	walk = func(path, typeName string) {
		sec := Section{Name: path, YAML: true}
		if path != "" {
			sec.Description = firstParagraph(docs[typeName])
		}
		var nested [][2]string
		for _, f := range structs[typeName].Fields.List {
			name := tagOf(f, "json")
			if name == "" || name == "-" {
				continue
			}
			full := strings.TrimPrefix(path+"."+name, ".")
			if n, named := structName(f.Type); !named && structs[n] != nil {
				nested = append(nested, [2]string{full, n})
				continue
			}
			k, ok := key(full, f)
			if !ok {
				errs = append(errs, fmt.Errorf("%s has no doc comment", full))
				continue
			}
			sec.Keys = append(sec.Keys, k)
		}
		if len(sec.Keys) > 0 {
			sections = append(sections, sec)
		}
		for _, n := range nested {
			walk(n[0], n[1])
		}
	}
	walk("", root)
	return sections, errors.Join(errs...)
}

// Parse reads the sections of root from file.
func Parse(file, root string) ([]Section, error) {
	structs, docs, err := structsOf(file)
	if err != nil {
		return nil, err
	}
	rs, ok := structs[root]
	if !ok {
		return nil, fmt.Errorf("no struct %s in %s", root, file)
	}
	var sections []Section
	var errs []error
	for _, field := range rs.Fields.List {
		name := tagOf(field, "ini")
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
			name := tagOf(kf, "ini")
			if name == "" {
				continue
			}
			k, ok := key(name, kf)
			if !ok {
				errs = append(errs, fmt.Errorf("[%s] %s has no doc comment", sec.Name, name))
				continue
			}
			sec.Keys = append(sec.Keys, k)
		}
		sections = append(sections, sec)
	}
	return sections, errors.Join(errs...)
}

// tagOf is the name a field's struct tag gives it in format (ini, json).
func tagOf(f *ast.Field, format string) string {
	if f.Tag == nil {
		return ""
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(reflect.StructTag(tag).Get(format), ",")
	return name
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
		case "float32", "float64":
			return "number"
		}
		return t.Name
	case *ast.StarExpr:
		return typeOf(t.X)
	case *ast.ArrayType:
		return typeOf(t.Elt) + " (repeatable)"
	case *ast.MapType:
		return "mapping"
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
	if len(sections) > 0 && sections[0].YAML {
		b.WriteString("Every key, by its path. An unknown key, or a value of the wrong type, is an error that names it; every problem is reported at once and the CCM exits with status 2.\n\n")
	} else {
		b.WriteString("Every key of every section. An unknown section or key, or a value of the wrong type, is an error that names its line; every problem is reported at once and the CCM exits with status 2.\n\n")
	}
	for _, s := range sections {
		head := "[" + s.Name + "]"
		switch {
		case s.YAML && s.Name == "":
			head = "Top level"
		case s.YAML:
			head = "`" + s.Name + "`"
		case s.Named:
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
