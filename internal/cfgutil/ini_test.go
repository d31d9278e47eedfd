package cfgutil

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type iniGlobal struct {
	AuthURL  string   `ini:"auth-url"`
	Password string   `ini:"password" secret:"true"`
	Insecure bool     `ini:"tls-insecure"`
	Retries  int      `ini:"retries"`
	Tags     []string `ini:"tag"`
	Timeout  Duration `ini:"timeout"`
}

type iniClass struct {
	SubnetID string `ini:"subnet-id"`
}

type iniDoc struct {
	Global  iniGlobal            `ini:"Global"`
	Classes map[string]*iniClass `ini:"LoadBalancerClass"`
}

func TestDecodeINI(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		check    func(*testing.T, iniDoc)
		contains []string
	}{
		{"a cloud.conf decodes, case-insensitively, with quotes and comments",
			"# comment\n[global]\nAuth-URL = http://127.0.0.1:5000/v3 ; trailing\npassword = \"p;a#ss \\\"w\\\"\"\ntls-insecure\nretries=3\ntag=a\ntag=b\ntimeout=5s\n\n[LoadBalancerClass \"internal\"]\nsubnet-id=abc\n",
			func(t *testing.T, d iniDoc) {
				assert.Equal(t, "http://127.0.0.1:5000/v3", d.Global.AuthURL)
				assert.Equal(t, `p;a#ss "w"`, d.Global.Password)
				assert.True(t, d.Global.Insecure, "a key without = is true")
				assert.Equal(t, 3, d.Global.Retries)
				assert.Equal(t, []string{"a", "b"}, d.Global.Tags)
				assert.Equal(t, 5*time.Second, d.Global.Timeout.Duration)
				require.Contains(t, d.Classes, "internal")
				assert.Equal(t, "abc", d.Classes["internal"].SubnetID)
			}, nil},
		{"every problem is reported with its line",
			"[Global]\nauth_url = x\nretries = many\npassword=a\npassword=b\n[Nope]\nx=1\n[LoadBalancerClass]\nsubnet-id=1\n",
			nil, []string{
				`line 2: [Global] unknown key (did you mean "auth-url"?)`,
				`line 3: [Global] retries: "many" is not a whole number`,
				`line 5: [Global] password is set twice, to different values (also on line 4)`,
				`line 6: unknown section`,
				`line 8: section [LoadBalancerClass] needs a name`,
			}},
		{"the same value twice is taken", "[Global]\npassword=a\npassword=a\n", func(t *testing.T, d iniDoc) { assert.Equal(t, "a", d.Global.Password) }, nil},
		{"a key before any section is refused", "a=b\n", nil, []string{`line 1: a key outside any section`}},
		{"an unterminated quote is refused", "[Global]\npassword=\"abc\n", nil, []string{"unterminated quote"}},
		{"a bad boolean is refused", "[Global]\ntls-insecure=maybe\n", nil, []string{`"maybe" is not a boolean`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d iniDoc
			err := DecodeINI([]byte(tt.in), &d)
			if tt.contains == nil {
				require.NoError(t, err)
				tt.check(t, d)
				return
			}
			require.Error(t, err)
			for _, c := range tt.contains {
				assert.Contains(t, err.Error(), c)
			}
		})
	}
}

func TestDecodeININeverPrintsValuesOfUnknownKeys(t *testing.T) {
	var d iniDoc
	err := DecodeINI([]byte("[Global]\npasword=hunter2\n"), &d)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2", "a misspelt secret key must not leak its value")
}

func FuzzDecodeINI(f *testing.F) {
	for _, s := range []string{"", "[Global]\nauth-url=x\n", "[LoadBalancerClass \"a\"]\nsubnet-id=1", "[", "[Global]\npassword=\"\\", "k=v", "[Global]\ntag\ntag=\"x\"#c"} {
		f.Add(s, " = ", "\n")
	}
	f.Add("[Global]", ": ", " = x\n")
	f.Add("[Global]", " ", "")
	f.Add("", "\t", "\"")
	f.Fuzz(func(t *testing.T, before, sep, after string) {
		var d iniDoc
		_ = DecodeINI([]byte(before+after), &d) // never panics
		// The secret written after password on its line, however badly, is
		// in no error.
		if !separates(sep) || strings.Contains(before+sep+after, fuzzSecret[:4]) {
			return
		}
		err := DecodeINI([]byte(before+"\npassword"+sep+fuzzSecret+after), &d)
		if err != nil && strings.Contains(err.Error(), fuzzSecret[:4]) {
			t.Fatalf("the secret is in the error: %v", err)
		}
	})
}

// fuzzSecret is the secret the fuzz targets write into a config.
const fuzzSecret = "Zq7Kw-S3cr3t"

// separates: sep, between a key and the secret, is on one line and parts
// them (as a space, a colon, a tab or = does).
func separates(sep string) bool {
	return strings.ContainsAny(sep, " :\t=") && !strings.ContainsAny(sep, "\r\n")
}
