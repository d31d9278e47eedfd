package cfgutil

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// A config field that holds a secret is tagged secret:"true": its value is
// never printed, whatever is wrong with the file around it. A field whose
// name looks like a secret's but is not one (a path, an id) says so with
// secret:"false"; TestEveryFieldNamedLikeASecretSaysWhetherItIsOne (in
// internal/clouds) holds every cloud's config to it.

// IsSecret says whether f holds a secret.
func IsSecret(f reflect.StructField) bool { return f.Tag.Get("secret") == "true" }

// SecretKey is a key that holds a secret: its path, as a person writes it
// ("Global", "password" in an INI file; "auth", "key" in YAML), and whether
// it is a key of an INI file.
type SecretKey struct {
	Path []string
	INI  bool
}

// SecretKeys are the keys of t (a config struct decoded by DecodeINI or
// DecodeYAML) whose fields are tagged secret:"true", in field order. A
// subsection (a map of sections) is named "name".
func SecretKeys(t reflect.Type) []SecretKey {
	var out []SecretKey
	walkFields(deref(t), nil, func(path []string, f reflect.StructField, ini bool) {
		if IsSecret(f) {
			out = append(out, SecretKey{Path: path, INI: ini})
		}
	})
	return out
}

// LooksSecret are the fields of t whose key or Go name suggests a secret
// (password, secret, token, passphrase, a key) and that say neither
// secret:"true" nor secret:"false": each by its path.
func LooksSecret(t reflect.Type) []string {
	var out []string
	walkFields(deref(t), nil, func(path []string, f reflect.StructField, _ bool) {
		if _, said := f.Tag.Lookup("secret"); said {
			return
		}
		if secretLike.MatchString(f.Name) || secretLike.MatchString(path[len(path)-1]) {
			out = append(out, strings.Join(path, "."))
		}
	})
	return out
}

var secretLike = regexp.MustCompile(`(?i)(pass(word|phrase)?|secret|token|credential|private|(^|[-_.]|[a-z])key($|[-_.]))`)

// walkFields calls visit for every leaf field of t (a struct of INI sections,
// or of json-tagged YAML keys), with its path. An element of a map is named
// "name" in the path, one of a list "0".
func walkFields(t reflect.Type, path []string, visit func([]string, reflect.StructField, bool)) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, ini := keyName(f)
		if !f.IsExported() || name == "-" {
			continue
		}
		p := slices.Clone(path)
		if name != "" {
			p = append(p, name)
		}
		inner, within := f.Type, p
		for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Map || inner.Kind() == reflect.Slice {
			switch inner.Kind() {
			case reflect.Map:
				within = append(within[:len(within):len(within)], "name")
			case reflect.Slice:
				within = append(within[:len(within):len(within)], "0")
			}
			inner = inner.Elem()
		}
		switch {
		case inner.Kind() == reflect.Struct && inner != reflect.TypeFor[Duration]():
			walkFields(inner, within, visit)
		case name != "":
			visit(p, f, ini)
		}
	}
}

// keyName is the key a field is written as: its ini tag (ini is then true),
// else its json tag's name, else (an embedded struct) "".
func keyName(f reflect.StructField) (name string, ini bool) {
	if tag, ok := f.Tag.Lookup("ini"); ok {
		return tag, true
	}
	name, _, _ = strings.Cut(f.Tag.Get("json"), ",")
	if name == "" && !f.Anonymous {
		name = f.Name
	}
	return name, false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
