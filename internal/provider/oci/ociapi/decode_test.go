package ociapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backendJSONNames are Backend's JSON names, read from its tags.
func backendJSONNames() []string {
	var out []string
	bt := reflect.TypeFor[Backend]()
	for i := range bt.NumField() {
		name, _, _ := strings.Cut(bt.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

func TestTheBackendDecoderKnowsEveryFieldOfBackend(t *testing.T) {
	var names []string
	for _, f := range backendSetters {
		names = append(names, f.name)
	}
	assert.Equal(t, backendJSONNames(), names)
}

// decodeOne decodes data as one backend, as a listing's decoder would.
func decodeOne(data []byte) (Backend, error) {
	var b Backend
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))
	if err := decodeBackend(dec, &b); err != nil {
		return b, err
	}
	if _, err := dec.ReadToken(); err == nil {
		return b, assert.AnError // one value only
	}
	own(&b)
	return b, nil
}

// backendSeeds are backends of each field of Backend set as every JSON
// value kind, null, under another case and escaped; unknown names; and
// malformed ones.
func backendSeeds() []string {
	values := []string{`"10.0.0.1"`, `"a\u00e9\"b"`, `7`, `-3`, `1.5`, `1e2`, `true`, `false`, `null`, `{"x": [1, {}]}`, `[]`}
	var out []string
	for _, name := range backendJSONNames() {
		for _, v := range values {
			out = append(out, `{"`+name+`": `+v+`}`, `{"`+strings.ToUpper(name)+`": `+v+`}`)
		}
		out = append(out, `{"\u00`+strings.ToLower(hexOf(name[0]))+name[1:]+`": 8}`)
	}
	return append(out, `{"ipAddress": "10.0.0.9", "port": 30080, "weight": 1, "drain": false, "name": "10.0.0.9:30080", "maxConnections": 5}`,
		`null`, `{}`, `[]`, `"x"`, `{"port": 1, "port": 2}`, `{"port": 1`, `{"port" 1}`, `{"ipAddress": "\ud800"}`)
}

func hexOf(c byte) string {
	return strings.ToUpper(string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
}

// The listing's backend decoder reads a backend as encoding/json does:
// what encoding/json decodes, it decodes the same; what encoding/json
// refuses, it refuses.
func TestABackendIsDecodedAsEncodingJSONDecodesIt(t *testing.T) {
	for _, seed := range backendSeeds() {
		sameAsEncodingJSON(t, []byte(seed))
	}
}

func FuzzABackendIsDecodedAsEncodingJSONDecodesIt(f *testing.F) {
	for _, seed := range backendSeeds() {
		f.Add([]byte(seed))
	}
	f.Fuzz(sameAsEncodingJSON)
}

func sameAsEncodingJSON(t *testing.T, data []byte) {
	var want Backend
	wantErr := json.Unmarshal(data, &want)
	if wantErr == nil && !json.Valid(data) {
		return
	}
	got, err := decodeOne(data)
	if wantErr != nil {
		assert.Error(t, err, "%s: encoding/json refuses it: %v", data, wantErr)
		return
	}
	require.NoError(t, err, "%s", data)
	assert.Equal(t, want, got, "%s", data)
}

// The decoder's states are shared until own gives a kept backend its own.
func TestAKeptBackendOwnsItsStates(t *testing.T) {
	var a, b Backend
	require.NoError(t, jsonv2.Unmarshal([]byte(`{"drain": true}`), &a))
	b, err := decodeOne([]byte(`{"drain": true}`))
	require.NoError(t, err)
	*b.Drain = false
	assert.True(t, *stateOf(true), "a kept backend's state is its own")
	assert.True(t, *a.Drain)
}
