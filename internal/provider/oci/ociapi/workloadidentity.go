package ociapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// OKE workload identity (useWorkloadIdentity without the environment of the
// peer's self-managed form, tokenexchange.go): the CCM calls as its pod's
// Kubernetes ServiceAccount, which OCI policies name (request.principal.type
// 'workload', its namespace, service_account and cluster_id), as oci-go-sdk's
// OkeWorkloadIdentityConfigurationProvider does it (common/auth:
// resource_principal_key_provider.go, federation_client_oke_workload_identity.go):
// the ServiceAccount token and the PEM of a new session public key are
// POSTed to the cluster's workload identity endpoint,
// https://<KUBERNETES_SERVICE_HOST>:12250/resourcePrincipalSessionTokens
// ("Authorization: Bearer <token>", {"podKey": "<PEM>"}), over HTTPS that
// trusts the cluster's CA alone (ca.crt) and no proxy; the answer is a JSON
// string, the base64 of {"token": "ST$<RPST>"}. Requests are then signed with
// the session key as ST$<RPST>, renewed as session.go says.
//
// Unlike the SDK: the token file is read anew for every exchange (the
// kubelet rotates it) and so is the CA; an exchange with no answer, a 429 or
// a 5xx is tried exchangeAttempts times; errors name the endpoint, the
// status and the likely cause, never a token (the SDK logs the
// ServiceAccount token at debug level). OCI_RESOURCE_PRINCIPAL_VERSION,
// which the SDK requires, is not needed; OCI_RESOURCE_PRINCIPAL_REGION
// stands in for auth.region (config.go).

const (
	proxymuxPort     = "12250"
	sessionTokenPath = "/resourcePrincipalSessionTokens"
	// EnvTokenPath moves the ServiceAccount token (the OCI CLI's
	// variable; the Go SDK takes that path in code only).
	EnvTokenPath = "OCI_KUBERNETES_SERVICE_ACCOUNT_TOKEN_PATH"
	// EnvCAPath moves the cluster's CA (oci-go-sdk's variable).
	EnvCAPath        = "OCI_KUBERNETES_SERVICE_ACCOUNT_CERT_PATH"
	defaultTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	defaultCAPath    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
	// exchangeAttempts bounds the attempts of one renewal.
	exchangeAttempts = 3
)

// WorkloadIdentity is OKE's workload identity endpoint in this pod, and
// what it trades for session tokens.
type WorkloadIdentity struct {
	endpoint          string // base URL: https://host:12250
	tokenPath, caPath string
	now               func() time.Time
	// backoff is the wait before the second attempt, doubled after.
	backoff time.Duration
	// requestToken, when set, gives the ServiceAccount token to trade (a
	// TokenRequest of a Service's ServiceAccount: workloads.go) in place of
	// the file at tokenPath; subject names that ServiceAccount.
	requestToken func(ctx context.Context) (string, error)
	subject      string
}

// newWorkloadIdentity is the workload identity of pr in this pod: the
// endpoint from endpoints.workloadIdentity or KUBERNETES_SERVICE_HOST, the
// token and the CA at their paths, both readable now.
func newWorkloadIdentity(pr Principal) (*WorkloadIdentity, error) {
	w, err := WorkloadEndpoint(pr.WorkloadIdentity, "useWorkloadIdentity")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(w.tokenPath); err != nil {
		return nil, fmt.Errorf("useWorkloadIdentity: the ServiceAccount token (%s, or %s): %w; is automountServiceAccountToken off?", w.tokenPath, EnvTokenPath, err)
	}
	return w, nil
}

// WorkloadEndpoint is OKE's workload identity endpoint in this pod (endpoint,
// else on KUBERNETES_SERVICE_HOST), its CA readable now; what names the
// setting that wants it, in errors.
func WorkloadEndpoint(endpoint, what string) (*WorkloadIdentity, error) {
	w := &WorkloadIdentity{tokenPath: envOr(EnvTokenPath, defaultTokenPath), caPath: envOr(EnvCAPath, defaultCAPath), now: time.Now, backoff: time.Second}
	if endpoint != "" {
		w.endpoint = strings.TrimRight(endpoint, "/")
	} else {
		host := os.Getenv("KUBERNETES_SERVICE_HOST")
		if host == "" {
			return nil, errors.New(what + ": KUBERNETES_SERVICE_HOST is not set (the kubelet sets it in every pod): OKE's workload identity endpoint is on that address, port " + proxymuxPort + "; run overcast-ccm in the cluster, or set endpoints.workloadIdentity")
		}
		w.endpoint = "https://" + net.JoinHostPort(host, proxymuxPort)
	}
	if _, err := w.clusterCA(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return w, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// ForServiceAccount are the credentials of ServiceAccount subject
// (namespace/name) at w's endpoint, exchanged for the tokens token asks for.
func (w *WorkloadIdentity) ForServiceAccount(subject string, token func(ctx context.Context) (string, error)) *SessionCache {
	e := *w
	e.subject, e.requestToken = subject, token
	return &SessionCache{what: "the workload identity of ServiceAccount " + subject, renew: e.exchange, now: e.now}
}

// Sessions are the workload identity's credentials.
func (w *WorkloadIdentity) Sessions() *SessionCache {
	return &SessionCache{what: "workload identity", renew: w.exchange, now: w.now}
}

// exchangeError is an exchange that failed; again says whether another
// attempt may succeed.
type exchangeError struct {
	msg   string
	again bool
}

func (e *exchangeError) Error() string { return e.msg }

// exchange gets a session token for a new session key (one for all the
// attempts: the SDK makes one for every renewal), trying again a failure
// that may pass.
func (w *WorkloadIdentity) exchange(ctx context.Context) (session, error) {
	key, der, err := sessionKey()
	if err != nil {
		return session{}, err
	}
	body, err := json.Marshal(map[string]string{"podKey": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))})
	if err != nil {
		return session{}, err
	}
	return sessionOf(ctx, w.backoff, key, w.host(), func() (string, error) { return w.exchangeOnce(ctx, body) })
}

// sessionKey is a new session key and its public key (PKIX, DER).
func sessionKey() (*rsa.PrivateKey, []byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	return key, pub, err
}

// sessionOf trades with once, tried as attempts says, and is the session of
// the token it gets for key; where names the endpoint in errors.
func sessionOf(ctx context.Context, backoff time.Duration, key *rsa.PrivateKey, where string, once func() (string, error)) (session, error) {
	var token string
	err := attempts(ctx, backoff, func() (err error) {
		token, err = once()
		return err
	})
	if err != nil {
		return session{}, err
	}
	iat, exp, err := tokenTimes(token)
	if err != nil {
		return session{}, fmt.Errorf("the session token of %s: %w", where, err)
	}
	return session{token: token, key: key, iat: iat, exp: exp}, nil
}

// attempts runs try until it succeeds, or fails for good (an error that is
// not an *exchangeError that may pass), or exchangeAttempts times, waiting
// backoff before the second attempt and twice as long before each next one;
// it returns the last error.
func attempts(ctx context.Context, backoff time.Duration, try func() error) error {
	for attempt := 1; ; attempt++ {
		err := try()
		var x *exchangeError
		if err == nil || attempt == exchangeAttempts || !errors.As(err, &x) || !x.again {
			return err
		}
		select {
		case <-time.After(backoff):
			backoff *= 2
		case <-ctx.Done():
			return err
		}
	}
}

// exchangeOnce makes one attempt of an exchange with body (the session
// public key): the RPST, or why not.
func (w *WorkloadIdentity) exchangeOnce(ctx context.Context, body []byte) (string, error) {
	saToken, err := w.serviceAccountToken(ctx)
	if err != nil {
		return "", err
	}
	pool, err := w.clusterCA()
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.endpoint+sessionTokenPath, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+saToken)
	req.Header.Set("Content-Type", "application/json")
	requestID := opcRequestID()
	req.Header.Set("opc-request-id", requestID)
	// A transport of its own (the CA may have changed; no proxy), as the
	// SDK's; its connection closed once done, the idle timeout a backstop.
	tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, IdleConnTimeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: principalTimeout}).Do(req)
	if err != nil {
		return "", w.unreachable(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", &exchangeError{msg: fmt.Sprintf("reading the answer of %s: %v", w.host(), err), again: true}
	}
	if resp.StatusCode != http.StatusOK {
		return "", w.refused(resp.StatusCode, data, saToken, requestID)
	}
	rpst, err := decodeSessionToken(data)
	if err != nil {
		return "", fmt.Errorf("the answer of %s: %w (opc-request-id %s)", w.host(), err, requestID)
	}
	return rpst, nil
}

// serviceAccountToken reads the ServiceAccount token, checked as the SDK
// checks it: a JWT with an exp not past (the SDK wants 5 minutes left; a
// token the kubelet is about to rotate may have less, the endpoint judges).
func (w *WorkloadIdentity) serviceAccountToken(ctx context.Context) (string, error) {
	if w.requestToken != nil {
		return w.requestToken(ctx)
	}
	data, err := os.ReadFile(w.tokenPath)
	if err != nil {
		return "", fmt.Errorf("reading the ServiceAccount token (%s): %w", EnvTokenPath, err)
	}
	token := strings.TrimSpace(string(data))
	_, exp, err := tokenTimes(token)
	if err != nil {
		return "", fmt.Errorf("the ServiceAccount token in %s: %w", w.tokenPath, err)
	}
	if !w.now().Before(exp) {
		return "", fmt.Errorf("the ServiceAccount token in %s expired at %s: the kubelet renews a projected token before then; is the file one?", w.tokenPath, exp.UTC().Format(time.RFC3339))
	}
	return token, nil
}

// clusterCA is the pool of the cluster's CA, the one the endpoint's
// certificate is checked against.
func (w *WorkloadIdentity) clusterCA() (*x509.CertPool, error) {
	return pemPool(w.caPath, "the cluster's CA", EnvCAPath)
}

// host is the endpoint's host:port, for messages.
func (w *WorkloadIdentity) host() string {
	if u, err := url.Parse(w.endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return w.endpoint
}

// tokenName names the ServiceAccount token traded, for messages.
func (w *WorkloadIdentity) tokenName() string {
	if w.subject != "" {
		return "the token of ServiceAccount " + w.subject
	}
	return "the ServiceAccount token in " + w.tokenPath
}

// decodeSessionToken is the RPST of the endpoint's answer: a JSON string,
// the base64 of {"token": "ST$<RPST>"}. Its errors never hold the answer.
func decodeSessionToken(data []byte) (string, error) {
	var wrapped string
	if err := json.Unmarshal(data, &wrapped); err != nil {
		return "", errors.New("not a JSON string (the base64 of the token)")
	}
	inner, err := base64.StdEncoding.DecodeString(wrapped)
	if err != nil {
		return "", errors.New("not base64")
	}
	var t struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(inner, &t); err != nil {
		return "", errors.New("not the base64 of {\"token\": …}")
	}
	rpst, ok := strings.CutPrefix(t.Token, "ST$")
	if !ok || rpst == "" {
		return "", errors.New("its token is not ST$<session token>")
	}
	return rpst, nil
}

// opcRequestID is a request's id as oci-go-sdk makes them (common/utils:
// three random 16-byte hex strings joined by slashes).
func opcRequestID() string {
	parts := make([]string, 3)
	for i := range parts {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		parts[i] = hex.EncodeToString(b)
	}
	return strings.Join(parts, "/")
}

// unreachable explains an exchange that got no answer.
func (w *WorkloadIdentity) unreachable(err error) error {
	var verify *tls.CertificateVerificationError
	if errors.As(err, &verify) {
		return &exchangeError{msg: fmt.Sprintf("the certificate of the workload identity endpoint %s is not of the cluster's CA (%s, or %s): %v", w.host(), w.caPath, EnvCAPath, err)}
	}
	return &exchangeError{again: true, msg: fmt.Sprintf("no answer from the workload identity endpoint %s: %v; OKE serves it on enhanced clusters, on the Kubernetes API's address (KUBERNETES_SERVICE_HOST), port %s", w.host(), err, proxymuxPort)}
}

// refused explains an answer other than 200: the status, the likely cause,
// and what the endpoint said (any copy of the ServiceAccount token in it
// blotted out).
func (w *WorkloadIdentity) refused(status int, data []byte, saToken, requestID string) error {
	again := false
	var cause string
	switch {
	case status == http.StatusUnauthorized:
		cause = w.tokenName() + " was refused: expired, revoked, or not this cluster's"
	case status == http.StatusForbidden:
		cause = "workload identity needs an OKE enhanced cluster (oci-go-sdk reads a 403 so)"
	case status == http.StatusNotFound:
		cause = "no workload identity endpoint there: is " + w.host() + " the API address of an OKE cluster?"
	case status == http.StatusBadRequest:
		cause = "the request was refused as malformed"
	case status == http.StatusTooManyRequests || status >= 500:
		cause, again = fmt.Sprintf("the endpoint is unavailable (tried %d times)", exchangeAttempts), true
	default:
		cause = "an answer oci-go-sdk does not expect either"
	}
	said := strings.ReplaceAll(string(data), saToken, "<ServiceAccount token>")
	var b struct{ Code, Message string }
	if json.Unmarshal([]byte(said), &b) == nil && b.Code != "" {
		said = b.Code + ": " + b.Message
	}
	if said = strings.TrimSpace(said); len(said) > 200 {
		said = strings.ToValidUTF8(said[:200], "") + "…"
	}
	if said != "" {
		said = "; it said: " + said
	}
	return &exchangeError{again: again, msg: fmt.Sprintf("the workload identity endpoint %s answered %d %s: %s (opc-request-id %s)%s",
		w.host(), status, http.StatusText(status), cause, requestID, said)}
}
