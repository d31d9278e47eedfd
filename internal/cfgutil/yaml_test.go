package cfgutil

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	Addresses []string `json:"addresses"`
	Name      string   `json:"name"`
}

type doc struct {
	Enabled  bool              `json:"enabled"`
	Interval Duration          `json:"interval"`
	Pools    []inner           `json:"pools"`
	Labels   map[string]string `json:"labels"`
	Nested   struct {
		Inner inner `json:"inner"`
	} `json:"nested"`
}

func TestDecodeYAML(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		contains []string
	}{
		{"a valid document decodes", "enabled: true\ninterval: 3s\npools: [{name: a, addresses: [x]}]\nlabels: {k: v}\n", nil},
		{"every unknown key is reported with its path", "enabeld: true\npools:\n- name: a\n  adresses: [x]\nnested: {inner: {nme: b}}\n",
			[]string{"enabeld: unknown key", "pools[0].adresses: unknown key", "nested.inner.nme: unknown key"}},
		{"a wrong case gets a suggestion", "Enabled: true\n", []string{`did you mean "enabled"`}},
		{"a type error names the field", "pools: 3\n", []string{"pools: cannot use a number here, want a list"}},
		{"a bad duration is explained", "interval: soon\n", []string{`invalid duration "soon"`}},
		{"a document that is a list is refused", "- a\n- b\n", []string{"must be a mapping"}},
		{"broken YAML is refused", "a: [\n", []string{"not valid YAML"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			err := DecodeYAML([]byte(tt.in), &d)
			if len(tt.contains) == 0 {
				require.NoError(t, err)
				assert.Equal(t, 3*time.Second, d.Interval.Duration)
				return
			}
			require.Error(t, err)
			for _, c := range tt.contains {
				assert.Contains(t, err.Error(), c)
			}
		})
	}
}

func FuzzDecodeYAML(f *testing.F) {
	for _, s := range []string{"", "enabled: true", "pools: [{name: a}]", "interval: 1s", "a: [", "- x", "labels: {a: 1}", "nested: {inner: 3}"} {
		f.Add(s, ": ", "\n")
	}
	f.Add("nested:", " = ", "\n")
	f.Add("", ":", ": x")
	f.Fuzz(func(t *testing.T, before, sep, after string) {
		var d doc
		_ = DecodeYAML([]byte(before+after), &d) // must not panic
		// The secret written after token on its line, however badly, is in
		// no error.
		if !separates(sep) || strings.Contains(before+sep+after, fuzzSecret[:4]) {
			return
		}
		var s secretDoc
		err := DecodeYAML([]byte(before+"\ntoken"+sep+fuzzSecret+after), &s)
		if err != nil && strings.Contains(err.Error(), fuzzSecret[:4]) {
			t.Fatalf("the secret is in the error: %v", err)
		}
	})
}

type secretDoc struct {
	doc
	Token string `json:"token" secret:"true"`
}

// A value refused alone (a duration that is not one, a word for a number)
// is said with its line, and stops no other key: each of them is said, and
// the rest is decoded, so that no key is said missing that is there.
func TestARefusedValueStopsNoOtherKey(t *testing.T) {
	var out struct {
		Interval Duration `json:"interval"`
		Count    int      `json:"count"`
		Enabled  bool     `json:"enabled"`
		Name     string   `json:"name"`
		Pools    []inner  `json:"pools"`
	}
	err := DecodeYAML([]byte("interval: soon\ncount: many\nenabled: yes\nname: x\npools:\n- name: p\n  addresses: [a]\n"), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 1: interval: invalid duration "soon"`)
	assert.Contains(t, err.Error(), "line 2: count: cannot use a string here, want a whole number")
	assert.Len(t, strings.Split(err.Error(), "\n"), 2, "%v", err)
	assert.True(t, out.Enabled, "yes is true, as the decoder reads it")
	assert.Equal(t, "x", out.Name)
	require.Len(t, out.Pools, 1)
	assert.Equal(t, []string{"a"}, out.Pools[0].Addresses)
}
