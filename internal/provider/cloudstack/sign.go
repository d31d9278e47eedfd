package cloudstack

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // HMAC-SHA1 is what the management server verifies, not our choice
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"time"
)

// How a call is signed: as the management server verifies it (apache/
// cloudstack server/src/main/java/com/cloud/api/ApiServer.java,
// verifyRequest), with what cloudstack-go (v2.19, cloudstack/cloudstack.go,
// newRawRequest and EncodeValues) adds to every call, so that the server
// sees the same requests as from the SDK:
//
//   - command, response=json and apiKey;
//   - signatureversion=3 and expires, fifteen minutes ahead on our clock in
//     RFC 3339: the server refuses a request past it, so a captured URL
//     cannot be replayed later;
//   - the signature: every parameter but signature, sorted by name
//     (case-sensitively, as Collections.sort), each "name=" and its value
//     URL-encoded as Java's URLEncoder with "+" as "%20", joined by "&",
//     the whole string lower-cased, HMAC-SHA1 with the secret key, base64.
//
// The secret and the signature are never in an error or a log: the
// transport's errors are redacted (translate), and nothing here fails.

// expiresIn is how long a signed request stays valid (cloudstack-go's).
const expiresIn = 15 * time.Minute

// sign adds the parameters every call carries to p and answers p's
// canonical form (the query of a GET, unsigned) and its signature.
func sign(p url.Values, command, apiKey, secret string, now time.Time) (query, signature string) {
	p.Set("command", command)
	p.Set("response", "json")
	p.Set("apiKey", apiKey)
	p.Set("signatureversion", "3")
	p.Set("expires", now.UTC().Add(expiresIn).Format(time.RFC3339))
	query = canonical(p)
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(strings.ToLower(query)))
	return query, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// canonical is p as the server rebuilds it to check the signature, before
// lower-casing: signature left out, names sorted, values encoded as Java's
// URLEncoder encodes them. It is a valid query string as it is.
func canonical(p url.Values) string {
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

// javaURLEncode is java.net.URLEncoder.encode(s, "UTF-8") with "+" made
// "%20", as ApiServer encodes a value to sign it: A-Z a-z 0-9 . - * _ stay,
// every other byte is %XX. (cloudstack-go's EncodeValues differs on "~",
// which Go's QueryEscape keeps: a value with one fails its signature check.)
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
