// Package cfgutil holds helpers shared by the providers' config readers.
package cfgutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// DecodeYAML decodes YAML (or JSON) into out, a pointer to a struct with json tags.
// Unlike a strict decoder that stops at the first problem, it reports every unknown
// key, each by its full path (e.g. "loadBalancer.pools[1].adresses"), joined with
// any type error.
func DecodeYAML(data []byte, out any) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	var errs []error
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	if generic != nil {
		if _, ok := generic.(map[string]any); !ok {
			return errors.New("the document must be a mapping of keys to values")
		}
	}
	errs = append(errs, unknownKeys("", generic, reflect.TypeOf(out).Elem())...)
	if err := json.Unmarshal(js, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			errs = append(errs, fmt.Errorf("%s: cannot use a %s here, want %s", te.Field, te.Value, kindName(te.Type)))
		} else {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
	}
	return "a " + t.Kind().String()
}

func unknownKeys(path string, v any, t reflect.Type) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch val := v.(type) {
	case map[string]any:
		if t.Kind() == reflect.Map {
			var errs []error
			for k, item := range val {
				errs = append(errs, unknownKeys(join(path, k), item, t.Elem())...)
			}
			return errs
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeOf(Duration{}) {
			return nil // a type error, reported by the decoder
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var errs []error
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: unknown key%s", join(path, k), suggest(k, fields)))
				continue
			}
			errs = append(errs, unknownKeys(join(path, k), val[k], ft)...)
		}
		return errs
	case []any:
		if t.Kind() != reflect.Slice {
			return nil
		}
		var errs []error
		for i, item := range val {
			errs = append(errs, unknownKeys(fmt.Sprintf("%s[%d]", path, i), item, t.Elem())...)
		}
		return errs
	}
	return nil
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
