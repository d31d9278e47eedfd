package cloudapi

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// redacted replaces secret fragments in error messages.
const redacted = "[REDACTED]"

// minSecretLen is the shortest query or header value fragment scrubbed from
// error messages on its own; shorter values are only scrubbed as part of the
// whole query string or header value.
const minSecretLen = 6

// RedactURL returns u reduced to scheme://host/path: without user info, query
// string or fragment, so that it can be logged or put in an error.
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// redactURLString is RedactURL for a URL in text form.
func redactURLString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return redacted
	}
	return RedactURL(u)
}

// RedactError returns err with the URLs of the *url.Error values in its chain
// reduced to scheme://host/path and their query parameters scrubbed from its
// message. *http.Client wraps every transport error in such a *url.Error with
// the full request URL, so callers whose requests carry credentials in the
// query (CloudStack's apiKey and signature) must pass client errors through
// RedactError before logging or returning them.
//
// The result still wraps the original chain, so errors.Is and errors.As keep
// working; only the message of the result is guaranteed clean. RedactError
// returns nil for nil.
func RedactError(err error) error {
	return redactError(err, nil)
}

// redactError rewrites the *url.Error values at the top of err's chain and, if
// err's message still contains one of secrets or a fragment of the query of a
// *url.Error deeper in the chain, hides err behind a scrubbed message.
func redactError(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	var replacements []string // old, new pairs for strings.Replacer
	for _, ue := range urlErrors(err) {
		replacements = append(replacements, ue.URL, redactURLString(ue.URL))
		if u, perr := url.Parse(ue.URL); perr == nil {
			secrets = append(secrets, querySecrets(u)...)
			if p, ok := u.User.Password(); ok {
				secrets = append(secrets, p)
			}
		}
	}
	clean := rewriteURLErrors(err)
	msg := clean.Error()

	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if s != "" {
			replacements = append(replacements, s, redacted)
		}
	}
	if len(replacements) == 0 {
		return clean
	}
	if scrubbed := strings.NewReplacer(replacements...).Replace(msg); scrubbed != msg {
		return &redactedError{msg: scrubbed, err: clean}
	}
	return clean
}

// redactedError is an error whose message was scrubbed of secrets.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// rewriteURLErrors rebuilds the chain of *url.Error at the top of err with
// redacted URLs. A *url.Error below another wrapper cannot be rebuilt; its URL
// is scrubbed from the message by redactError instead.
func rewriteURLErrors(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	top, ok := err.(*url.Error) //nolint:errorlint // only the outermost error is rewritten here; inner ones below
	if !ok {
		return err
	}
	return &url.Error{Op: top.Op, URL: redactURLString(top.URL), Err: rewriteURLErrors(top.Err)}
}

// urlErrors returns every *url.Error in err's tree.
func urlErrors(err error) []*url.Error {
	var out []*url.Error
	var walk func(error, int)
	walk = func(err error, depth int) {
		if err == nil || depth > 32 {
			return
		}
		if ue, ok := err.(*url.Error); ok { //nolint:errorlint // this walks the whole tree itself
			out = append(out, ue)
		}
		switch u := err.(type) { //nolint:errorlint // this walks the whole tree itself
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), depth+1)
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, depth+1)
			}
		}
	}
	walk(err, 0)
	return out
}

// querySecrets returns the fragments of u's query that must not appear in
// messages: the whole raw query and every parameter value, raw and decoded.
func querySecrets(u *url.URL) []string {
	if u == nil || u.RawQuery == "" {
		return nil
	}
	out := []string{u.RawQuery}
	for pair := range strings.SplitSeq(u.RawQuery, "&") {
		_, raw, ok := strings.Cut(pair, "=")
		if !ok || len(raw) < minSecretLen {
			continue
		}
		out = append(out, raw)
		if dec, err := url.QueryUnescape(raw); err == nil && dec != raw {
			out = append(out, dec)
		}
	}
	return out
}

// sensitiveHeaderWords mark header names whose values are credentials.
var sensitiveHeaderWords = []string{"auth", "token", "secret", "signature", "password", "key", "cookie", "session", "credential"}

// headerSecrets returns the values of h's credential-bearing headers, whole
// and split into their significant parts (such as the token of "Bearer <token>"
// or the signature="..." of an HTTP signature).
func headerSecrets(h http.Header) []string {
	var out []string
	for name, values := range h {
		lower := strings.ToLower(name)
		if !slices.ContainsFunc(sensitiveHeaderWords, func(w string) bool { return strings.Contains(lower, w) }) {
			continue
		}
		for _, v := range values {
			if v == "" {
				continue
			}
			out = append(out, v)
			for _, part := range strings.FieldsFunc(v, func(r rune) bool {
				return r == ' ' || r == '\t' || r == ',' || r == '"'
			}) {
				if len(part) >= 2*minSecretLen {
					out = append(out, part)
				}
			}
		}
	}
	return out
}

// requestSecrets returns every fragment of req that must not appear in error
// messages.
func requestSecrets(req *http.Request) []string {
	out := querySecrets(req.URL)
	if req.URL != nil && req.URL.User != nil {
		if p, ok := req.URL.User.Password(); ok {
			out = append(out, p)
		}
	}
	return append(out, headerSecrets(req.Header)...)
}
