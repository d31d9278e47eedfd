// Package cfgutil holds helpers shared by the providers' config readers.
package cfgutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// DecodeYAML decodes YAML (or JSON) into out, a pointer to a struct with json tags.
// Unlike a strict decoder that stops at the first problem, it reports every unknown
// key and every key given twice, each by its full path and line (e.g. "line 7:
// loadBalancer.pools[1].adresses: unknown key"), joined with any type error. An
// error never shows a value, nor a key that is not a name: a malformed line
// may hold a secret.
func DecodeYAML(data []byte, out any) error {
	var root yaml3.Node
	if err := yaml3.Unmarshal(data, &root); err != nil {
		return &SyntaxError{fmt.Errorf("not valid YAML: %w", QuietYAMLError(err))}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		// Its message may print a value unquoted (a null key's): not shown.
		return &SyntaxError{errors.New("not valid YAML for a config: a key that is null, or a mapping as a key")}
	}
	w := &yamlWalk{lines: map[string]int{}}
	if len(root.Content) > 0 {
		doc := root.Content[0]
		if doc.Kind != yaml3.MappingNode && (doc.Kind != yaml3.ScalarNode || doc.Tag != "!!null") {
			return fmt.Errorf("line %d: the document must be a mapping of keys to values", doc.Line)
		}
		w.walk("", doc, reflect.TypeOf(out).Elem())
		if w.cleared {
			// Decode the rest: a value refused alone stops no other key.
			if js, err = nodeJSON(&root); err != nil {
				return errors.Join(append(w.errs, err)...)
			}
		}
	}
	if err := json.Unmarshal(js, out); err != nil {
		w.errs = append(w.errs, w.typeError(err))
	}
	return errors.Join(w.errs...)
}

// SyntaxError is a config that could not be parsed at all: nothing of it was
// read, so no key can be said missing or wrong beside it.
type SyntaxError struct{ err error }

func (e *SyntaxError) Error() string { return e.err.Error() }
func (e *SyntaxError) Unwrap() error { return e.err }

// yamlWalk checks a document's keys against the struct it decodes into.
type yamlWalk struct {
	errs  []error
	lines map[string]int // a key's path (list indexes left out) → its line
	// cleared: a value was refused and its key left out, so that the
	// decoder goes on to the other keys (it stops at a value's own error).
	cleared bool
}

// leaf checks the scalar n of a key of type t as the decoder would, alone:
// a value it refuses is reported with its line, and false returned (its key
// is then left out of what is decoded).
func (w *yamlWalk) leaf(path string, n *yaml3.Node, t reflect.Type) bool {
	// As the decoder reads it: the scalar alone, through the same YAML to
	// JSON conversion (which takes yes for true, as YAML 1.1 does).
	doc, err := yaml3.Marshal(n)
	if err != nil {
		return true
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return true // the decoder says why
	}
	err = json.Unmarshal(js, reflect.New(t).Interface())
	if err == nil {
		return true
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		err = fmt.Errorf("cannot use %s here, want %s", withArticle(te.Value), kindName(t))
	}
	w.add(n.Line, "%s: %v", path, err)
	w.cleared = true
	return false
}

// nodeJSON is the document root as JSON.
func nodeJSON(root *yaml3.Node) ([]byte, error) {
	data, err := yaml3.Marshal(root)
	if err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(data)
}

func (w *yamlWalk) add(line int, format string, a ...any) {
	w.errs = append(w.errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...)))
}

func (w *yamlWalk) walk(path string, n *yaml3.Node, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml3.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml3.MappingNode:
		w.mapping(path, n, t)
	case yaml3.SequenceNode:
		if t.Kind() != reflect.Slice {
			return // a type error, reported by the decoder
		}
		for i, item := range n.Content {
			w.walk(fmt.Sprintf("%s[%d]", path, i), item, t.Elem())
		}
	}
}

func (w *yamlWalk) mapping(path string, n *yaml3.Node, t reflect.Type) {
	isMap := t.Kind() == reflect.Map
	if !isMap && (t.Kind() != reflect.Struct || t == reflect.TypeFor[Duration]()) {
		return // a type error, reported by the decoder
	}
	fields := map[string]reflect.Type{}
	if !isMap {
		fields = jsonFields(t)
	}
	seen := map[string]int{}
	var refused []int // the keys whose value leaf refused, by index
	defer func() {
		for j := len(refused) - 1; j >= 0; j-- {
			n.Content = slices.Delete(n.Content, refused[j], refused[j]+2)
		}
	}()
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml3.ScalarNode && k.Tag == "!!merge" {
			continue // <<: *defaults, merged by the decoder
		}
		name := isName(k.Value) && k.Kind == yaml3.ScalarNode
		if !name && !isMap {
			w.add(k.Line, "%s: a key that is not a name (letters, digits, -, _, .); not shown, it may hold a secret", orRoot(path))
			continue
		}
		p := join(path, k.Value)
		if !name {
			p = join(path, "(a key on line "+strconv.Itoa(k.Line)+")")
		}
		if prev, dup := seen[k.Value]; dup {
			w.add(k.Line, "%s is set twice (also on line %d)", p, prev)
			continue
		}
		seen[k.Value] = k.Line
		w.lines[noIndexes(p)] = k.Line
		if isMap {
			w.walk(p, v, t.Elem())
			continue
		}
		ft, ok := fields[k.Value]
		if !ok {
			w.add(k.Line, "%s: unknown key%s", p, suggest(k.Value, fields))
			continue
		}
		if v.Kind == yaml3.ScalarNode && v.Tag != "!!null" {
			if !w.leaf(p, v, ft) {
				refused = append(refused, i)
			}
			continue
		}
		w.walk(p, v, ft)
	}
}

// typeError explains a decoding error, with the line of its key when known.
func (w *yamlWalk) typeError(err error) error {
	te, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return err
	}
	msg := fmt.Sprintf("%s: cannot use %s here, want %s", te.Field, withArticle(te.Value), kindName(te.Type))
	if line, ok := w.lines[noIndexes(te.Field)]; ok {
		return fmt.Errorf("line %d: %s", line, msg)
	}
	return errors.New(msg)
}

func orRoot(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}

var indexes = regexp.MustCompile(`\[\d+\]`)

// noIndexes is path without its list indexes: encoding/json names a field
// of a list's item without one.
func noIndexes(path string) string { return indexes.ReplaceAllString(path, "") }

// quoted is what a YAML parser's error may quote of the document.
var quoted = regexp.MustCompile("\"[^\"]*\"|'[^']*'|`[^`]*`")

// quietYAMLError is a YAML parser's error without what it quotes of the
// document (a token, an anchor, a key), which may be a secret's value.
func quietYAMLError(err error) string {
	return quoted.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), "(…)")
}

// QuietYAMLError is the error of a parser of YAML that is not ours (a
// clouds.yaml read by gophercloud) without what it quotes of the document.
func QuietYAMLError(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(quietYAMLError(err))
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		if t == reflect.TypeOf(Duration{}) {
			return "a duration such as 30s"
		}
		return "a mapping"
	case reflect.Slice:
		return "a list"
	case reflect.Map:
		return "a mapping"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.Kind().String()
}

// withArticle is a JSON value's kind with its article: "an array", "a string".
func withArticle(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			if f.Anonymous {
				for k, v := range jsonFields(f.Type) {
					out[k] = v
				}
				continue
			}
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func suggest(k string, fields map[string]reflect.Type) string {
	for name := range fields {
		if strings.EqualFold(name, k) {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return ""
}

// Duration is a time.Duration written as a Go duration string ("2s", "5m").
type Duration struct{ time.Duration }

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: "non-string", Type: reflect.TypeOf(Duration{})}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a Go duration such as 30s or 5m", s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }
