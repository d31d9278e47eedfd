// Package cfgtest makes config files for tests of the config parsers: for a
// key that holds a secret, the file written in every malformed shape a person
// (or a tool) gets wrong, so that a test can check that no error shows it.
package cfgtest

import (
	"fmt"
	"strings"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
)

// Shape is a config file with secret written in it, wrongly (or not).
type Shape struct {
	Name string
	File string
}

// Shapes are the files that carry secret as the value of key, each
// malformed in its own way, around valid lines (valid, written in the
// file's format) so that the rest of the file is not what fails.
func Shapes(key cfgutil.SecretKey, secret, valid string) []Shape {
	if key.INI {
		return iniShapes(key.Path, secret, valid)
	}
	return yamlShapes(key.Path, secret, valid)
}

// iniShapes: path is section (, subsection), key.
func iniShapes(path []string, secret, valid string) []Shape {
	head := "[" + path[0] + "]"
	if len(path) == 3 {
		head = fmt.Sprintf("[%s %q]", path[0], path[1])
	}
	k := path[len(path)-1]
	in := func(lines ...string) string {
		return valid + "\n" + head + "\n" + strings.Join(lines, "\n") + "\n"
	}
	return []Shape{
		{"well formed", in(k + " = " + secret)},
		{"YAML-style colon", in(k + ": " + secret)},
		{"no =, a space", in(k + " " + secret)},
		{"no =, a tab", in(k + "\t" + secret)},
		{"colon and =", in(k + ": " + secret + " = x")},
		{"misspelt key", in(k + "x = " + secret)},
		{"upper-case misspelt key", in(strings.ToUpper(k) + "_X = " + secret)},
		{"outside any section", k + " = " + secret + "\n" + valid + "\n"},
		{"malformed outside any section", k + ": " + secret + "\n" + valid + "\n"},
		{"in an unknown section", valid + "\n[Nowhere]\n" + k + " = " + secret + "\n"},
		{"set twice", in(k+" = "+secret, k+" = "+secret+"2")},
		{"set twice, other first", in(k+" = other", k+" = "+secret)},
		{"an unterminated quote", in(k + ` = "` + secret)},
		{"an unknown escape", in(k + ` = "` + secret + `\q"`)},
		{"a lone backslash", in(k + ` = "` + secret + `\`)},
		{"the value alone on a line", in(k+" =", secret)},
		{"the value alone on a line, with an =", in(k+" =", secret+"==")},
		{"the value alone before any section", secret + "\n" + valid + "\n"},
		{"the value alone with an = before any section", secret + "=x\n" + valid + "\n"},
		{"the value as a section", valid + "\n[" + secret + "]\n"},
		{"after a section header", valid + "\n" + head + " " + k + " = " + secret + "\n"},
		{"in a section header", valid + "\n[" + path[0] + " " + k + " = " + secret + "]\n"},
		{"in an unclosed section header", valid + "\n[" + path[0] + " " + k + " = " + secret + "\n"},
		{"in a subsection name", valid + "\n[" + path[0] + " " + secret + "]\n"},
		{"binary garbage around it", in("\x00\xff" + k + "\x01=\x02" + secret + "\xfe")},
		{"a NUL in the key", in(k + "\x00 = " + secret)},
		{"a line too long", in(k+" = "+secret+strings.Repeat("x", 2<<20), k+" = "+secret)},
		{"Windows line ends", strings.ReplaceAll(in(k+": "+secret), "\n", "\r\n")},
	}
}

// yamlShapes: path is the keys from the document's root.
func yamlShapes(path []string, secret, valid string) []Shape {
	nest := func(leaf string) string {
		var b strings.Builder
		for i, p := range path[:len(path)-1] {
			ind := strings.Repeat("  ", i)
			if p == "0" {
				b.WriteString(ind + "- \n")
				continue
			}
			b.WriteString(ind + p + ":\n")
		}
		ind := strings.Repeat("  ", len(path)-1)
		return b.String() + ind + strings.ReplaceAll(leaf, "\n", "\n"+ind) + "\n"
	}
	k := path[len(path)-1]
	return []Shape{
		{"well formed", valid + "\n" + nest(k+": "+secret)},
		{"INI-style =", valid + "\n" + nest(k+" = "+secret)},
		{"no colon", valid + "\n" + nest(k+" "+secret)},
		{"no space after the colon", valid + "\n" + nest(k+":"+secret)},
		{"a tab for indent", valid + "\n" + nest(k+":\n\t"+secret)},
		{"misspelt key", valid + "\n" + nest(k+"x: "+secret)},
		{"the secret as a key with a space", valid + "\n" + nest(k+" "+secret+": x")},
		{"a list where a string goes", valid + "\n" + nest(k+": ["+secret+"]")},
		{"a mapping where a string goes", valid + "\n" + nest(k+": {"+secret+": 1}")},
		{"an unterminated quote", valid + "\n" + nest(k+`: "`+secret)},
		{"an unknown escape", valid + "\n" + nest(k+`: "`+secret+`\q"`)},
		{"set twice", valid + "\n" + nest(k+": "+secret+"\n"+k+": "+secret+"2")},
		{"a bad indent", valid + "\n" + nest(k+": x\n "+secret+": y")},
		{"at the root", secret + "\n" + valid},
		{"a flow mapping left open", valid + "\n" + nest(k+": {a: "+secret)},
		{"binary garbage around it", valid + "\n" + nest(k+": \x00"+secret+"\xff")},
		{"JSON", `{"` + strings.Join(path, `":{"`) + `":"` + secret + `"` + strings.Repeat("}", len(path)) + "x"},
		{"an anchor and alias", valid + "\n" + nest(k+": &a "+secret+"\n"+k+"2: *a")},
		{"an empty key", valid + "\n" + nest(": "+secret)},
		{"a null key", valid + "\n" + nest("~: "+secret)},
		{"a quote inside", valid + "\n" + nest(k+`: ab"`+secret)},
		{"a number key", valid + "\n" + nest("1: "+secret)},
	}
}
