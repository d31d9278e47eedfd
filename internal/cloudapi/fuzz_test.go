package cloudapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Retry-After comes from the server: any value is parsed without panicking, and an
// accepted one is never negative.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "1", "120", "-5", "1.5", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "garbage"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, now)
		if ok && d < 0 {
			t.Fatalf("parseRetryAfter(%q) = %s, a negative wait", v, d)
		}
	})
}

// Any request path and query is classified without panicking, and the operation
// never carries the query string (where CloudStack keeps its API key).
func FuzzOperationFor(f *testing.F) {
	for _, s := range []string{"/v2.1/servers/9f3c3b0e-5c55-4a0b-9f8e-2b0b5a8f7c11", "/?command=listVirtualMachines&apiKey=SECRET&signature=x", "/", "//", "/v2.0/lbaas/loadbalancers/1/status", "/20160918/instances/ocid1.instance.oc1..aaaa"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		u, err := url.Parse("https://cloud.example" + path)
		if err != nil {
			return
		}
		req := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}}
		_, op := OperationFor(req)
		if q := u.Query().Get("apiKey"); len(q) > 3 && strings.Contains(op, q) && !strings.Contains(u.Path, q) {
			t.Fatalf("operation %q carries the apiKey", op)
		}
		if red := RedactURL(u); strings.Contains(red, "?") {
			t.Fatalf("RedactURL kept a query: %q", red)
		}
	})
}
