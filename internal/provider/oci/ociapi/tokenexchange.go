package ociapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Self-managed workload identity: oci-cloud-controller-manager's
// useWorkloadIdentity (since v1.34.1), which its OCI_WORKLOAD_IDENTITY_*
// environment sets up. The CCM trades its pod's Kubernetes ServiceAccount
// token at an OCI IAM identity domain (one that trusts the cluster's token
// issuer: an identity propagation trust) for a session token bound to a
// session key of ours, as oci-go-sdk's TokenExchangeConfigurationProvider
// does it (common/auth: workload_identity_federation.go and
// tokenExchangeFederationClient in federation_client.go), which the peer
// builds from that environment (pkg/cloudprovider/providers/oci/config):
//
//   - POST <OCI_WORKLOAD_IDENTITY_DOMAIN_URL>/oauth2/v1/token, a form
//     (application/x-www-form-urlencoded): grant_type
//     urn:ietf:params:oauth:grant-type:token-exchange, requested_token_type
//     (default urn:oci:token-type:oci-rpst, a resource principal session
//     token; with it res_type, and rpst_exp when set), subject_token_type
//     (default jwt), subject_token (the ServiceAccount token), public_key
//     (the standard base64 of the session public key's DER, PKIX; an RSA
//     key of 3072 bits, as the SDK's for this exchange).
//   - Authenticated by "Authorization: Basic base64(<client id>:<client
//     secret>)" of the domain's OAuth application, or, with
//     OCI_WORKLOAD_IDENTITY_USE_INSTANCE_PRINCIPAL_FOR_TOKEN_EXCHANGE=true,
//     signed by the instance principal (principal.go) as OCI signs requests.
//   - The answer, 200: {"token": "<JWT>"}; requests are then signed with the
//     session key as keyId ST$<JWT>, renewed as session.go says.
//
// The peer chooses this form whenever useWorkloadIdentity is set (without
// OCI_WORKLOAD_IDENTITY_DOMAIN_URL it refuses to start); Overcast chooses it
// when OCI_WORKLOAD_IDENTITY_DOMAIN_URL is set, and OKE's endpoint
// (workloadidentity.go) when no OCI_WORKLOAD_IDENTITY_* variable is.
//
// Unlike the SDK: the ServiceAccount token is read anew for every exchange
// (so is the SDK's, through the peer's issuer) and checked first (not empty,
// not expired); an exchange with no answer, a 429 or a 5xx is tried
// exchangeAttempts times (the SDK retries all but 4xx, 3 times); redirects
// are not followed; errors name the domain's host, the status and the
// likely cause, never a token or the client secret (the SDK logs the
// request's body, which holds the ServiceAccount token, when a 4xx comes
// back). OCI_WORKLOAD_IDENTITY_PUBLIC_KEY is ignored, as the SDK ignores it
// (it sends the session key in its place).

// The environment of the self-managed form, the peer's names.
const (
	EnvDomainURL          = "OCI_WORKLOAD_IDENTITY_DOMAIN_URL"
	EnvDomainClientID     = "OCI_WORKLOAD_IDENTITY_CLIENT_ID"
	EnvDomainClientSecret = "OCI_WORKLOAD_IDENTITY_CLIENT_SECRET"
	EnvDomainResourceType = "OCI_WORKLOAD_IDENTITY_RESOURCE_TYPE"
	EnvDomainSubjectType  = "OCI_WORKLOAD_IDENTITY_SUBJECT_TOKEN_TYPE"
	EnvDomainTokenType    = "OCI_WORKLOAD_IDENTITY_REQUESTED_TOKEN_TYPE"
	EnvDomainTokenPath    = "OCI_WORKLOAD_IDENTITY_TOKEN_PATH"
	EnvDomainRPSTExp      = "OCI_WORKLOAD_IDENTITY_RPST_EXP"
	EnvDomainPublicKey    = "OCI_WORKLOAD_IDENTITY_PUBLIC_KEY"
	EnvDomainViaInstance  = "OCI_WORKLOAD_IDENTITY_USE_INSTANCE_PRINCIPAL_FOR_TOKEN_EXCHANGE"
	// EnvCABundle is oci-go-sdk's CA bundle, which replaces the system's
	// CAs for its HTTPS (the domain's certificate is checked against it).
	EnvCABundle = "OCI_DEFAULT_CERTS_PATH"

	domainTokenPath    = "/oauth2/v1/token"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeRPST      = "urn:oci:token-type:oci-rpst"
	// domainKeyBits is the session key's size, the SDK's for this exchange.
	domainKeyBits = 3072
	// selfManagedWhat names the self-managed form's principal in errors.
	selfManagedWhat = "self-managed workload identity"
)

// DomainEnv are the variables of the self-managed form.
var DomainEnv = []string{EnvDomainURL, EnvDomainClientID, EnvDomainClientSecret, EnvDomainResourceType, EnvDomainSubjectType,
	EnvDomainTokenType, EnvDomainTokenPath, EnvDomainRPSTExp, EnvDomainPublicKey, EnvDomainViaInstance}

// Getenv is a variable's value, trimmed as the peer trims it.
func Getenv(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// WorkloadIdentitySessions are the session tokens of useWorkloadIdentity: the
// self-managed form's when OCI_WORKLOAD_IDENTITY_DOMAIN_URL is set, else
// OKE's, unless another variable of the self-managed form is set (then the
// peer's environment lacks its URL: an error, as the peer's).
func WorkloadIdentitySessions(pr Principal) (*SessionCache, error) {
	if Getenv(EnvDomainURL) != "" {
		x, err := newTokenExchange(pr)
		if err != nil {
			return nil, err
		}
		return x.Sessions(), nil
	}
	for _, name := range DomainEnv {
		if Getenv(name) != "" {
			return nil, fmt.Errorf("useWorkloadIdentity: %s is set but %s is not: oci-cloud-controller-manager's self-managed workload identity needs the identity domain's URL (https://idcs-….identity.oraclecloud.com); for OKE's workload identity, set no OCI_WORKLOAD_IDENTITY_* variable", name, EnvDomainURL)
		}
	}
	w, err := newWorkloadIdentity(pr)
	if err != nil {
		return nil, err
	}
	return w.Sessions(), nil
}

// tokenExchange is the self-managed workload identity of a pod.
type tokenExchange struct {
	// tokenURL is the domain's token endpoint, host its host for messages.
	tokenURL, host string
	// fields are the form's fields but the session key and the subject token.
	fields url.Values
	// clientID and clientSecret are the domain's OAuth application's, unless
	// instance (the instance principal) signs the exchange.
	clientID, clientSecret string
	instance               *SessionCache
	tokenPath, caBundle    string
	now                    func() time.Time
	// backoff is the wait before the second attempt, doubled after.
	backoff time.Duration
}

// newTokenExchange is the self-managed workload identity the environment
// describes, every problem of it at once, each naming its variable (never a
// secret's value).
func newTokenExchange(pr Principal) (*tokenExchange, error) {
	x := &tokenExchange{tokenPath: Getenv(EnvDomainTokenPath), caBundle: Getenv(EnvCABundle), now: time.Now, backoff: time.Second}
	if x.tokenPath == "" {
		x.tokenPath = defaultTokenPath
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf("useWorkloadIdentity: "+format, a...)) }
	var msg string
	if x.tokenURL, x.host, msg = domainTokenURL(Getenv(EnvDomainURL)); msg != "" {
		add("%s: %s", EnvDomainURL, msg)
	}
	if err := x.readFields(); err != nil {
		errs = append(errs, err)
	}
	if strings.EqualFold(Getenv(EnvDomainViaInstance), "true") {
		x.instance = NewInstancePrincipal(pr).Sessions()
	} else {
		x.clientID, x.clientSecret = Getenv(EnvDomainClientID), Getenv(EnvDomainClientSecret)
		for _, v := range []struct{ name, value string }{{EnvDomainClientID, x.clientID}, {EnvDomainClientSecret, x.clientSecret}} {
			if v.value == "" {
				add("%s is not set: the identity domain's OAuth application (its client id and secret) authenticates the exchange, unless %s=true", v.name, EnvDomainViaInstance)
			}
		}
	}
	if _, err := os.Stat(x.tokenPath); err != nil {
		add("the ServiceAccount token (%s, or %s): %v; is automountServiceAccountToken off?", x.tokenPath, EnvDomainTokenPath, err)
	}
	if x.caBundle != "" {
		if _, err := x.roots(); err != nil {
			add("%v", err)
		}
	}
	if len(errs) == 0 && Getenv(EnvDomainPublicKey) != "" {
		klog.Background().Info("Ignoring " + EnvDomainPublicKey + ": the exchange sends the public key of a session key made for it, as oci-go-sdk does")
	}
	return x, errors.Join(errs...)
}

// readFields sets the form's fixed fields from the environment.
func (x *tokenExchange) readFields() error {
	requested, subject := Getenv(EnvDomainTokenType), Getenv(EnvDomainSubjectType)
	if requested == "" {
		requested = tokenTypeRPST
	}
	if subject == "" {
		subject = "jwt"
	}
	x.fields = url.Values{"grant_type": {grantTokenExchange}, "requested_token_type": {requested}, "subject_token_type": {subject}}
	resType := Getenv(EnvDomainResourceType)
	if resType == "" {
		// The peer requires it whatever the token type; the SDK, for an RPST.
		return fmt.Errorf("useWorkloadIdentity: %s is not set: the resource type of the session tokens (res_type), which oci-cloud-controller-manager requires", EnvDomainResourceType)
	}
	if requested == tokenTypeRPST {
		x.fields.Set("res_type", resType)
		if exp := Getenv(EnvDomainRPSTExp); exp != "" {
			x.fields.Set("rpst_exp", exp)
		}
	}
	return nil
}

// domainTokenURL is the token endpoint of the domain at raw and its host, or
// what is wrong with raw (which never repeats it: it could hold a password).
// The SDK appends /oauth2/v1/token to the URL's path; a URL that already
// ends so is taken as it is.
func domainTokenURL(raw string) (tokenURL, host, problem string) {
	const want = "the identity domain's URL, https://idcs-….identity.oraclecloud.com"
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "", "", "not set"
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "", "", "not " + want
	case u.User != nil:
		return "", "", "holds a user or password: the application's credentials go in " + EnvDomainClientID + " and " + EnvDomainClientSecret
	case u.Scheme == "http" && !IsLoopback(u.Hostname()):
		return "", "", "plain http is allowed to a loopback address only (the ServiceAccount token and the client secret go there)"
	case u.RawQuery != "" || u.Fragment != "":
		return "", "", "has a query or a fragment: it is " + want
	}
	switch strings.TrimRight(u.Path, "/") {
	case "":
		u.Path = domainTokenPath
	case domainTokenPath:
		u.Path = domainTokenPath
	default:
		return "", "", "has a path: it is " + want + " (" + domainTokenPath + " is added)"
	}
	return u.String(), u.Host, ""
}

// sessions are the self-managed workload identity's credentials.
func (x *tokenExchange) Sessions() *SessionCache {
	return &SessionCache{what: selfManagedWhat, renew: x.exchange, now: x.now}
}

// exchange gets a session token for a new session key (one for all the
// attempts, as the SDK's), trying again a failure that may pass.
func (x *tokenExchange) exchange(ctx context.Context) (session, error) {
	key, err := rsa.GenerateKey(rand.Reader, domainKeyBits)
	if err != nil {
		return session{}, err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return session{}, err
	}
	pub := base64.StdEncoding.EncodeToString(der)
	return sessionOf(ctx, x.backoff, key, "the identity domain "+x.host, func() (string, error) { return x.exchangeOnce(ctx, pub) })
}

// exchangeOnce makes one attempt of an exchange for the session public key
// pub: the session token, or why not.
func (x *tokenExchange) exchangeOnce(ctx context.Context, pub string) (string, error) {
	subject, err := x.subjectToken()
	if err != nil {
		return "", err
	}
	form := maps.Clone(x.fields)
	form.Set("public_key", pub)
	form.Set("subject_token", subject)
	body := []byte(form.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.tokenURL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Date", x.now().UTC().Format(http.TimeFormat))
	keyID, err := x.authenticate(req, body)
	if err != nil {
		return "", err
	}
	client, done, err := x.client()
	if err != nil {
		return "", err
	}
	defer done()
	resp, err := client.Do(req)
	if err != nil {
		return "", x.unreachable(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", &exchangeError{msg: fmt.Sprintf("reading the answer of the identity domain %s: %v", x.host, err), again: true}
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusUnauthorized && x.instance != nil {
			x.instance.forget(keyID)
		}
		return "", x.refused(resp.StatusCode, data, subject)
	}
	var out struct {
		Token string `json:"token"`
	}
	if json.Unmarshal(data, &out) != nil || out.Token == "" {
		return "", fmt.Errorf("the answer of the identity domain %s is not {\"token\": …}", x.host)
	}
	return out.Token, nil
}

// authenticate makes req (of body) the application's (Basic) or the
// instance principal's (signed); it returns the keyId that signed it.
func (x *tokenExchange) authenticate(req *http.Request, body []byte) (string, error) {
	if x.instance == nil {
		req.SetBasicAuth(x.clientID, x.clientSecret)
		return "", nil
	}
	keyID, key, err := x.instance.SigningKey()
	if err != nil {
		return "", fmt.Errorf("signing the exchange as the instance (%s=true): %w", EnvDomainViaInstance, err)
	}
	return keyID, sign(req, body, keyID, key, x.now())
}

// client is an HTTP client of the domain, through the environment's proxy
// (as the SDK's), its certificate checked against the system's CAs or
// OCI_DEFAULT_CERTS_PATH's (read anew); done closes its connections.
func (x *tokenExchange) client() (*http.Client, func(), error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.IdleConnTimeout = 10 * time.Second
	if x.caBundle != "" {
		pool, err := x.roots()
		if err != nil {
			return nil, nil, err
		}
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	}
	return &http.Client{Transport: tr, Timeout: principalTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, tr.CloseIdleConnections, nil
}

// roots is the pool of OCI_DEFAULT_CERTS_PATH's CAs.
func (x *tokenExchange) roots() (*x509.CertPool, error) {
	return pemPool(x.caBundle, "the CA bundle", EnvCABundle)
}

// pemPool is the pool of the PEM certificates of the file at path, what
// (named by the environment variable env) in errors.
func pemPool(path, what, env string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s (%s): %w", what, env, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s (%s, %s) holds no PEM certificate", what, env, path)
	}
	return pool, nil
}

// subjectToken reads the ServiceAccount token: not empty, and, when it is a
// JWT (the default subject token type), not expired.
func (x *tokenExchange) subjectToken() (string, error) {
	data, err := os.ReadFile(x.tokenPath)
	if err != nil {
		return "", fmt.Errorf("reading the ServiceAccount token (%s): %w", EnvDomainTokenPath, err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the ServiceAccount token file %s is empty", x.tokenPath)
	}
	if _, exp, err := tokenTimes(token); err == nil && !x.now().Before(exp) {
		return "", fmt.Errorf("the ServiceAccount token in %s expired at %s: the kubelet renews a projected token before then; is the file one?", x.tokenPath, exp.UTC().Format(time.RFC3339))
	}
	return token, nil
}

// unreachable explains an exchange that got no answer.
func (x *tokenExchange) unreachable(err error) error {
	var verify *tls.CertificateVerificationError
	if errors.As(err, &verify) {
		trust := "the system's CAs"
		if x.caBundle != "" {
			trust = EnvCABundle + "'s (" + x.caBundle + ")"
		}
		return &exchangeError{msg: fmt.Sprintf("the certificate of the identity domain %s is not of %s: %v", x.host, trust, err)}
	}
	return &exchangeError{again: true, msg: fmt.Sprintf("no answer from the identity domain %s: %v; is %s the domain's URL, and is it reachable from the pod (HTTPS_PROXY)?", x.host, err, EnvDomainURL)}
}

// refused explains an answer other than 200: the status, the likely cause,
// and what the domain said, RFC 6749's {"error", "error_description"} or
// OCI's {"code", "message"} (any copy of the ServiceAccount token or the
// client secret blotted out).
func (x *tokenExchange) refused(status int, data []byte, subject string) error {
	var b struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
		Code        string `json:"code"`
		Message     string `json:"message"`
	}
	if json.Unmarshal(data, &b) == nil {
		b.Description = cmp.Or(b.Description, b.Message)
		b.Error = cmp.Or(b.Error, b.Code)
	}
	said := string(data)
	if b.Error != "" {
		said = strings.TrimSpace(b.Error + ": " + b.Description)
	}
	for _, secret := range []string{subject, x.clientSecret} {
		if secret != "" {
			said = strings.ReplaceAll(said, secret, "<redacted>")
		}
	}
	if said = strings.TrimSpace(said); len(said) > 200 {
		said = strings.ToValidUTF8(said[:200], "") + "…"
	}
	if said != "" {
		said = "; it said: " + said
	}
	cause, again := x.cause(status, b.Error)
	return &exchangeError{again: again, msg: fmt.Sprintf("the identity domain %s answered %d %s: %s%s", x.host, status, http.StatusText(status), cause, said)}
}

// cause is the likely cause of a refusal of status with the OAuth error
// code, and whether another attempt may pass.
func (x *tokenExchange) cause(status int, code string) (string, bool) {
	subject := "the ServiceAccount token in " + x.tokenPath
	switch {
	case (status == http.StatusUnauthorized || code == "invalid_client") && x.instance != nil:
		return "the domain refused the instance principal's signature (" + EnvDomainViaInstance + "): the instance's dynamic group must be allowed the exchange", false
	case status == http.StatusUnauthorized || code == "invalid_client":
		return "the domain refused its OAuth application: " + EnvDomainClientID + " and " + EnvDomainClientSecret + " must be an active confidential application of this domain", false
	case code == "unsupported_grant_type" || code == "unauthorized_client":
		return "the application may not use the token exchange grant: allow it in the application's configuration", false
	case code == "invalid_grant" || code == "invalid_request" || status == http.StatusBadRequest:
		return subject + " or a field of the exchange was refused: the domain must trust the cluster's ServiceAccount issuer (an identity propagation trust), and " +
			EnvDomainResourceType + ", " + EnvDomainTokenType + ", " + EnvDomainSubjectType + " and " + EnvDomainRPSTExp + " be values it takes", false
	case status == http.StatusForbidden:
		return "the domain forbids the exchange to this application or principal", false
	case status == http.StatusNotFound:
		return "no token endpoint there: " + EnvDomainURL + " must be the identity domain's URL (https://idcs-….identity.oraclecloud.com)", false
	case status == http.StatusTooManyRequests || status >= 500:
		return fmt.Sprintf("the domain is unavailable (tried %d times)", exchangeAttempts), true
	}
	return "an answer oci-go-sdk does not expect either", false
}
