// Package csapi is Overcast's client of the CloudStack management server's
// API: every call the cloudstack provider makes, its answers decoded into the
// few fields used, its errors translated into internal/outcome's kinds, and
// the signing. It alone imports net/http; the provider holds its API.
package csapi

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// The client is the one place CloudStack is called: every call the CCM
// makes is a method here (API lists them), every answer is decoded into the
// few fields the CCM uses (calls.go), and every error is translated once
// (translate) into the provider's kinds with the server's own words, the
// query string (apiKey, signature) never in it. Each call is made with its
// caller's context, so that the caller's deadline ends the call, its wait
// for the rate limit and its retries (internal/cloudapi).
//
// Overcast's own client rather than cloudstack-go: the generated SDK costs
// every user of the binary, whatever cloud it runs, ~15 MB of resident
// memory (its pages: 81.1 MiB peak at 500 Nodes on OpenStack with it linked,
// 66.2 without) for the 26 commands used here. Requests carry the parameters
// exactly as cloudstack-go v2.19 sends them (its <Command>Params.toURLValues:
// the same names, lists comma-joined, tags as tags[i].key and tags[i].value
// in the order of their keys, booleans as "true" or "false"), by the same
// method, and are signed as the server verifies them (sign.go): wire_test.go
// holds every call to what the SDK sends. cloudstack-go stays a test
// dependency: the tests drive the emulator with it, as the peer does.

// API is every call the provider makes, and the settings it changes.
type API interface {
	// Set makes s the settings in use (true: the endpoint or the keys
	// changed; the next call uses them).
	Set(s Settings) (bool, error)
	// ServerNow is the server's time now, as the Date of its answers says
	// (false: no answer had a Date yet).
	ServerNow() (time.Time, bool)

	ProjectID(ctx context.Context) (string, error)
	Machines(ctx context.Context) ([]Machine, error)
	Machine(ctx context.Context, id string) (Machine, bool, error)
	MachinesNamed(ctx context.Context, name string) ([]Machine, error)
	MachinesVisible(ctx context.Context) (int, error)
	Network(ctx context.Context, id string) (Network, error)

	AddressesTagged(ctx context.Context, tags map[string]string) ([]Address, error)
	Address(ctx context.Context, id string) (Address, bool, error)
	AddressOf(ctx context.Context, ip string) (Address, bool, error)
	AddressesVisible(ctx context.Context) (int, error)
	Associate(ctx context.Context, n Network, ip string) (id, job string, err error)
	Disassociate(ctx context.Context, id string) (string, error)
	Tag(ctx context.Context, resourceType string, ids []string, tags map[string]string) (string, error)

	Rules(ctx context.Context, keyword string) ([]Rule, error)
	RulesOn(ctx context.Context, addressID string) ([]Rule, error)
	RulesVisible(ctx context.Context) (int, error)
	CreateRule(ctx context.Context, r Rule) (id, job string, err error)
	UpdateRule(ctx context.Context, id, algorithm string) (string, error)
	DeleteRule(ctx context.Context, id string) (string, error)
	RuleMachines(ctx context.Context, id string) ([]string, error)
	Assign(ctx context.Context, id string, machines []string) (string, error)
	Unassign(ctx context.Context, id string, machines []string) (string, error)
	HealthChecks(ctx context.Context, ruleID string) ([]HealthCheck, error)
	CreateHealthCheck(ctx context.Context, ruleID string, h HealthCheck) (string, error)
	DeleteHealthCheck(ctx context.Context, id string) (string, error)

	FirewallRules(ctx context.Context, addressID string) ([]Opening, error)
	CreateFirewallRule(ctx context.Context, addressID string, o Opening) (string, error)
	DeleteFirewallRule(ctx context.Context, id string) (string, error)
	ACLListName(ctx context.Context, id string) (string, error)
	ACLItems(ctx context.Context, aclID string) ([]Opening, error)
	CreateACLItem(ctx context.Context, aclID string, o Opening) (id, job string, err error)
	DeleteACLItem(ctx context.Context, id string) (string, error)

	JobStatus(ctx context.Context, id string) (JobState, error)
	JobsSince(ctx context.Context, since time.Time) (map[string]JobState, error)
}

var _ API = (*Client)(nil)

// pageSize is what each page of a listing asks for at first: the server's
// default default.page.size, which a larger pagesize must not exceed (431).
// A server configured lower says its size in its refusal, and is asked with
// that from then on.
const pageSize = 500

// maxPages bounds a listing (500 × 2,000 = a million objects).
const maxPages = 2000

// Client is the API of one management server, with the account's keys.
type Client struct {
	pageSize atomic.Int64

	mu      sync.Mutex
	global  Settings
	hc      *http.Client // cloudapi's: limits, retries, the attempt timeout
	project string       // the project's UUID ("" for none), resolved once
	// attemptTimeout bounds one attempt of a call (0: cloudapi's default).
	attemptTimeout time.Duration
	// clock is the server's, as the Date of its answers says.
	clock serverClock
}

// ServerNow is the server's time now (false: no answer had a Date yet).
func (cl *Client) ServerNow() (time.Time, bool) { return cl.clock.now() }

// serverClock is the server's clock less ours, learnt from the Date header
// of every answer (whole seconds: within a second).
type serverClock struct {
	skew  atomic.Int64
	known atomic.Bool
}

// now is the server's time now (false: no answer had a Date yet).
func (c *serverClock) now() (time.Time, bool) {
	return time.Now().Add(time.Duration(c.skew.Load())), c.known.Load()
}

// dated is a transport that teaches clock the server's time.
type dated struct {
	next  http.RoundTripper
	clock *serverClock
}

func (d dated) RoundTrip(r *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := d.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if at, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
		got := time.Now()
		// The Date has whole seconds: the server's time was half a second
		// later on average, when it was halfway through.
		d.clock.skew.Store(int64(at.Add(500 * time.Millisecond).Sub(sent.Add(got.Sub(sent) / 2))))
		d.clock.known.Store(true)
	}
	return resp, nil
}

// Settings are what the client is made with: the [Global] keys of the
// cloud-config it reads (the provider's Global).
type Settings struct {
	// APIURL is the management server's API; APIKey and SecretKey the
	// account's keys (secrets: never in an error or a log).
	APIURL, APIKey, SecretKey string
	// SSLNoVerify accepts any TLS certificate (test clouds only).
	SSLNoVerify bool
	// ProjectID is the project's UUID or name ("" for none).
	ProjectID string
	// ReadQPS and WriteQPS limit calls per second (0: the defaults).
	ReadQPS, WriteQPS int
}

// String is the settings without the keys.
func (s Settings) String() string {
	return fmt.Sprintf("api-url %s, project %q", s.APIURL, s.ProjectID)
}

// cloud names the client's calls in metrics and errors (the provider's
// ProviderName).
const cloud = "cloudstack"

// New is a client of the management server s names; it makes no call.
func New(g Settings) (*Client, error) {
	cl := &Client{}
	cl.pageSize.Store(pageSize)
	if _, err := cl.Set(g); err != nil {
		return nil, err
	}
	return cl, nil
}

// defaultWriteQPS limits writes unless api-write-qps says otherwise: twice
// cloudapi's default, for a load balancer takes five writes here (Octavia's,
// two), so that 100 Services created at once get theirs in less than twice
// the time of one (docs/benchmarks.md, figure 6).
const defaultWriteQPS = 100

// Set makes g the settings in use; true when the endpoint or credentials
// changed (the next call uses them).
func (cl *Client) Set(g Settings) (bool, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.hc != nil && cl.global == g {
		return false, nil
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if g.SSLNoVerify {
		base.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the operator's ssl-no-verify, as the peer reads it
	}
	limits := cloudapi.Config{Cloud: cloud, AnswersJSON: true, Endpoint: "[Global] api-url", WriteQPS: defaultWriteQPS, WriteBurst: 2 * defaultWriteQPS, Timeout: cl.attemptTimeout}.WithQPS(g.ReadQPS, g.WriteQPS)
	hc, err := cloudapi.NewClient(limits, dated{next: base, clock: &cl.clock})
	if err != nil {
		return false, err
	}
	if cl.global.ProjectID != g.ProjectID {
		cl.project = ""
	}
	cl.global, cl.hc = g, hc
	return true, nil
}

// SetAttemptTimeout bounds one attempt of each call from now on (0:
// cloudapi's default).
func (cl *Client) SetAttemptTimeout(d time.Duration) error {
	cl.mu.Lock()
	cl.attemptTimeout, cl.hc = d, nil
	g := cl.global
	cl.mu.Unlock()
	_, err := cl.Set(g)
	return err
}

// get and post make a call (call): reads by GET, changes by POST, the
// method cloudstack-go uses for each command (v2.19, each service's
// newRequest or newPostRequest), which the transport's limits (reads and
// writes) and retries (GET only) follow.
func (cl *Client) get(ctx context.Context, command string, p params, out any) error {
	return cl.call(ctx, http.MethodGet, command, p, out)
}

func (cl *Client) post(ctx context.Context, command string, p params, out any) error {
	return cl.call(ctx, http.MethodPost, command, p, out)
}

// call sends command with the parameters p, signed (sign.go), for ctx: the
// caller's deadline ends the call, its wait for the rate limit and its
// retries (internal/cloudapi). The answer is decoded into out (nil:
// ignored) from its envelope; an error answer is an *APIError. Every error
// is translated.
func (cl *Client) call(ctx context.Context, method, command string, p params, out any) error {
	cl.mu.Lock()
	g, hc := cl.global, cl.hc
	cl.mu.Unlock()
	req, err := newRequest(ctx, method, g, command, url.Values(p))
	if err != nil {
		return translate(command, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return translate(command, err)
	}
	defer func() { _ = resp.Body.Close() }()
	// The body is bounded by the transport (cloudapi.Config.MaxResponseBytes).
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return translate(command, err)
	}
	return translate(command, answer(command, resp.StatusCode, body, out))
}

// newRequest is a signed request of command: GET with the parameters in the
// query, the signature last and query-escaped, or POST with them and the
// signature as a form body (cloudstack-go's newRawRequest and PostForm).
func newRequest(ctx context.Context, method string, g Settings, command string, p url.Values) (*http.Request, error) {
	query, signature := sign(p, command, g.APIKey, g.SecretKey, time.Now())
	if method == http.MethodGet {
		return http.NewRequestWithContext(ctx, method, g.APIURL+"?"+query+"&signature="+url.QueryEscape(signature), nil)
	}
	p.Set("signature", signature)
	req, err := http.NewRequestWithContext(ctx, method, g.APIURL, strings.NewReader(p.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// answer decodes the body of an answer of command with status into out, or
// is its error. The server answers 200, or an error with its code as the
// HTTP status (ApiServlet), the same in the body's errorcode; cloudstack-go
// takes any other status for an error, and so does this.
func answer(command string, status int, body []byte, out any) error {
	inner, err := envelope(command, body)
	switch {
	case err != nil && status != http.StatusOK:
		return fmt.Errorf("CloudStack answered %d with no error in its answer: %w", status, err)
	case err != nil:
		return err
	case status != http.StatusOK:
		return answerError(command, status, inner)
	case out == nil:
		return nil
	}
	if err := json.Unmarshal(inner, out); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return nil
}

// envelope is what the answer of command holds: the server wraps every
// answer in one object named for its command ("listvirtualmachinesresponse",
// BaseCmd.getCommandName; "errorresponse" for a command it does not know).
// A lone object of another name is taken too, as cloudstack-go (getRawValue)
// takes the first whatever its name. An empty one is an error: it would
// read as an empty list.
func envelope(command string, body []byte) (json.RawMessage, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	inner, ok := env[strings.ToLower(command)+"response"]
	if !ok && len(env) == 1 {
		for _, v := range env {
			inner, ok = v, true
		}
	}
	if !ok || len(inner) == 0 || string(inner) == "null" {
		return nil, fmt.Errorf("the answer holds no %sresponse", strings.ToLower(command))
	}
	return inner, nil
}

// answerError is the error answer of command (the server's
// ExceptionResponse: errorcode, cserrorcode, errortext). Its code is the
// HTTP status when the body has none.
func answerError(command string, status int, inner json.RawMessage) error {
	var body struct {
		Code   int    `json:"errorcode"`
		CSCode int    `json:"cserrorcode"`
		Text   string `json:"errortext"`
	}
	if err := json.Unmarshal(inner, &body); err != nil {
		return fmt.Errorf("CloudStack answered %d with an error it could not decode: %w", status, err)
	}
	return &APIError{Command: command, Code: cmp.Or(body.Code, status), CSCode: body.CSCode, Text: body.Text}
}

// ProjectID is the configured project's UUID ("" for none): a name is looked
// up once.
func (cl *Client) ProjectID(ctx context.Context) (string, error) {
	cl.mu.Lock()
	g, p := cl.global, cl.project
	cl.mu.Unlock()
	switch {
	case g.ProjectID == "":
		return "", nil
	case p != "":
		return p, nil
	case isUUID(g.ProjectID):
		p = g.ProjectID
	default:
		var err error
		if p, err = cl.projectNamed(ctx, g.ProjectID); err != nil {
			return "", err
		}
	}
	cl.mu.Lock()
	cl.project = p
	cl.mu.Unlock()
	return p, nil
}

// projectNamed is the UUID of the one project named name (listProjects).
func (cl *Client) projectNamed(ctx context.Context, name string) (string, error) {
	p := params{}
	p.set("name", name)
	p.setBool("listall", true)
	var r struct {
		Projects []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"project"`
	}
	if err := cl.get(ctx, "listProjects", p, &r); err != nil {
		return "", err
	}
	id := ""
	for _, pr := range r.Projects {
		if strings.EqualFold(pr.Name, name) {
			if id != "" {
				return "", fmt.Errorf("[Global] project-id: two projects are named %q; give its UUID", name)
			}
			id = pr.ID
		}
	}
	if id == "" {
		return "", outcome.Classify(outcome.ErrRefused, fmt.Errorf("[Global] project-id: no project named %q is visible to the CCM's account", name))
	}
	return id, nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isUUID(s string) bool { return uuidRE.MatchString(s) }

// APIError is an error answer of the management server.
type APIError struct {
	Command string
	// Code is the error code, which is the HTTP status too (431, 530, …);
	// CSCode is the server's exception code (4350, 9999, …).
	Code, CSCode int
	Text         string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("CloudStack answered %d to %s: %s", e.Code, e.Command, e.Text)
}

// translate turns an error of a call of command into the provider's kinds:
// an error answer by its code, anything else (the transport's, redacted: its
// URL carries apiKey and signature) without a kind (transient: retried).
func translate(command string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*APIError](err); ok {
		return outcome.Classify(kindOf(e), e)
	}
	return fmt.Errorf("calling %s: %w", command, cloudapi.RedactError(err))
}

// kindOf is what an error code means (ApiErrorCode, ../shared/facts/cloudstack-api.md
// §2): 431 on an id that names nothing is not found, any other 431 and the
// codes that need a person a refusal; 530 (internal) and 534/535 (resource
// unavailable, allocation) are transient.
func kindOf(e *APIError) error {
	switch e.Code {
	case 401:
		return outcome.ErrAuth
	case 429:
		return outcome.ErrThrottled
	case 431:
		if strings.Contains(e.Text, "entity does not exist") || strings.Contains(e.Text, "Unable to find") {
			return outcome.ErrNotFound
		}
		return outcome.ErrRefused
	case 536: // resource in use
		return outcome.ErrBusy
	case 405, 430, 432, 531, 532, 533, 537:
		return outcome.ErrRefused
	}
	return nil
}

// jobFailure is the error of a job of command that failed with code: its
// result as the server put it ({"errorcode":530,"errortext":"…"}), or its
// text.
func jobFailure(command string, result json.RawMessage, code int) error {
	var body struct {
		Code int    `json:"errorcode"`
		Text string `json:"errortext"`
	}
	if err := json.Unmarshal(result, &body); err != nil || body.Code == 0 {
		text := strings.Trim(string(result), `"`)
		return &APIError{Command: command, Code: code, Text: text}
	}
	e := &APIError{Command: command, Code: body.Code, Text: body.Text}
	return outcome.Classify(kindOf(e), e)
}

// maxPageSizeRE is how the server refuses a pagesize above its
// default.page.size (BaseListCmd).
var maxPageSizeRE = regexp.MustCompile(`exceed max allowed page size value: (\d+)`)

// pages lists every page of a listing: fetch answers one page of size and
// the total count; listing stops at the count, at an empty page, or at
// maxPages. A page size the server refuses is lowered to its own once.
func pages[T any](cl *Client, fetch func(page, size int) ([]T, int, error)) ([]T, error) {
	var all []T
	lowered := false
	for page := 1; page <= maxPages; page++ {
		size := int(cl.pageSize.Load())
		items, count, err := fetch(page, size)
		if m := maxPageSizeRE.FindStringSubmatch(errString(err)); m != nil && !lowered {
			if n, _ := strconv.Atoi(m[1]); n > 0 && n < size {
				cl.pageSize.Store(int64(n))
				lowered, all, page = true, nil, 0
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if len(items) == 0 || len(all) >= count {
			return all, nil
		}
	}
	return nil, fmt.Errorf("listing stopped after %d pages", maxPages)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
