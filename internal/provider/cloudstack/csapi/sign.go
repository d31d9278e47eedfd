package csapi

import (

	//nolint:gosec // HMAC-SHA1 is what the management server verifies, not our choice

	"net/url"
	"time"

	"github.com/overcast-ccm/overcast/internal/signature"
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
func sign(p url.Values, command, apiKey, secret string, now time.Time) (query, sig string) {
	p.Set("command", command)
	p.Set("response", "json")
	p.Set("apiKey", apiKey)
	p.Set("signatureversion", "3")
	p.Set("expires", now.UTC().Add(expiresIn).Format(time.RFC3339))
	return signature.CloudStackQuery(p), signature.CloudStack(p, secret)
}
