package cloudapi

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

const (
	// throttleThreshold is the shortest client-side rate limiter wait that is
	// counted as throttling.
	throttleThreshold = 5 * time.Millisecond
	// longThrottle is the rate limiter wait above which the wait is logged at V(2).
	longThrottle = time.Second
	// maxDrain is how much of a retried response's body is read so that its
	// connection can be reused; a longer body is closed unread.
	maxDrain = 4 << 10
)

// NewTransport wraps base (http.DefaultTransport if nil) with the rate
// limiting, retries, per-attempt timeouts, metrics and logging configured by
// cfg. It returns cfg.Validate's error if cfg is invalid. The transport is safe
// for concurrent use; all requests through it share its token buckets.
//
// Retried are: network errors and per-attempt timeouts, and responses 429,
// 502, 503 and 504, for GET, HEAD, OPTIONS, PUT and DELETE; for other methods
// (POST, PATCH) only what the server certainly did not process: 429, 503 with a
// Retry-After, and errors dialling the server. A request whose body cannot be
// rewound (a body and no GetBody) is never retried. The final response is
// returned as is, whatever its status code; errors name the request by method
// and scheme://host/path only and wrap the underlying error.
func NewTransport(cfg Config, base http.RoundTripper) (http.RoundTripper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	registerMetrics()
	cfg = cfg.withDefaults()
	return &transport{
		cfg:    cfg,
		base:   base,
		read:   newLimiter(cfg.ReadQPS, cfg.ReadBurst),
		write:  newLimiter(cfg.WriteQPS, cfg.WriteBurst),
		jitter: fullJitter,
	}, nil
}

// NewClient returns an *http.Client whose transport is NewTransport(cfg, base).
// The client has no overall timeout of its own: requests are bounded by their
// context and by cfg.Timeout per attempt. Errors returned by the client embed
// the full request URL (see RedactError).
func NewClient(cfg Config, base http.RoundTripper) (*http.Client, error) {
	rt, err := NewTransport(cfg, base)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt}, nil
}

func newLimiter(qps float64, burst int) *rate.Limiter {
	if math.IsInf(qps, 1) {
		return rate.NewLimiter(rate.Inf, burst)
	}
	return rate.NewLimiter(rate.Limit(qps), burst)
}

// fullJitter returns a uniformly random duration in [0, d].
func fullJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

type transport struct {
	cfg         Config // with defaults applied
	base        http.RoundTripper
	read, write *rate.Limiter
	jitter      func(time.Duration) time.Duration
	holds       holds
}

// holds are the requests a server answered with a Retry-After, until when:
// the same request from another caller (two Services reading one shared
// security list) waits it out too, not only the retry of the one answered.
type holds struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// holdKey is what makes two requests the same one.
func holdKey(req *http.Request) string {
	if req.URL == nil {
		return req.Method
	}
	return req.Method + " " + req.URL.String()
}

// wait sleeps until the hold on key (if any) has passed.
func (h *holds) wait(ctx context.Context, key string) error {
	h.mu.Lock()
	until, ok := h.until[key]
	h.mu.Unlock()
	if !ok {
		return nil
	}
	return sleep(ctx, time.Until(until))
}

// hold holds key for d, forgetting holds that have passed.
func (h *holds) hold(key string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if h.until == nil {
		h.until = map[string]time.Time{}
	}
	for k, u := range h.until {
		if u.Before(now) {
			delete(h.until, k)
		}
	}
	h.until[key] = now.Add(d)
}

// requestInfo describes the request being sent, for metrics, logs and its
// retries.
type requestInfo struct {
	method, service, operation string
	logger                     klog.Logger
	// key is what a Retry-After holds (holdKey).
	key string
	// bucket and limiter are the client-side limit it waits for.
	bucket  string
	limiter *rate.Limiter
	// idempotent: it may be sent again after a failure whose effect is
	// unknown; hasBody: its body must be rewound to be sent again.
	idempotent, hasBody bool
}

// describe is what RoundTrip needs to know of req.
func (t *transport) describe(req *http.Request) requestInfo {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	service, operation := t.cfg.Classify(req)
	info := requestInfo{
		method:     method,
		service:    orUnknown(service),
		operation:  orUnknown(operation),
		key:        holdKey(req),
		bucket:     "read",
		limiter:    t.read,
		idempotent: isIdempotent(method),
		hasBody:    req.Body != nil && req.Body != http.NoBody,
	}
	if !isRead(method) {
		info.bucket, info.limiter = "write", t.write
	}
	var host, path string
	if req.URL != nil {
		host, path = req.URL.Host, req.URL.Path
	}
	info.logger = klog.FromContext(req.Context()).WithValues(
		"cloud", t.cfg.Cloud, "method", method, "host", host, "path", path, "operation", info.operation)
	return info
}

// RoundTrip implements http.RoundTripper: each attempt waits out a
// Retry-After and the client-side limit, runs under its own timeout, and is
// retried as shouldRetry and planRetry say.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	info := t.describe(req)
	body := req.Body // the body of the next attempt, ours to close until sent
	for attempt := 1; ; attempt++ {
		if err := t.ready(ctx, info); err != nil {
			closeBody(body)
			return nil, t.fail(req, info, attempt, err)
		}
		countCall(ctx)
		a := t.send(req, info, attempt, body)
		body = nil // the base transport closes it
		reason, retry := shouldRetry(ctx, a.ctx, info.idempotent, a.resp, a.err)
		var delay time.Duration
		if retry {
			retry, delay = t.planRetry(ctx, info, attempt, info.hasBody, req.GetBody != nil, a.resp)
		}
		if retry {
			body, retry = t.rewind(req, info, attempt)
		}
		if !retry {
			return t.deliver(req, info, attempt, a)
		}
		code := t.dropForRetry(req, info, attempt, a, reason, delay)
		if err := sleep(ctx, delay); err != nil {
			closeBody(body)
			return nil, t.fail(req, info, attempt, fmt.Errorf("waiting %v to retry after %s: %w", delay, code, err))
		}
	}
}

// ready waits out a Retry-After that holds the request, then the
// client-side limit.
func (t *transport) ready(ctx context.Context, info requestInfo) error {
	if err := t.holds.wait(ctx, info.key); err != nil {
		return fmt.Errorf("waiting out the server's Retry-After: %w", err)
	}
	return t.wait(ctx, info.limiter, info.bucket, info.logger)
}

// sent is one attempt: its answer or error, and its context, which cancel
// ends once the answer is read or dropped.
type sent struct {
	resp   *http.Response
	err    error
	ctx    context.Context
	cancel context.CancelFunc
}

// send makes one attempt with body under the attempt timeout, records it,
// and holds the request for a 429's or 503's Retry-After.
func (t *transport) send(req *http.Request, info requestInfo, attempt int, body io.ReadCloser) sent {
	timeout := attemptTimeout(req.Context(), t.cfg.Timeout)
	attemptCtx, cancel := context.WithTimeout(req.Context(), timeout)
	areq := req.WithContext(attemptCtx)
	areq.Body = body
	start := time.Now()
	resp, err := t.base.RoundTrip(areq) //nolint:bodyclose // closed by deliver or dropForRetry, or the caller's
	elapsed := time.Since(start)
	switch {
	case err != nil && resp != nil:
		closeBody(resp.Body)
		resp = nil
	case err == nil && resp == nil:
		err = errors.New("base transport returned neither response nor error")
	}
	if err != nil && req.Context().Err() == nil && errors.Is(attemptCtx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("attempt timed out after %v: %w", timeout, err)
	}
	t.observe(req, info, attempt, resp, err, elapsed)
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && d > 0 {
			t.holds.hold(info.key, min(d, t.cfg.MaxRetryAfter))
		}
	}
	return sent{resp: resp, err: err, ctx: attemptCtx, cancel: cancel}
}

// rewind is the body of the next attempt; false when it cannot be had.
func (t *transport) rewind(req *http.Request, info requestInfo, attempt int) (io.ReadCloser, bool) {
	if !info.hasBody {
		return req.Body, true
	}
	nb, err := req.GetBody()
	if err != nil {
		info.logger.V(2).Info("Not retrying cloud API request: cannot rewind its body", "attempt", attempt, "err", redactError(err, requestSecrets(req)).Error())
		return nil, false
	}
	return nb, true
}

// deliver is the last attempt's answer to the caller: its error, or its
// answer bounded in size and ending the attempt's context when closed, or an
// answer that is not the API's.
func (t *transport) deliver(req *http.Request, info requestInfo, attempt int, a sent) (*http.Response, error) {
	if a.err != nil {
		a.cancel()
		return nil, t.fail(req, info, attempt, a.err)
	}
	resp := a.resp
	if resp.ContentLength > t.cfg.MaxResponseBytes {
		closeBody(resp.Body)
		a.cancel()
		return nil, t.fail(req, info, attempt, fmt.Errorf("%w: %d bytes announced, at most %d read", ErrResponseTooLarge, resp.ContentLength, t.cfg.MaxResponseBytes))
	}
	resp.Body = limitBody(cancelOnClose(resp.Body, a.cancel), t.cfg.MaxResponseBytes)
	resp.Request = req
	if body := t.notAPI(req, resp); body != "" {
		closeBody(resp.Body)
		return nil, t.fail(req, info, attempt, &NotAPIError{Cloud: t.cfg.Cloud, Status: resp.Status,
			Host: req.URL.Host, Path: req.URL.Path, Body: body, Endpoint: cmp.Or(t.cfg.Endpoint, "the URL of the "+t.cfg.Cloud+" API")})
	}
	return resp, nil
}

// dropForRetry drops an attempt that will be retried (its answer drained,
// its context ended), counts and logs the retry, and returns the attempt's
// code ("error" for no answer).
func (t *transport) dropForRetry(req *http.Request, info requestInfo, attempt int, a sent, reason string, delay time.Duration) string {
	code := "error"
	if a.resp != nil {
		code = strconv.Itoa(a.resp.StatusCode)
		drain(a.resp.Body)
	}
	a.cancel()
	retriesTotal.WithLabelValues(t.cfg.Cloud, info.service, info.operation, reason).Inc()
	if logger := info.logger.V(2); logger.Enabled() {
		kv := []any{"attempt", attempt, "code", code, "reason", reason, "delay", delay}
		if a.err != nil {
			kv = append(kv, "err", redactError(a.err, requestSecrets(req)).Error())
		}
		logger.Info("Retrying cloud API request", kv...)
	}
	return code
}

// observe records the metrics and the V(4) log line of one attempt.
func (t *transport) observe(req *http.Request, info requestInfo, attempt int, resp *http.Response, err error, elapsed time.Duration) {
	code := "error"
	if resp != nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	requestsTotal.WithLabelValues(t.cfg.Cloud, info.service, info.operation, code).Inc()
	requestDuration.WithLabelValues(t.cfg.Cloud, info.service, info.operation).Observe(elapsed.Seconds())
	if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
		serverThrottledTotal.WithLabelValues(t.cfg.Cloud, info.service, info.operation).Inc()
	}
	if logger := info.logger.V(4); logger.Enabled() {
		if err != nil {
			logger.Info("Cloud API request failed", "attempt", attempt, "duration", elapsed, "err", redactError(err, requestSecrets(req)).Error())
		} else {
			logger.Info("Cloud API request", "attempt", attempt, "code", resp.StatusCode, "duration", elapsed)
		}
	}
}

// planRetry decides whether a retryable attempt is retried and after what
// delay: not if retries are exhausted, the body cannot be rewound or the delay
// would end past the context's deadline.
func (t *transport) planRetry(ctx context.Context, info requestInfo, attempt int, hasBody, canRewind bool, resp *http.Response) (bool, time.Duration) {
	if attempt > t.cfg.MaxRetries {
		return false, 0
	}
	if hasBody && !canRewind {
		info.logger.V(4).Info("Not retrying cloud API request: its body cannot be rewound (no GetBody)", "attempt", attempt)
		return false, 0
	}
	delay := t.delay(resp, attempt)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
		info.logger.V(2).Info("Not retrying cloud API request: the delay would pass the context deadline", "attempt", attempt, "delay", delay)
		return false, 0
	}
	return true, delay
}

// delay returns how long to wait before retrying after attempt (counting
// from 1): the server's Retry-After capped at MaxRetryAfter if it sent one,
// else a full-jitter exponential backoff.
func (t *transport) delay(resp *http.Response, attempt int) time.Duration {
	if resp != nil {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return min(d, t.cfg.MaxRetryAfter)
		}
	}
	ceiling := t.cfg.BaseBackoff
	for i := 1; i < attempt && ceiling < t.cfg.MaxBackoff; i++ {
		ceiling *= 2
	}
	return t.jitter(min(ceiling, t.cfg.MaxBackoff))
}

// wait takes a token from limiter, waiting for it if needed.
func (t *transport) wait(ctx context.Context, limiter *rate.Limiter, bucket string, logger klog.Logger) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := limiter.Reserve()
	if !r.OK() {
		return fmt.Errorf("the client-side %s rate limiter cannot grant a request (burst %d)", bucket, limiter.Burst())
	}
	d := r.Delay()
	if d <= 0 {
		return nil
	}
	if d >= throttleThreshold {
		throttledTotal.WithLabelValues(t.cfg.Cloud, bucket).Inc()
		level := 4
		if d >= longThrottle {
			level = 2
		}
		logger.V(level).Info("Waiting for the client-side rate limiter", "bucket", bucket, "delay", d)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		r.Cancel()
		return fmt.Errorf("waiting %v for the client-side %s rate limiter would pass the context deadline: %w", d, bucket, context.DeadlineExceeded)
	}
	if err := sleep(ctx, d); err != nil {
		r.Cancel()
		return fmt.Errorf("waiting for the client-side %s rate limiter: %w", bucket, err)
	}
	return nil
}

// fail builds the error returned for req: it names the request without its
// query and wraps err with secrets scrubbed.
func (t *transport) fail(req *http.Request, info requestInfo, attempt int, err error) error {
	return fmt.Errorf("%s API request %s %s failed (attempt %d): %w",
		t.cfg.Cloud, info.method, RedactURL(req.URL), attempt, redactError(err, requestSecrets(req)))
}

// shouldRetry reports whether an attempt's outcome may be retried, and why.
// Retries are not planned yet: see planRetry.
func shouldRetry(ctx, attemptCtx context.Context, idempotent bool, resp *http.Response, err error) (reason string, retry bool) {
	if ctx.Err() != nil {
		return "", false
	}
	if err != nil {
		reason, beforeSend := classifyError(err, attemptCtx)
		return reason, reason != "" && (idempotent || beforeSend)
	}
	switch code := resp.StatusCode; code {
	case http.StatusTooManyRequests:
		return "429", true
	case http.StatusServiceUnavailable:
		_, hasRetryAfter := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return "503", idempotent || hasRetryAfter
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return strconv.Itoa(code), idempotent
	}
	return "", false
}

// classifyError returns the retry reason of a transport error ("" if it is not
// worth retrying) and whether it certainly happened before the request was
// sent (dialling the server).
func classifyError(err error, attemptCtx context.Context) (reason string, beforeSend bool) {
	var (
		alert   tls.AlertError
		recErr  tls.RecordHeaderError
		certErr *tls.CertificateVerificationError
		uaErr   x509.UnknownAuthorityError
		hostErr x509.HostnameError
		invErr  x509.CertificateInvalidError
	)
	if errors.As(err, &alert) || errors.As(err, &recErr) || errors.As(err, &certErr) ||
		errors.As(err, &uaErr) || errors.As(err, &hostErr) || errors.As(err, &invErr) {
		return "", false
	}
	reason = "network"
	var netErr net.Error
	if attemptCtx.Err() != nil || (errors.As(err, &netErr) && netErr.Timeout()) {
		reason = "timeout"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return reason, opErr.Op == "dial"
	}
	if reason == "timeout" ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return reason, false
	}
	return "", false
}

// parseRetryAfter parses a Retry-After header value, delta seconds or an
// HTTP-date, into a non-negative delay.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true // absurdly large: capped by the caller
		}
		return time.Duration(secs) * time.Second, true
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(when.Sub(now), 0), true
}

func isIdempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func isRead(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// sleep waits for d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func closeBody(body io.ReadCloser) {
	if body != nil {
		_ = body.Close()
	}
}

// drain reads a little of body, so that its connection may be reused, and
// closes it.
func drain(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, maxDrain)
	_ = body.Close()
}

// ErrResponseTooLarge is a response body beyond Config.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("cloud API response too large")

// limitBody fails reads past max bytes of body with ErrResponseTooLarge.
func limitBody(body io.ReadCloser, max int64) io.ReadCloser {
	if body == nil || body == http.NoBody {
		return body
	}
	if _, ok := body.(io.Writer); ok { // 101 Switching Protocols: a stream, not a body
		return body
	}
	return &limitedBody{ReadCloser: body, left: max, max: max}
}

type limitedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly max bytes from a longer one.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.max)
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// cancelOnClose returns body wrapped so that closing it also cancels the
// attempt's context, which must stay alive while the caller reads the body.
func cancelOnClose(body io.ReadCloser, cancel context.CancelFunc) io.ReadCloser {
	if body == nil || body == http.NoBody {
		cancel()
		return body
	}
	b := &cancelBody{ReadCloser: body, cancel: cancel}
	if w, ok := body.(io.Writer); ok { // 101 Switching Protocols
		return &cancelRWBody{cancelBody: b, Writer: w}
	}
	return b
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

type cancelRWBody struct {
	*cancelBody
	io.Writer
}
