package ociapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// A listing holds millions of backends (2,000 load balancers on 5,000
// Nodes): they are decoded here without reflection and without an
// allocation but for their addresses, as encoding/json decodes a Backend
// (TestABackendIsDecodedAsEncodingJSONDecodesIt holds the two together,
// field by field).

// decodeBackend reads one backend from dec into b: names matched without
// regard to case, null leaving a field as it is, other names skipped. Its
// states point at shared values (stateOf): own gives a backend kept its
// own.
func decodeBackend(dec *jsontext.Decoder, b *Backend) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		return nil
	case '{':
	default:
		return fmt.Errorf("a backend is %v, not an object", tok.Kind())
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		set, err := backendField(name)
		if err != nil {
			return err
		}
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if set == nil || v.Kind() == 'n' {
			continue
		}
		if err := set(b, v); err != nil {
			return fmt.Errorf("backend %s: %w", name, err)
		}
	}
	_, err = dec.ReadToken() // }
	return err
}

// backendSetter decodes a field of Backend, named by its JSON name (its tag).
type backendSetter struct {
	name string
	set  func(*Backend, jsontext.Value) error
}

// backendSetters are every field's, in Backend's order (the most frequent
// first).
var backendSetters = []backendSetter{
	{"ipAddress", func(b *Backend, v jsontext.Value) error { return decodeString(v, &b.IPAddress) }},
	{"targetId", func(b *Backend, v jsontext.Value) error { return decodeString(v, &b.TargetID) }},
	{"port", func(b *Backend, v jsontext.Value) error { return decodeInt(v, &b.Port) }},
	{"weight", func(b *Backend, v jsontext.Value) error { return decodeInt(v, &b.Weight) }},
	{"drain", stateSetter(func(b *Backend) **bool { return &b.Drain })},
	{"backup", stateSetter(func(b *Backend) **bool { return &b.Backup })},
	{"offline", stateSetter(func(b *Backend) **bool { return &b.Offline })},
	{"isDrain", stateSetter(func(b *Backend) **bool { return &b.IsDrain })},
	{"isBackup", stateSetter(func(b *Backend) **bool { return &b.IsBackup })},
	{"isOffline", stateSetter(func(b *Backend) **bool { return &b.IsOffline })},
}

// backendField is the setter of the field a JSON name (quoted) decodes
// into; nil for none.
func backendField(quoted jsontext.Value) (func(*Backend, jsontext.Value) error, error) {
	for _, f := range backendSetters {
		if string(quoted[1:len(quoted)-1]) == f.name { // no allocation
			return f.set, nil
		}
	}
	var name string
	if err := decodeString(quoted, &name); err != nil {
		return nil, err
	}
	for _, f := range backendSetters {
		if strings.EqualFold(name, f.name) {
			return f.set, nil
		}
	}
	return nil, nil
}

// stateSetter decodes a boolean into the state field of b that field gives.
func stateSetter(field func(*Backend) **bool) func(*Backend, jsontext.Value) error {
	return func(b *Backend, v jsontext.Value) error {
		switch v.Kind() {
		case 't':
			*field(b) = stateOf(true)
		case 'f':
			*field(b) = stateOf(false)
		default:
			return fmt.Errorf("%s is not a boolean", v)
		}
		return nil
	}
}

func decodeString(v jsontext.Value, into *string) error {
	if v.Kind() != '"' {
		return fmt.Errorf("%s is not a string", v)
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') < 0 && isASCII(raw) {
		*into = string(raw)
		return nil
	}
	return json.Unmarshal(v, into) // escapes, and what encoding/json replaces
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func decodeInt(v jsontext.Value, into *int) error {
	if v.Kind() != '0' {
		return fmt.Errorf("%s is not a number", v)
	}
	if n, ok := smallInt(v); ok {
		*into = n
		return nil
	}
	n, err := strconv.ParseInt(string(v), 10, 0)
	if err != nil {
		return fmt.Errorf("%s is not an integer", v)
	}
	*into = int(n)
	return nil
}

// smallInt is v as an int when it is up to 9 digits, with no sign,
// fraction or exponent (a port, a weight): without an allocation.
func smallInt(v []byte) (int, bool) {
	if len(v) == 0 || len(v) > 9 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

var yes, no = true, false

// stateOf is a shared pointer to v: never written through.
func stateOf(v bool) *bool {
	if v {
		return &yes
	}
	return &no
}

// own gives b's states pointers of its own.
func own(b *Backend) {
	for _, p := range []**bool{&b.Drain, &b.Backup, &b.Offline, &b.IsDrain, &b.IsBackup, &b.IsOffline} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
}
