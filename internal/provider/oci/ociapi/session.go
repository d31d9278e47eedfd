package ociapi

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Session tokens, the credentials of instance principals (principal.go) and
// of workload identity (OKE's, workloadidentity.go; the peer's self-managed
// form, tokenexchange.go): an exchange gives a token (a JWT) for a session
// key of ours, and requests are signed with that key as keyId "ST$<token>"
// (sign.go) until the token is due: 5 minutes before its exp, as
// oci-go-sdk renews its tokens (common/auth/jwt.go,
// bufferTimeBeforeTokenExpiration), or half-way through a token that lasts
// less than 10 minutes; or when OCI refuses it (401: forget). A renewal
// that fails is tried again renewRetry later, not sooner: meanwhile a token
// that still holds signs, and without one the failure is every request's
// error (an endpoint that is down is not asked once a request).

const (
	// tokenRenewal is how long before its expiry a token is replaced.
	tokenRenewal = 5 * time.Minute
	// principalTimeout bounds one renewal (every attempt of it).
	principalTimeout = 30 * time.Second
	// renewRetry is how long a token that still holds signs after a
	// renewal failed, before the next try.
	renewRetry = 10 * time.Second
)

// session is a session token and the key it was issued for.
type session struct {
	token    string
	key      *rsa.PrivateKey
	iat, exp time.Time
}

// renewAt is when s is due for renewal.
func (s session) renewAt() time.Time {
	margin := tokenRenewal
	if life := s.exp.Sub(s.iat); !s.iat.IsZero() && life < 2*tokenRenewal {
		margin = life / 2
	}
	return s.exp.Add(-margin)
}

// SessionCache holds the session in use and renews it when due. It is
// the credentials of a principal that calls with session tokens.
type SessionCache struct {
	// what names the principal in errors: "instance principal".
	what string
	// renew makes a new session; its errors hold no secret.
	renew func(ctx context.Context) (session, error)
	now   func() time.Time

	mu  sync.Mutex
	cur session
	// failed is the last renewal's failure, and retryAt when to try again.
	failed  error
	retryAt time.Time
}

var _ Credentials = (*SessionCache)(nil)

// SigningKey is the keyId and key of the session in use, renewed first when
// due (never while a request waits for longer than a renewal takes).
func (c *SessionCache) SigningKey() (string, *rsa.PrivateKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	holds := c.cur.token != "" && now.Before(c.cur.exp)
	waiting := c.failed != nil && now.Before(c.retryAt)
	switch {
	case holds && (now.Before(c.cur.renewAt()) || waiting):
		return "ST$" + c.cur.token, c.cur.key, nil
	case waiting:
		return "", nil, c.failed
	}
	ctx, cancel := context.WithTimeout(context.Background(), principalTimeout)
	defer cancel()
	s, err := c.renew(ctx)
	if err != nil {
		c.failed, c.retryAt = &PrincipalError{what: c.what, err: err}, now.Add(renewRetry)
		if !holds {
			return "", nil, c.failed
		}
		klog.Background().Info("Renewing the session token failed; the current one signs until it expires", "principal", c.what,
			"expires", c.cur.exp.UTC().Format(time.RFC3339), "err", c.failed.Error())
		return "ST$" + c.cur.token, c.cur.key, nil
	}
	c.cur, c.failed = s, nil
	return "ST$" + s.token, s.key, nil
}

// PrincipalError is a session that could not be had: the principal's
// failure (the metadata service, the workload identity endpoint…), not one
// of OCI's API.
type PrincipalError struct {
	what string
	err  error
}

func (e *PrincipalError) Error() string { return e.what + ": " + e.err.Error() }
func (e *PrincipalError) Unwrap() error { return e.err }

// forget drops the token of keyID (OCI refused it), so that the next
// request gets another.
func (c *SessionCache) forget(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur.token != "" && "ST$"+c.cur.token == keyID {
		c.cur = session{}
	}
}

// tokenTimes are a JWT's iat (zero if it has none) and exp claims. Its
// errors never hold the token.
func tokenTimes(token string) (iat, exp time.Time, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, time.Time{}, errors.New("the token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, time.Time{}, errors.New("the token's payload is not base64url")
	}
	var claims struct {
		Iat, Exp float64
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == 0 {
		return time.Time{}, time.Time{}, errors.New("the token has no exp")
	}
	if claims.Iat != 0 {
		iat = time.Unix(int64(claims.Iat), 0)
	}
	return iat, time.Unix(int64(claims.Exp), 0), nil
}

// SelfManaged says whether the sessions are the peer's self-managed
// workload identity's (tokenexchange.go).
func (c *SessionCache) SelfManaged() bool { return c.what == selfManagedWhat }
