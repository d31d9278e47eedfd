package oci

import (
	"bytes"
	"crypto"
	"crypto/md5" //nolint:gosec // OCI names an API key by the MD5 of its public key
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Request signatures, verified as OCI verifies them
// (https://docs.oracle.com/en-us/iaas/Content/API/Concepts/signingrequests.htm,
// draft-cavage-http-signatures-08): the Authorization header's keyId names
// the key, its headers list must hold date, (request-target) and host, and for
// POST, PUT and PATCH also content-length, content-type and x-content-sha256
// (which must be the body's SHA-256); the date may be at most 5 minutes off.
// Any failure is 401 NotAuthenticated with OCI's message.

const (
	maxSkew          = 5 * time.Minute
	notAuthenticated = "The required information to complete authentication was not provided or was incorrect."
)

// Services a user may be given rights to (a policy's resource families).
var allRights = []string{"compute", "network", "identity", "loadbalancer", "networkloadbalancer"}

// user is an API key of a user, with the services its policies allow.
type user struct {
	tenancy, user string
	key           *rsa.PublicKey
	rights        map[string]bool
	// principal names who signs (principals.go).
	principal string
}

// addKey adds an API key of userID and returns its fingerprint. Call with mu
// held (or before serving).
func (e *Emulator) addKey(tenancy, userID string, pub *rsa.PublicKey, rights ...string) string {
	fp := fingerprint(pub)
	u := &user{tenancy: tenancy, user: userID, key: pub, rights: map[string]bool{}, principal: "user:" + userID}
	for _, r := range rights {
		u.rights[r] = true
	}
	e.users[tenancy+"/"+userID+"/"+fp] = u
	return fp
}

// AddUser adds a user of the fixture's tenancy whose policies allow only the
// given services (compute, network, identity, loadbalancer,
// networkloadbalancer), and returns its OCID and the fingerprint of key.
func (e *Emulator) AddUser(key *rsa.PublicKey, rights ...string) (userID, fp string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	userID = e.newID("user")
	return userID, e.addKey(e.fx.TenancyID, userID, key, rights...)
}

func fingerprint(pub *rsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := md5.Sum(der) //nolint:gosec // the key's name
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hexes, ":")
}

// authenticate is the user who signed r, or nil and why not (for the log of
// a test; the answer is always OCI's one message). A keyId "ST$<token>" is
// an instance principal's session (instanceprincipal.go).
func (e *Emulator) authenticate(r *http.Request) (*user, string) {
	params, ok := parseSignature(r.Header.Get("Authorization"))
	if !ok {
		return nil, notAuthenticated
	}
	var u *user
	if token, ok := strings.CutPrefix(params["keyId"], "ST$"); ok {
		u = e.sessionUser(token)
	} else {
		e.mu.Lock()
		u = e.users[params["keyId"]]
		e.mu.Unlock()
	}
	if u == nil {
		return nil, notAuthenticated
	}
	if _, ok := e.verifySigned(r, params, u.key, []string{"date", "(request-target)", "host"}); !ok {
		return nil, notAuthenticated
	}
	return u, ""
}

// verifySigned checks r's signature (params) by key: version 1,
// rsa-sha256, over the required headers and, for a body, content-length,
// content-type and x-content-sha256 (the body's SHA-256), dated within
// maxSkew. It returns the body, put back for the handler.
func (e *Emulator) verifySigned(r *http.Request, params map[string]string, key *rsa.PublicKey, required []string) ([]byte, bool) {
	if params["version"] != "1" || params["algorithm"] != "rsa-sha256" {
		return nil, false
	}
	names := strings.Fields(strings.ToLower(params["headers"]))
	var body []byte
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		required = append(slices.Clone(required), "content-length", "content-type", "x-content-sha256")
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(body)
		if r.Header.Get("X-Content-Sha256") != base64.StdEncoding.EncodeToString(sum[:]) {
			return nil, false
		}
	}
	for _, h := range required {
		if !slices.Contains(names, h) {
			return nil, false
		}
	}
	date, err := http.ParseTime(r.Header.Get("Date"))
	if err != nil {
		return nil, false
	}
	if d := e.opts.Clock().Sub(date); d > maxSkew || d < -maxSkew {
		return nil, false
	}
	lines := make([]string, len(names))
	for i, n := range names {
		var v string
		switch n {
		case "(request-target)":
			v = strings.ToLower(r.Method) + " " + r.RequestURI
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		default:
			v = r.Header.Get(n)
		}
		lines[i] = n + ": " + v
	}
	sig, err := base64.StdEncoding.DecodeString(params["signature"])
	if err != nil {
		return nil, false
	}
	digest := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return body, rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) == nil
}

// parseSignature parses `Signature k="v",k="v"`.
func parseSignature(h string) (map[string]string, bool) {
	rest, ok := strings.CutPrefix(h, "Signature ")
	if !ok {
		return nil, false
	}
	params := map[string]string{}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, false
		}
		uq, err := strconv.Unquote(v)
		if err != nil {
			return nil, false
		}
		params[k] = uq
	}
	return params, params["keyId"] != "" && params["signature"] != "" && params["headers"] != ""
}
