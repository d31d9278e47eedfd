package cloudstack

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/url"
	"sort"
	"strings"
	"time"
)

// The request check of the management server (apache/cloudstack
// server/src/main/java/com/cloud/api/ApiServer.java, verifyRequest): every
// parameter but signature, names sorted case-sensitively (Collections.sort),
// "name=" + URLEncoder.encode(value, UTF-8) with "+" made "%20", joined by "&",
// the whole string lower-cased, HMAC-SHA1 with the secret key, base64. With
// signatureversion=3, expires is mandatory and must not be past.

// canonical is the string the server signs for params.
func canonical(params url.Values) string {
	names := make([]string, 0, len(params))
	for k := range params {
		if k != "signature" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		for _, v := range params[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(javaURLEncode(v))
		}
	}
	return strings.ToLower(b.String())
}

// javaURLEncode is java.net.URLEncoder.encode(s, "UTF-8") with "+" replaced
// by "%20": A-Z a-z 0-9 . - * _ stay, every other byte is %XX (upper case).
func javaURLEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
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

// Sign is the signature of params with secret, as a client computes it.
func Sign(params url.Values, secret string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(canonical(params)))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// verified says whether params carry a valid signature of secret, not expired
// at now.
func verified(params url.Values, secret string, now time.Time) bool {
	got, err := base64.StdEncoding.DecodeString(params.Get("signature"))
	if err != nil || len(got) == 0 {
		return false
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(canonical(params)))
	if !hmac.Equal(got, mac.Sum(nil)) {
		return false
	}
	if params.Get("signatureversion") == "3" {
		exp, ok := parseDate(params.Get("expires"))
		if !ok || exp.Before(now) {
			return false
		}
	}
	return true
}

// parseDate reads the date forms CloudStack takes: RFC 3339 ("…Z", "+00:00")
// and its own "+0000".
func parseDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05-0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// csDate formats a time as CloudStack answers it ("2021-10-04T09:24:38+0000").
func csDate(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05-0700") }
