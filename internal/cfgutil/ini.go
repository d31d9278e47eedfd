package cfgutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// DecodeINI decodes a gcfg-style INI file (the cloud.conf of cloud-provider-openstack,
// the cloud-config of the CloudStack provider) into out, a pointer to a struct whose
// fields are sections tagged `ini:"Global"`. A section field is a struct, or a
// map[string]*T for subsections such as [LoadBalancerClass "name"]. Keys are
// tagged `ini:"auth-url"`; names of sections and keys are case-insensitive, as in
// gcfg. Values may be "quoted" (with \" \\ \n \t escapes); ; and # start comments;
// a key without "=" means true. Supported value types: string, bool, int, uint,
// []string (the key repeated), Duration, and pointers to them (nil: not given).
//
// Every problem is reported at once, each with its line: unknown sections and
// keys, a key given twice, values of the wrong type.
func DecodeINI(data []byte, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return errors.New("DecodeINI: out must be a pointer to a struct")
	}
	root := rv.Elem()
	sections := iniFields(root.Type())
	var errs []error
	add := func(line int, format string, a ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...)))
	}
	var cur reflect.Value // the current section struct, invalid when unknown
	var curName string
	var curKeys map[string]reflect.StructField
	seen := map[string]int{}       // section/key → the line that set it
	seenVal := map[string]string{} // and its value
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			end := strings.LastIndexByte(line, ']')
			if end < 0 {
				add(n, "section header %q has no closing ]", line)
				cur = reflect.Value{}
				continue
			}
			name, sub, err := parseHeader(line[1:end])
			if err != nil {
				add(n, "%v", err)
				cur = reflect.Value{}
				continue
			}
			curName = name
			if sub != "" {
				curName = fmt.Sprintf("%s %q", name, sub)
			}
			f, ok := sections[strings.ToLower(name)]
			if !ok {
				add(n, "unknown section [%s]%s", name, suggestKey(name, sections))
				cur = reflect.Value{}
				continue
			}
			fv := root.FieldByIndex(f.Index)
			switch {
			case fv.Kind() == reflect.Struct && sub == "":
				cur = fv
			case fv.Kind() == reflect.Map && sub != "":
				if fv.IsNil() {
					fv.Set(reflect.MakeMap(fv.Type()))
				}
				key := reflect.ValueOf(sub)
				elem := fv.MapIndex(key)
				if !elem.IsValid() {
					elem = reflect.New(fv.Type().Elem().Elem())
					fv.SetMapIndex(key, elem)
				}
				cur = elem.Elem()
			case fv.Kind() == reflect.Map:
				add(n, "section [%s] needs a name: [%s \"name\"]", name, name)
				cur = reflect.Value{}
				continue
			default:
				add(n, "section [%s] takes no name", name)
				cur = reflect.Value{}
				continue
			}
			curKeys = iniFields(cur.Type())
			continue
		}
		key, val, hasVal := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		val = strings.TrimSpace(val)
		if !cur.IsValid() {
			if curName == "" {
				add(n, "%q is outside any section", key)
			}
			continue // the section's problem is reported already
		}
		f, ok := curKeys[strings.ToLower(key)]
		if !ok {
			add(n, "[%s] unknown key %q%s", curName, key, suggestKey(key, curKeys))
			continue
		}
		if hasVal {
			v, err := unquote(val)
			if err != nil {
				add(n, "[%s] %s: %v", curName, key, err)
				continue
			}
			val = v
		} else {
			val = "true"
		}
		fv := cur.FieldByIndex(f.Index)
		id := curName + "/" + strings.ToLower(key)
		if fv.Kind() != reflect.Slice {
			// The same value again is harmless (a file put together from
			// pieces: cloud-provider-openstack's reader takes it too); two
			// values are a mistake to point out.
			if prev, dup := seen[id]; dup {
				if seenVal[id] != val {
					add(n, "[%s] %s is set twice, to different values (also on line %d)", curName, key, prev)
				}
				continue
			}
		}
		seen[id], seenVal[id] = n, val
		if err := setValue(fv, val); err != nil {
			add(n, "[%s] %s: %v", curName, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func parseHeader(h string) (name, sub string, err error) {
	h = strings.TrimSpace(h)
	name, rest, found := strings.Cut(h, " ")
	if !found {
		return h, "", nil
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
		return "", "", fmt.Errorf("section header [%s]: a subsection name must be quoted, as in [%s \"name\"]", h, name)
	}
	sub, err = unquote(rest)
	if err != nil {
		return "", "", fmt.Errorf("section header [%s]: %w", h, err)
	}
	if sub == "" {
		return "", "", fmt.Errorf("section header [%s]: empty subsection name", h)
	}
	return name, sub, nil
}

// unquote removes an inline comment and the quotes of a value.
func unquote(v string) (string, error) {
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			inQuote = !inQuote
		case c == '\\' && inQuote:
			i++
			if i == len(v) {
				return "", errors.New("value ends in a lone backslash")
			}
			switch v[i] {
			case '"', '\\':
				b.WriteByte(v[i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return "", fmt.Errorf("unknown escape \\%c", v[i])
			}
		case (c == ';' || c == '#') && !inQuote:
			return strings.TrimSpace(b.String()), nil
		default:
			b.WriteByte(c)
		}
	}
	if inQuote {
		return "", errors.New("value has an unterminated quote")
	}
	return strings.TrimSpace(b.String()), nil
}

func setValue(fv reflect.Value, val string) error {
	if fv.Kind() == reflect.Pointer { // optional: nil means "not given"
		p := reflect.New(fv.Type().Elem())
		if err := setValue(p.Elem(), val); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	if fv.Type() == reflect.TypeOf(Duration{}) {
		d, err := time.ParseDuration(val)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 30s or 5m", val)
		}
		fv.Set(reflect.ValueOf(Duration{d}))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(val)
	case reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			switch strings.ToLower(val) {
			case "yes", "on":
				b = true
			case "no", "off":
				b = false
			default:
				return fmt.Errorf("%q is not a boolean (true or false)", val)
			}
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(val, 10, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a whole number", val)
		}
		fv.SetInt(i)
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		i, err := strconv.ParseUint(val, 10, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a whole number ≥ 0", val)
		}
		fv.SetUint(i)
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported field type %s", fv.Type())
		}
		fv.Set(reflect.Append(fv, reflect.ValueOf(val)))
	default:
		return fmt.Errorf("unsupported field type %s", fv.Type())
	}
	return nil
}

// iniFields maps the lower-cased `ini` tag of each field to the field.
func iniFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("ini")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		out[strings.ToLower(tag)] = f
	}
	return out
}

func suggestKey(k string, fields map[string]reflect.StructField) string {
	norm := func(s string) string { return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s)) }
	for name, f := range fields {
		if norm(name) == norm(k) {
			return fmt.Sprintf(" (did you mean %q?)", f.Tag.Get("ini"))
		}
	}
	return ""
}
