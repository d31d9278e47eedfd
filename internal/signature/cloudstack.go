// Package signature is how a cloud's requests are signed where the CCM and
// the cloud's emulator must agree byte for byte: one implementation, below
// both, checked against the cloud's own SDK in the provider's tests
// (internal/provider/cloudstack/csapi/wire_test.go) and against the server's rule
// here.
package signature

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // HMAC-SHA1 is what the management server verifies, not our choice
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
)

// CloudStackQuery is p as the CloudStack management server rebuilds it to
// check a signature (apache/cloudstack server/src/main/java/com/cloud/api/
// ApiServer.java, verifyRequest), before it lower-cases it: every parameter
// but signature, names sorted case-sensitively (Collections.sort), each
// "name=" and its value URL-encoded as Java's URLEncoder with "+" as "%20",
// joined by "&". It is a valid query string as it is.
func CloudStackQuery(p url.Values) string {
	names := make([]string, 0, len(p))
	for name := range p {
		if name != "signature" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		for _, v := range p[name] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(name)
			b.WriteByte('=')
			b.WriteString(javaURLEncode(v))
		}
	}
	return b.String()
}

// CloudStack is the signature of p with secret: HMAC-SHA1 of the lower-cased
// CloudStackQuery, base64.
func CloudStack(p url.Values, secret string) string {
	return base64.StdEncoding.EncodeToString(mac(p, secret))
}

// CloudStackValid says whether p carries secret's signature (in constant
// time), whatever else the server checks (expires).
func CloudStackValid(p url.Values, secret string) bool {
	got, err := base64.StdEncoding.DecodeString(p.Get("signature"))
	return err == nil && len(got) > 0 && hmac.Equal(got, mac(p, secret))
}

// mac is the HMAC-SHA1 the server computes of p with secret.
func mac(p url.Values, secret string) []byte {
	h := hmac.New(sha1.New, []byte(secret))
	h.Write([]byte(strings.ToLower(CloudStackQuery(p))))
	return h.Sum(nil)
}

// javaURLEncode is java.net.URLEncoder.encode(s, "UTF-8") with "+" made
// "%20", as ApiServer encodes a value to sign it: A-Z a-z 0-9 . - * _ stay,
// every other byte is %XX in upper case. (cloudstack-go's EncodeValues
// differs on "~", which Go's QueryEscape keeps: a value with one fails the
// server's check.)
func javaURLEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '*', c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteString("%20")
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
