package cloudstack

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/outcome"
)

// The gateway is the one place cloudstack-go is called: every call the CCM
// makes is a method here, every answer is turned into the few fields the CCM
// uses, and every error is translated once (translate) into the provider's
// kinds with the server's own words, the query string (apiKey, signature) never
// in it. cloudstack-go takes no context: each call's client carries its
// caller's in the transport (cs), so that the caller's deadline ends the call,
// its wait for the rate limit and its retries (internal/cloudapi).

// pageSize is what each page of a listing asks for at first: the server's
// default default.page.size, which a larger pagesize must not exceed (431).
// A server configured lower says its size in its refusal, and is asked with
// that from then on.
const pageSize = 500

// maxPages bounds a listing (500 × 2,000 = a million objects).
const maxPages = 2000

type gateway struct {
	pageSize atomic.Int64

	mu      sync.Mutex
	global  Global
	hc      *http.Client // cloudapi's: limits, retries, the attempt timeout
	project string       // the project's UUID ("" for none), resolved once
	// attemptTimeout bounds one attempt of a call (0: cloudapi's default).
	attemptTimeout time.Duration
	// clock is the server's, as the Date of its answers says.
	clock serverClock
}

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

func newGateway(g Global) (*gateway, error) {
	gw := &gateway{}
	gw.pageSize.Store(pageSize)
	if _, err := gw.set(g); err != nil {
		return nil, err
	}
	return gw, nil
}

// defaultWriteQPS limits writes unless api-write-qps says otherwise: twice
// cloudapi's default, for a load balancer takes five writes here (Octavia's,
// two), so that 100 Services created at once get theirs in less than twice
// the time of one (docs/benchmarks.md, figure 6).
const defaultWriteQPS = 100

// set makes g the settings in use; true when the endpoint or credentials
// changed (the next call uses them).
func (gw *gateway) set(g Global) (bool, error) {
	gw.mu.Lock()
	defer gw.mu.Unlock()
	if gw.hc != nil && gw.global == g {
		return false, nil
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if g.SSLNoVerify {
		base.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the operator's ssl-no-verify, as the peer reads it
	}
	limits := cloudapi.Config{Cloud: ProviderName, AnswersJSON: true, Endpoint: "[Global] api-url", WriteQPS: defaultWriteQPS, WriteBurst: 2 * defaultWriteQPS, Timeout: gw.attemptTimeout}.WithQPS(g.APIReadQPS, g.APIWriteQPS)
	hc, err := cloudapi.NewClient(limits, dated{next: base, clock: &gw.clock})
	if err != nil {
		return false, err
	}
	if gw.global.ProjectID != g.ProjectID {
		gw.project = ""
	}
	gw.global, gw.hc = g, hc
	return true, nil
}

// cs is a client for calls made for ctx. cloudstack-go takes no context, so
// each client's transport gives every request its caller's: a call the
// server never answers ends at the caller's deadline, not at the attempt's
// timeout. A client is cheap (a few hundred small allocations, next to a
// call's round trip).
func (gw *gateway) cs(ctx context.Context) *cs.CloudStackClient {
	gw.mu.Lock()
	g, hc := gw.global, gw.hc
	gw.mu.Unlock()
	return cs.NewClient(g.APIURL, g.APIKey, g.SecretKey, !g.SSLNoVerify,
		cs.WithHTTPClient(&http.Client{Transport: withContext{ctx: ctx, next: hc.Transport}, Timeout: hc.Timeout}))
}

// followUp is the context of a call that must follow one just made whatever
// happens to its caller (an address just associated gets its tags, or is given
// back when they could not be put): the caller's values without its
// cancellation, bounded on its own.
func followUp(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// build makes calls' parameters: cloudstack-go's New…Params read nothing of
// their client, so one client made once serves every call (calls go through
// cs, with their caller's context).
var build = cs.NewClient("", "", "", true)

// withContext sends each request with its caller's context.
type withContext struct {
	ctx  context.Context
	next http.RoundTripper
}

func (w withContext) RoundTrip(r *http.Request) (*http.Response, error) {
	return w.next.RoundTrip(r.WithContext(w.ctx))
}

// projectID is the configured project's UUID ("" for none): a name is looked
// up once.
func (gw *gateway) projectID(ctx context.Context) (string, error) {
	gw.mu.Lock()
	g, p := gw.global, gw.project
	gw.mu.Unlock()
	switch {
	case g.ProjectID == "":
		return "", nil
	case p != "":
		return p, nil
	case isUUID(g.ProjectID):
		p = g.ProjectID
	default:
		client := gw.cs(ctx)
		params := client.Project.NewListProjectsParams()
		params.SetName(g.ProjectID)
		params.SetListall(true)
		r, err := client.Project.ListProjects(params)
		if err != nil {
			return "", translate("listProjects", err)
		}
		for _, pr := range r.Projects {
			if strings.EqualFold(pr.Name, g.ProjectID) {
				if p != "" {
					return "", fmt.Errorf("[Global] project-id: two projects are named %q; give its UUID", g.ProjectID)
				}
				p = pr.Id
			}
		}
		if p == "" {
			return "", outcome.Classify(outcome.ErrRefused, fmt.Errorf("[Global] project-id: no project named %q is visible to the CCM's account", g.ProjectID))
		}
	}
	gw.mu.Lock()
	gw.project = p
	gw.mu.Unlock()
	return p, nil
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

// sdkErrorRE is how cloudstack-go (v2.19) words the server's error answer.
var sdkErrorRE = regexp.MustCompile(`^CloudStack API error (\d+) \(CSExceptionErrorCode: (\d+)\): (?s)(.*)$`)

// translate turns an error of a call of command into the provider's kinds:
// an error answer by its code, anything else (the transport's) redacted and
// without a kind (transient: retried).
func translate(command string, err error) error {
	if err == nil {
		return nil
	}
	m := sdkErrorRE.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("calling %s: %w", command, cloudapi.RedactError(err))
	}
	code, _ := strconv.Atoi(m[1])
	csCode, _ := strconv.Atoi(m[2])
	e := &APIError{Command: command, Code: code, CSCode: csCode, Text: m[3]}
	return outcome.Classify(kindOf(e), e)
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

// jobFailure is the error of a job that failed: its result as the server put
// it ({"errorcode":530,"errortext":"…"}), or its text.
func jobFailure(command string, r *cs.QueryAsyncJobResultResponse) error {
	var body struct {
		Code int    `json:"errorcode"`
		Text string `json:"errortext"`
	}
	if err := json.Unmarshal(r.Jobresult, &body); err != nil || body.Code == 0 {
		text := strings.Trim(string(r.Jobresult), `"`)
		return &APIError{Command: command, Code: r.Jobresultcode, Text: text}
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
func pages[T any](gw *gateway, fetch func(page, size int) ([]T, int, error)) ([]T, error) {
	var all []T
	lowered := false
	for page := 1; page <= maxPages; page++ {
		size := int(gw.pageSize.Load())
		items, count, err := fetch(page, size)
		if m := maxPageSizeRE.FindStringSubmatch(errString(err)); m != nil && !lowered {
			if n, _ := strconv.Atoi(m[1]); n > 0 && n < size {
				gw.pageSize.Store(int64(n))
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
