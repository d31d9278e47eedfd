package cloudstack

import (
	"net/url"
	"time"

	"github.com/overcast-ccm/overcast/internal/signature"
)

// The request check of the management server (apache/cloudstack
// server/src/main/java/com/cloud/api/ApiServer.java, verifyRequest): every
// parameter but signature, names sorted case-sensitively (Collections.sort),
// "name=" + URLEncoder.encode(value, UTF-8) with "+" made "%20", joined by "&",
// the whole string lower-cased, HMAC-SHA1 with the secret key, base64. With
// signatureversion=3, expires is mandatory and must not be past.

// Sign is the signature of params with secret, as a client computes it.
func Sign(params url.Values, secret string) string { return signature.CloudStack(params, secret) }

// verified says whether params carry a valid signature of secret, not expired
// at now.
func verified(params url.Values, secret string, now time.Time) bool {
	if !signature.CloudStackValid(params, secret) {
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
