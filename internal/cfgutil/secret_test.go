package cfgutil_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/cfgutil/cfgtest"
)

type iniSecrets struct {
	Global struct {
		URL      string `ini:"url"`
		Password string `ini:"password" secret:"true"`
		Token    string `ini:"token" secret:"true"`
		Insecure bool   `ini:"insecure"`
		KeyFile  string `ini:"key-file" secret:"false"`
	} `ini:"Global"`
	Classes map[string]*struct {
		Secret string `ini:"secret" secret:"true"`
	} `ini:"Class"`
}

type yamlSecrets struct {
	Auth struct {
		Region string `json:"region"`
		Key    string `json:"key" secret:"true"`
	} `json:"auth"`
	Passphrase string            `json:"passphrase" secret:"true"`
	Tags       map[string]string `json:"tags"`
}

func TestSecretKeysAreFoundWhereverTheyAreNested(t *testing.T) {
	paths := func(keys []cfgutil.SecretKey) (out []string) {
		for _, k := range keys {
			out = append(out, strings.Join(k.Path, "/"))
		}
		return out
	}
	assert.Equal(t, []string{"Global/password", "Global/token", "Class/name/secret"}, paths(cfgutil.SecretKeys(reflect.TypeFor[iniSecrets]())))
	assert.Equal(t, []string{"auth/key", "passphrase"}, paths(cfgutil.SecretKeys(reflect.TypeFor[*yamlSecrets]())))
	assert.Empty(t, cfgutil.LooksSecret(reflect.TypeFor[iniSecrets]()), "key-file says it is not a secret")
	type unsaid struct {
		APIKey string `ini:"api-key"`
		Pass   string `ini:"pass"`
		Name   string `ini:"name"`
	}
	assert.Equal(t, []string{"api-key", "pass"}, cfgutil.LooksSecret(reflect.TypeFor[unsaid]()))
}

// Property: whatever is wrong with a file, the value of a key that holds a
// secret is in no error; every shape of cfgtest.Shapes, for every secret
// key of both formats.
func TestAMalformedConfigNeverShowsASecret(t *testing.T) {
	const secret = "S3cr3t-Val_9x"
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		valid  string
		decode func([]byte) error
	}{
		{"ini", reflect.TypeFor[iniSecrets](), "[Global]\nurl = http://127.0.0.1:9\n", func(b []byte) error { var c iniSecrets; return cfgutil.DecodeINI(b, &c) }},
		{"yaml", reflect.TypeFor[yamlSecrets](), "tags: {a: b}\n", func(b []byte) error { var c yamlSecrets; return cfgutil.DecodeYAML(b, &c) }},
	} {
		keys := cfgutil.SecretKeys(tc.typ)
		require.NotEmpty(t, keys)
		for _, key := range keys {
			for _, shape := range cfgtest.Shapes(key, secret, tc.valid) {
				t.Run(tc.name+"/"+strings.Join(key.Path, ".")+"/"+shape.Name, func(t *testing.T) {
					err := tc.decode([]byte(shape.File))
					if shape.Name == "well formed" {
						require.NoError(t, err)
						return
					}
					if err != nil {
						assert.NotContains(t, err.Error(), secret)
						assert.NotContains(t, err.Error(), secret[:6], "not even a part of it")
					}
				})
			}
		}
	}
}

func TestAMalformedLineIsNamedByItsKeyAndLine(t *testing.T) {
	for in, want := range map[string]string{
		"[Global]\npassword: x\n":            "line 2: [Global] password is not written `password = value`",
		"[Global]\npassword x\n":             "line 2: [Global] password is not written `password = value`",
		"[Global]\nx y\n":                    "line 2: not a `key = value` line in [Global]",
		"password = x\n":                     "line 1: a key outside any section",
		"[Global]\npassword\n":               "line 2: [Global] password has no value",
		"[Global]\ninsecure\n":               "",
		"[Global] password = x\n":            "line 1: text after a section header's ]",
		"[Global\n":                          "line 1: a section header without a closing ]",
		"[Class x]\n":                        "line 1: section header [Class …]: a subsection name must be quoted",
		"[Global]\npassword = \"a\\qb\"\n":   "line 2: [Global] password: a quoted value has an unknown escape",
		"[Global]\ntoken = a\ntoken = b\n":   "line 3: [Global] token is set twice, to different values (also on line 2)",
		"[Global]\nPasswrd = x\n":            `line 2: [Global] unknown key (did you mean "password"?)`,
		"[Global]\nurl = a\n[Global]\nurl=a": "",
	} {
		var c iniSecrets
		saysOrPasses(t, in, want, cfgutil.DecodeINI([]byte(in), &c))
	}
}

// saysOrPasses: the error of decoding in contains want, or there is none
// when want is "".
func saysOrPasses(t *testing.T, in, want string, err error) {
	t.Helper()
	if want == "" {
		assert.NoError(t, err, in)
	} else if assert.Error(t, err, in) {
		assert.Contains(t, err.Error(), want, in)
	}
}

func TestYAMLProblemsNameTheirLine(t *testing.T) {
	for in, want := range map[string]string{
		"auth:\n  region: a\n  regoin: b\n":                 "line 3: auth.regoin: unknown key",
		"auth:\n  key: a\n  key: b\n":                       "line 3: auth.key is set twice (also on line 2)",
		"auth:\n  key x: a\n":                               "line 2: auth: a key that is not a name",
		"passphrase: [a]\n":                                 "line 1: passphrase: cannot use an array here, want a string",
		"- a\n":                                             "line 1: the document must be a mapping",
		"tags: {\"a b\": c}\n":                              "",
		"auth: {key: \"a\\qb\"}\n":                          "not valid YAML",
		"passphrase: \"unterminated\n":                      "not valid YAML",
		"auth:\n\tkey: a\n":                                 "not valid YAML",
		"auth: {region: a}\npassphrase: p\n":                "",
		"base: &b {region: a}\nauth:\n  <<: *b\n  key: k\n": "line 1: base: unknown key",
		"auth:\n  ~: 12345678\n":                            "not valid YAML for a config",
	} {
		var c yamlSecrets
		saysOrPasses(t, in, want, cfgutil.DecodeYAML([]byte(in), &c))
	}
}
