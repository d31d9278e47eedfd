package cloudapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The IDs in the URLs of operationCases.
const (
	uuid1   = "9f3c3b0e-5c55-4a0b-9f8e-2b0b5a8f7c11"
	uuid2   = "0b8e7d7a-1c2b-4e0f-a9d3-51f1e3c2b4a5"
	project = "0123456789abcdef0123456789abcdef"
)

// deployForm is a CloudStack command in a form-encoded body; largeForm one
// with user data longer than what commandOf reads, and lateForm the same with
// the command after it.
var (
	deployForm = url.Values{"command": {"deployVirtualMachine"}, "apiKey": {"k"}, "signature": {"s"}}.Encode()
	largeForm  = url.Values{"command": {"deployVirtualMachine"}, "userdata": {strings.Repeat("A", 2*maxFormBody)}}.Encode()
	lateForm   = url.Values{"a": {strings.Repeat("A", 2*maxFormBody)}, "command": {"deployVirtualMachine"}}.Encode()
)

// operationCases are TestOperationFor's cases: a request (its method, URL,
// body and the service set on its context) and the service and operation its
// metrics are labelled with.
var operationCases = []struct {
	name          string
	method        string
	url           string
	service       string // set with WithService if not empty
	body          string
	contentType   string
	wantService   string
	wantOperation string
}{
	{name: "a Nova server by UUID", method: "GET", url: "https://nova.example:8774/v2.1/servers/" + uuid1,
		wantService: "servers", wantOperation: "GET /v2.1/servers/{id}"},
	{name: "a Nova server with the service set on the context", method: "GET", url: "https://nova.example:8774/v2.1/servers/" + uuid1,
		service: "compute", wantService: "compute", wantOperation: "GET /v2.1/servers/{id}"},
	{name: "a Nova path with a project ID and a query", method: "GET", url: "https://nova.example/v2.1/" + project + "/servers/detail?limit=100&marker=" + uuid2,
		wantService: "servers", wantOperation: "GET /v2.1/{id}/servers/detail"},
	{name: "a Nova server action", method: "POST", url: "https://nova.example/v2.1/servers/" + uuid1 + "/action",
		wantService: "servers", wantOperation: "POST /v2.1/servers/{id}/action"},
	{name: "a Nova flavor by number", method: "GET", url: "https://nova.example/v2.1/flavors/12345",
		wantService: "flavors", wantOperation: "GET /v2.1/flavors/{id}"},
	{name: "a Nova extension name without digits is kept", method: "GET", url: "https://nova.example/v2.1/os-availability-zone/detail",
		wantService: "os-availability-zone", wantOperation: "GET /v2.1/os-availability-zone/detail"},
	{name: "a Nova endpoint under a path prefix", method: "GET", url: "https://devstack.example/compute/v2.1/servers/",
		wantService: "compute", wantOperation: "GET /compute/v2.1/servers"},
	{name: "a Neutron port list with a filter", method: "GET", url: "https://neutron.example:9696/v2.0/ports?device_id=" + uuid1,
		wantService: "ports", wantOperation: "GET /v2.0/ports"},
	{name: "a Neutron floating IP update", method: "PUT", url: "https://neutron.example:9696/v2.0/floatingips/" + uuid1,
		service: "network", wantService: "network", wantOperation: "PUT /v2.0/floatingips/{id}"},
	{name: "an Octavia load balancer status", method: "GET", url: "https://octavia.example:9876/v2/lbaas/loadbalancers/" + uuid1 + "/status",
		wantService: "lbaas", wantOperation: "GET /v2/lbaas/loadbalancers/{id}/status"},
	{name: "an Octavia pool member deletion", method: "DELETE", url: "https://octavia.example:9876/v2/lbaas/pools/" + uuid1 + "/members/" + uuid2,
		service: "load-balancer", wantService: "load-balancer", wantOperation: "DELETE /v2/lbaas/pools/{id}/members/{id}"},
	{name: "a Keystone token request", method: "POST", url: "https://keystone.example:5000/v3/auth/tokens",
		wantService: "auth", wantOperation: "POST /v3/auth/tokens"},
	{name: "a CloudStack command in the query", method: "GET",
		url:         "https://cloudstack.example/client/api?apiKey=AKIA&command=listVirtualMachines&response=json&signature=c2lnbmF0dXJl",
		wantService: "client", wantOperation: "GET listVirtualMachines"},
	{name: "a CloudStack command in a form body", method: "POST", url: "https://cloudstack.example/client/api",
		body: deployForm, contentType: "application/x-www-form-urlencoded",
		wantService: "client", wantOperation: "POST deployVirtualMachine"},
	{name: "a CloudStack command that is not a command name is ignored", method: "GET",
		url:         "https://cloudstack.example/client/api?command=%3Cscript%3E",
		wantService: "client", wantOperation: "GET /client/api"},
	{name: "a form longer than what is read", method: "POST", url: "https://cloudstack.example/client/api",
		body: largeForm, contentType: "application/x-www-form-urlencoded",
		wantService: "client", wantOperation: "POST deployVirtualMachine"},
	{name: "a command beyond what is read is not guessed", method: "POST", url: "https://cloudstack.example/client/api",
		body: lateForm, contentType: "application/x-www-form-urlencoded",
		wantService: "client", wantOperation: "POST /client/api"},
	{name: "a JSON body is not parsed for a command", method: "POST", url: "https://cloudstack.example/client/api",
		body: `{"command":"x"}`, contentType: "application/json",
		wantService: "client", wantOperation: "POST /client/api"},
	{name: "an OCI instance by OCID", method: "GET", url: "https://iaas.us-phoenix-1.oraclecloud.com/20160918/instances/ocid1.instance.oc1.phx.abyhqljt",
		wantService: "instances", wantOperation: "GET /20160918/instances/{id}"},
	{name: "hex strings of 16 or more characters are IDs", method: "GET", url: "https://x.example/v1/images/deadbeefdeadbeef",
		wantService: "images", wantOperation: "GET /v1/images/{id}"},
	{name: "short segments with digits are kept", method: "GET", url: "https://x.example/v2.0/ipv6/abc",
		wantService: "ipv6", wantOperation: "GET /v2.0/ipv6/abc"},
	{name: "the root path has no service", method: "GET", url: "https://x.example/",
		wantService: "unknown", wantOperation: "GET /"},
	{name: "an empty method is a GET", method: "", url: "https://x.example/v3/projects",
		wantService: "projects", wantOperation: "GET /v3/projects"},
}

func TestOperationFor(t *testing.T) {
	t.Parallel()
	for _, tt := range operationCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if tt.service != "" {
				ctx = WithService(ctx, tt.service)
			}
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequestWithContext(ctx, tt.method, tt.url, body)
			require.NoError(t, err)
			req.Method = tt.method // NewRequest turns "" into GET
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}

			service, operation := OperationFor(req)
			assert.Equal(t, tt.wantService, service)
			assert.Equal(t, tt.wantOperation, operation)
			if tt.body != "" {
				got, err := io.ReadAll(req.Body)
				require.NoError(t, err)
				assert.Equal(t, tt.body, string(got), "the request body is left unread")
			}
		})
	}
}

// A server's request (an emulator's) has no GetBody: its form body is read
// for the command and put back for its handler, which parses it whole, be it
// long or chunked. A client's request without GetBody is not read at all.
func TestOperationForLeavesTheFormBodyToWhoeverServesOrSendsIt(t *testing.T) {
	t.Parallel()
	const api = "http://cloudstack.example/client/api"
	for _, tt := range []struct {
		name, body string
		chunked    bool
		want       string
	}{
		{name: "a small form", body: deployForm, want: "POST deployVirtualMachine"},
		{name: "a chunked form", body: deployForm, chunked: true, want: "POST deployVirtualMachine"},
		{name: "a long form", body: largeForm, want: "POST deployVirtualMachine"},
		{name: "a long chunked form", body: largeForm, chunked: true, want: "POST deployVirtualMachine"},
		{name: "a command beyond what is read", body: lateForm, want: "POST /client/api"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, api, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.chunked {
				req.ContentLength = -1
			}
			_, op := OperationFor(req)
			assert.Equal(t, tt.want, op)
			require.NoError(t, req.ParseForm())
			assert.Equal(t, tt.body, req.PostForm.Encode(), "the handler parses the whole body")
		})
	}

	t.Run("a client's request without GetBody", func(t *testing.T) {
		t.Parallel()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, api, io.MultiReader(strings.NewReader(deployForm)))
		require.NoError(t, err)
		req.ContentLength = int64(len(deployForm))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		_, op := OperationFor(req)
		assert.Equal(t, "POST /client/api", op, "its body is the sender's")
		got, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		assert.Equal(t, deployForm, string(got))
	})
}

// A CloudStack command POSTed in a form body is named alike by the client's
// metrics and by the server it reaches (an emulator classifying with
// OperationFor), and the server gets the body the client sent.
func TestBothSidesNameAPostedCommandAlike(t *testing.T) {
	t.Parallel()
	seen := make(chan [2]string, 1) // the operation and the body the server sees
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, op := OperationFor(r)
		_ = r.ParseForm()
		seen <- [2]string{op, r.PostForm.Encode()}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(t)
	tr := newTestTransport(t, cfg, srv.Client().Transport)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/client/api", strings.NewReader(deployForm))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")

	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	_ = readBody(t, resp)
	assert.Equal(t, [2]string{"POST deployVirtualMachine", deployForm}, <-seen)
	assert.InDelta(t, 1.0, counterValue(t, requestsTotal, cfg.Cloud, "client", "POST deployVirtualMachine", "200"), 0)
}

func TestWithServiceIsUsedAsTheServiceLabel(t *testing.T) {
	t.Parallel()
	ctx := WithService(context.Background(), "compute")
	assert.Equal(t, "compute", serviceFrom(ctx))
	assert.Empty(t, serviceFrom(t.Context()))
}
