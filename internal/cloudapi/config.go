// Package cloudapi is the HTTP plumbing shared by every cloud provider's API
// client (OpenStack via gophercloud, CloudStack, OCI).
//
// NewTransport wraps an http.RoundTripper with, per request:
//
//   - client-side rate limiting, with separate token buckets for reads
//     (GET/HEAD/OPTIONS) and writes (everything else);
//   - bounded retries with full-jitter exponential backoff or the server's
//     Retry-After, restricted to requests that are safe to repeat;
//   - a per-attempt timeout, always inside the caller's context deadline;
//   - Prometheus metrics in k8s.io/component-base/metrics/legacyregistry, so they
//     appear on the controller manager's /metrics endpoint;
//   - klog logging taken from the request's context.
//
// Nothing secret is ever put in errors, logs or metric labels: URLs are reduced
// to scheme://host/path, and header values and query parameters are never
// logged. Note that *http.Client itself wraps transport errors in a *url.Error
// holding the full request URL, query string included; providers whose SDK puts
// credentials in the query (CloudStack's apiKey and signature) must pass such
// errors through RedactError before logging or returning them.
package cloudapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// Defaults applied by NewTransport to the zero value of the matching Config field.
//
// The rate limits guard the cloud against a runaway loop, not against normal
// work: the cloud's own limits are honoured anyway (429 and 503 are retried after
// their Retry-After). Creating a load balancer takes about four writes and a dozen
// reads, so these let 100 Services created at once get theirs in about the time
// one takes (docs/benchmarks.md, figure 6); at 5 writes a second it was 11×.
const (
	// DefaultReadQPS is the default sustained rate of GET, HEAD and OPTIONS requests.
	DefaultReadQPS = 100.0
	// DefaultReadBurst is the default burst of GET, HEAD and OPTIONS requests.
	DefaultReadBurst = 200
	// DefaultWriteQPS is the default sustained rate of POST, PUT, PATCH and DELETE requests.
	DefaultWriteQPS = 50.0
	// DefaultWriteBurst is the default burst of POST, PUT, PATCH and DELETE requests.
	DefaultWriteBurst = 100
	// DefaultMaxRetries is the default number of retries after the first attempt.
	DefaultMaxRetries = 4
	// DefaultBaseBackoff is the default backoff ceiling before the first retry.
	DefaultBaseBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff is the default upper bound of the exponential backoff.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultMaxRetryAfter is the default cap on a server's Retry-After.
	DefaultMaxRetryAfter = 60 * time.Second
	// DefaultTimeout is the default timeout of a single attempt.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes is the default bound on a response body: five
	// times any page a cloud sends (a page of 1,000 Nova servers is about
	// 3 MiB, of 1,000 OCI instances 2 MiB), low enough that a broken or
	// hostile endpoint streaming without end cannot exhaust the CCM's memory:
	// its heap grew 384 MiB at its peak on 1 GiB answers with 64 MiB, under
	// 256 MiB with this (providertest.RunHostile).
	DefaultMaxResponseBytes = 16 << 20
)

// NoRetries as Config.MaxRetries disables retries: every request is sent once.
const NoRetries = -1

// Config configures a transport built by NewTransport. Zero values of numeric
// fields mean "use the default" (see the Default* constants); Cloud is required.
type Config struct {
	// Cloud is the value of the "cloud" metric label, such as "openstack",
	// "cloudstack" or "oci". Required.
	Cloud string

	// ReadQPS and ReadBurst size the client-side token bucket shared by the
	// transport's GET, HEAD and OPTIONS requests. ReadQPS may be +Inf to
	// disable read rate limiting.
	ReadQPS   float64
	ReadBurst int

	// WriteQPS and WriteBurst size the client-side token bucket shared by all
	// other requests (POST, PUT, PATCH, DELETE). WriteQPS may be +Inf to
	// disable write rate limiting.
	WriteQPS   float64
	WriteBurst int

	// MaxRetries is the number of retries after the first attempt. Set it to
	// NoRetries to send every request exactly once.
	MaxRetries int

	// BaseBackoff and MaxBackoff parametrise the full-jitter exponential
	// backoff used when the server gives no Retry-After: before retry n
	// (counting from 0) the transport sleeps a random duration in
	// [0, min(MaxBackoff, BaseBackoff*2^n)].
	BaseBackoff time.Duration
	MaxBackoff  time.Duration

	// MaxRetryAfter caps the delay a server may ask for with Retry-After.
	MaxRetryAfter time.Duration

	// Timeout bounds a single attempt, from sending the request to closing the
	// response body (like http.Client.Timeout, it includes reading the body).
	// The caller's context deadline still applies on top of it.
	Timeout time.Duration

	// MaxResponseBytes bounds a response body: reading past it fails with
	// ErrResponseTooLarge (the SDK's decoding then fails, as for any bad
	// answer), and a response whose Content-Length says more fails at once.
	MaxResponseBytes int64

	// AnswersJSON says that every answer of the API is JSON: its errors
	// (4xx, 5xx) carry a JSON body, and it never answers HTML. An answer
	// that is not is then the error NotAPIError instead of a response: a
	// wrong URL, a login portal or a proxy answered, and the error says so.
	AnswersJSON bool
	// Endpoint names what sets the API's URL ("[Global] api-url"), for
	// NotAPIError.
	Endpoint string

	// Classify names the service and operation of a request for metric labels
	// and logs. It must not return anything derived from secrets or from
	// unbounded sets (such as resource IDs). Defaults to OperationFor.
	Classify func(*http.Request) (service, operation string)
}

// Validate reports every invalid field of c, joined with errors.Join; each
// error names its field. Zero values are valid and mean "use the default".
func (c Config) Validate() error {
	var errs []error
	if c.Cloud == "" {
		errs = append(errs, errors.New("cloudapi: Cloud must be set (it is the \"cloud\" metric label)"))
	}
	errs = append(errs,
		checkQPS("ReadQPS", c.ReadQPS),
		checkNonNegative("ReadBurst", c.ReadBurst),
		checkQPS("WriteQPS", c.WriteQPS),
		checkNonNegative("WriteBurst", c.WriteBurst),
	)
	if c.MaxRetries < NoRetries {
		errs = append(errs, fmt.Errorf("cloudapi: MaxRetries must be >= 0, or NoRetries (-1), got %d", c.MaxRetries))
	}
	errs = append(errs,
		checkDuration("BaseBackoff", c.BaseBackoff),
		checkDuration("MaxBackoff", c.MaxBackoff),
		checkDuration("MaxRetryAfter", c.MaxRetryAfter),
		checkDuration("Timeout", c.Timeout),
	)
	if c.BaseBackoff >= 0 && c.MaxBackoff >= 0 {
		d := c.withDefaults()
		if d.BaseBackoff > d.MaxBackoff {
			errs = append(errs, fmt.Errorf("cloudapi: BaseBackoff (%v) must not exceed MaxBackoff (%v)", d.BaseBackoff, d.MaxBackoff))
		}
	}
	return errors.Join(errs...)
}

func checkQPS(field string, v float64) error {
	if math.IsNaN(v) || v < 0 {
		return fmt.Errorf("cloudapi: %s must be a non-negative number (or +Inf for no limit), got %v", field, v)
	}
	return nil
}

func checkNonNegative(field string, v int) error {
	if v < 0 {
		return fmt.Errorf("cloudapi: %s must not be negative, got %d", field, v)
	}
	return nil
}

func checkDuration(field string, v time.Duration) error {
	if v < 0 {
		return fmt.Errorf("cloudapi: %s must not be negative, got %v", field, v)
	}
	return nil
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	orDefault(&c.MaxResponseBytes, DefaultMaxResponseBytes)
	orDefault(&c.ReadQPS, DefaultReadQPS)
	orDefault(&c.ReadBurst, DefaultReadBurst)
	orDefault(&c.WriteQPS, DefaultWriteQPS)
	orDefault(&c.WriteBurst, DefaultWriteBurst)
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	orDefault(&c.BaseBackoff, DefaultBaseBackoff)
	orDefault(&c.MaxBackoff, DefaultMaxBackoff)
	orDefault(&c.MaxRetryAfter, DefaultMaxRetryAfter)
	orDefault(&c.Timeout, DefaultTimeout)
	if c.Classify == nil {
		c.Classify = OperationFor
	}
	return c
}

// orDefault sets *v to def when it is zero.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// WithQPS is c with the read and write limits an operator configured: each
// given one (> 0) with a burst of twice as many; 0 keeps c's.
func (c Config) WithQPS(read, write int) Config {
	if read > 0 {
		c.ReadQPS, c.ReadBurst = float64(read), 2*read
	}
	if write > 0 {
		c.WriteQPS, c.WriteBurst = float64(write), 2*write
	}
	return c
}
