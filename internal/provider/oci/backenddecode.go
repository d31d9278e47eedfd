package oci

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
		field, err := backendField(name)
		if err != nil {
			return err
		}
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if field == "" || v.Kind() == 'n' {
			continue
		}
		if err := setBackendField(b, field, v); err != nil {
			return fmt.Errorf("backend %s: %w", field, err)
		}
	}
	_, err = dec.ReadToken() // }
	return err
}

// backendFieldNames are Backend's JSON names (its tags).
var backendFieldNames = []string{"ipAddress", "targetId", "port", "weight", "drain", "backup", "offline", "isDrain", "isBackup", "isOffline"}

// backendField is the field a JSON name (quoted) decodes into, "" for
// none.
func backendField(quoted jsontext.Value) (string, error) {
	for _, f := range backendFieldNames {
		if string(quoted[1:len(quoted)-1]) == f { // no allocation
			return f, nil
		}
	}
	var name string
	if err := decodeString(quoted, &name); err != nil {
		return "", err
	}
	for _, f := range backendFieldNames {
		if strings.EqualFold(name, f) {
			return f, nil
		}
	}
	return "", nil
}

func setBackendField(b *Backend, field string, v jsontext.Value) error {
	switch field {
	case "ipAddress":
		return decodeString(v, &b.IPAddress)
	case "targetId":
		return decodeString(v, &b.TargetID)
	case "port":
		return decodeInt(v, &b.Port)
	case "weight":
		return decodeInt(v, &b.Weight)
	}
	state := backendState(b, field)
	switch v.Kind() {
	case 't':
		*state = stateOf(true)
	case 'f':
		*state = stateOf(false)
	default:
		return fmt.Errorf("%s is not a boolean", v)
	}
	return nil
}

// backendState is b's state field of that name.
func backendState(b *Backend, field string) **bool {
	switch field {
	case "drain":
		return &b.Drain
	case "backup":
		return &b.Backup
	case "offline":
		return &b.Offline
	case "isDrain":
		return &b.IsDrain
	case "isBackup":
		return &b.IsBackup
	default:
		return &b.IsOffline
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
