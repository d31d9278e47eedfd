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
	"unicode"
	"unicode/utf8"
)

// DecodeINI decodes a gcfg-style INI file (the cloud.conf of cloud-provider-openstack,
// the cloud-config of the CloudStack provider) into out, a pointer to a struct whose
// fields are sections tagged `ini:"Global"`. A section field is a struct, or a
// map[string]*T for subsections such as [LoadBalancerClass "name"]. Keys are
// tagged `ini:"auth-url"`; names of sections and keys are case-insensitive, as in
// gcfg. Values may be "quoted" (with \" \\ \n \t escapes); ; and # start comments;
// a boolean key without "=" means true. Supported value types: string, bool, int,
// uint, []string (the key repeated), Duration, and pointers to them (nil: not given).
//
// Every problem is reported at once, each with its line: unknown sections and
// keys, a key given twice, values of the wrong type, lines that are not
// `key = value`. An error names sections and keys, never a line's text: a
// malformed line may hold a secret (`password: …`, `secret-key …`), and the
// value of a key tagged secret:"true" is never shown.
func DecodeINI(data []byte, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return errors.New("DecodeINI: out must be a pointer to a struct")
	}
	d := &iniDecoder{root: rv.Elem(), sections: iniFields(rv.Elem().Type()), seen: map[string]int{}, seenVal: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == ';' || line[0] == '#':
		case line[0] == '[':
			d.header(n, line)
		default:
			d.keyLine(n, line)
		}
	}
	if err := sc.Err(); err != nil {
		d.errs = append(d.errs, fmt.Errorf("after line %d: %w", d.lines(data), err))
	}
	if d.hidden {
		d.errs = append(d.errs, errors.New("(the text of unknown keys and sections is not shown: a stray line may hold a secret)"))
	}
	return errors.Join(d.errs...)
}

// iniDecoder is the state of one DecodeINI.
type iniDecoder struct {
	root     reflect.Value
	sections map[string]reflect.StructField
	errs     []error

	cur     reflect.Value // the current section's struct; invalid when it is unknown
	curName string        // its name as written, "" before the first header
	curKeys map[string]reflect.StructField
	seen    map[string]int    // section/key → the line that set it
	seenVal map[string]string // and its value
	hidden  bool              // a line's text was left out of an error
}

func (d *iniDecoder) add(line int, format string, a ...any) {
	d.errs = append(d.errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...)))
}

// lines counts the lines the scanner could read (for its error).
func (d *iniDecoder) lines(data []byte) int { return bytes.Count(data, []byte("\n")) }

// header enters the section of a [Name] or [Name "sub"] line.
func (d *iniDecoder) header(n int, line string) {
	d.cur, d.curName = reflect.Value{}, "a section whose header is not valid"
	end := strings.IndexByte(line, ']')
	if end < 0 {
		d.add(n, "a section header without a closing ]")
		return
	}
	if rest := strings.TrimSpace(line[end+1:]); rest != "" && rest[0] != ';' && rest[0] != '#' {
		d.add(n, "text after a section header's ] (a key goes on a line of its own)")
	}
	name, sub, err := parseHeader(line[1:end])
	if err != nil {
		d.add(n, "%v", err)
		return
	}
	d.curName = name
	if sub != "" {
		d.curName = fmt.Sprintf("%s %q", name, sub)
	}
	f, ok := d.sections[strings.ToLower(name)]
	if !ok {
		d.add(n, "unknown section%s", suggestKey(name, d.sections))
		d.hidden = true
		return
	}
	fv := d.root.FieldByIndex(f.Index)
	switch {
	case fv.Kind() == reflect.Struct && sub == "":
		d.cur = fv
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
		d.cur = elem.Elem()
	case fv.Kind() == reflect.Map:
		d.add(n, "section [%s] needs a name: [%s \"name\"]", name, name)
		return
	default:
		d.add(n, "section [%s] takes no name", name)
		return
	}
	d.curKeys = iniFields(d.cur.Type())
}

// keyLine sets the key of a `key = value` line (or a boolean's `key`).
func (d *iniDecoder) keyLine(n int, line string) {
	key, val, hasVal := strings.Cut(line, "=")
	key = strings.TrimSpace(key)
	if !isName(key) {
		d.malformed(n, key)
		return
	}
	if d.curName == "" {
		d.add(n, "a key outside any section (it goes under its section, such as [Global])")
		d.hidden = true
		return
	}
	if !d.cur.IsValid() {
		return // the section's problem is reported already
	}
	f, ok := d.curKeys[strings.ToLower(key)]
	if !ok {
		// What stands where a key should may be a value that slipped onto a
		// line of its own (a password wrapped after its "="): it is not
		// shown; the line and the key it most resembles are.
		d.add(n, "[%s] unknown key%s", d.curName, suggestKey(key, d.curKeys))
		d.hidden = true
		return
	}
	fv := d.cur.FieldByIndex(f.Index)
	if !hasVal {
		if fv.Kind() != reflect.Bool && (fv.Kind() != reflect.Pointer || fv.Type().Elem().Kind() != reflect.Bool) {
			d.add(n, "[%s] %s has no value: write %s = value", d.curName, key, key)
			return
		}
		val = "true"
	} else {
		v, err := unquote(strings.TrimSpace(val))
		if err != nil {
			d.add(n, "[%s] %s: %v", d.curName, key, err)
			return
		}
		val = v
	}
	d.set(n, key, f, fv, val)
}

// set sets fv, the field f of the current section, to val.
func (d *iniDecoder) set(n int, key string, f reflect.StructField, fv reflect.Value, val string) {
	id := strings.ToLower(d.curName) + "/" + strings.ToLower(key)
	if fv.Kind() != reflect.Slice {
		// The same value again is harmless (a file put together from
		// pieces: cloud-provider-openstack's reader takes it too); two
		// values are a mistake to point out.
		if prev, dup := d.seen[id]; dup {
			if d.seenVal[id] != val {
				d.add(n, "[%s] %s is set twice, to different values (also on line %d)", d.curName, key, prev)
			}
			return
		}
	}
	d.seen[id], d.seenVal[id] = n, val
	if err := setValue(fv, val); err != nil {
		if IsSecret(f) {
			err = errors.New("not a value of its type (not shown: a secret)")
		}
		d.add(n, "[%s] %s: %v", d.curName, key, err)
	}
}

// malformed reports a line that is not `key = value`, naming the key it
// begins with when that is a key of its section, and nothing else of it.
func (d *iniDecoder) malformed(n int, text string) {
	lead := text[:len(text)-len(strings.TrimLeftFunc(text, isNameRune))]
	if _, known := d.curKeys[strings.ToLower(lead)]; known && d.cur.IsValid() && lead != "" {
		d.add(n, "[%s] %s is not written `%s = value` (a YAML-style `:` or a missing `=`?)", d.curName, lead, lead)
		return
	}
	where := "outside any section"
	if d.curName != "" {
		where = "in [" + d.curName + "]"
	}
	d.add(n, "not a `key = value` line %s (its text is not shown: it may hold a secret)", where)
}

// isName says whether s can be shown as the name of a key or section: it is
// made of letters, digits, -, _ and . only.
func isName(s string) bool {
	return s != "" && len(s) <= 64 && strings.TrimLeftFunc(s, isNameRune) == ""
}

func isNameRune(r rune) bool {
	return r < utf8.RuneSelf && (r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r))
}

func parseHeader(h string) (name, sub string, err error) {
	h = strings.TrimSpace(h)
	name, rest, found := strings.Cut(h, " ")
	if !isName(name) {
		return "", "", errors.New("a section header whose name is not a name (letters, digits, -, _)")
	}
	if !found {
		return name, "", nil
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
		return "", "", fmt.Errorf("section header [%s …]: a subsection name must be quoted, as in [%s \"name\"]", name, name)
	}
	sub, err = unquote(rest)
	if err != nil {
		return "", "", fmt.Errorf("section header [%s …]: %w", name, err)
	}
	if sub == "" {
		return "", "", fmt.Errorf("section header [%s \"\"]: empty subsection name", name)
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
				return "", errors.New("a quoted value has an unknown escape (known: \\\" \\\\ \\n \\t)")
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

// suggestKey names the key of fields that k most resembles (the same but for
// case, - and _, or at most two letters apart), as " (did you mean …?)".
func suggestKey(k string, fields map[string]reflect.StructField) string {
	norm := func(s string) string { return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s)) }
	best, bestD := "", 3
	for name, f := range fields {
		if d := distance(norm(name), norm(k)); d < bestD || (d == bestD && f.Tag.Get("ini") < best) {
			best, bestD = f.Tag.Get("ini"), d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the edit distance of a and b (Levenshtein), at most 3 worth
// knowing: longer words are not compared letter by letter.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 3
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
