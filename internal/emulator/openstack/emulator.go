package openstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/l4proxy"
)

// ErrNotFound is returned by the direct-state methods for an unknown id.
var ErrNotFound = errors.New("not found")

// Options configures an Emulator. The zero value is usable.
type Options struct {
	// Region of every catalog entry; default "RegionOne".
	Region string
	// Latency is added to every API call (not to /_emulator).
	Latency time.Duration
	// ProvisioningDelay is how long Octavia objects stay PENDING_* after a
	// mutation; 0 means they are ACTIVE (or gone) on the next request.
	ProvisioningDelay time.Duration
	// TokenTTL is the lifetime of Keystone tokens; default 1h.
	TokenTTL time.Duration
	// Seed seeds the generated ids and the random faults (Fault.Rate).
	Seed int64
	// PrivateCIDR is the tenant subnet, an IPv4 prefix of /8 to /24; default
	// 10.0.0.0/24. The dev cluster uses a loopback one (127.0.60.0/24) so that
	// its simulated kubelets can listen on their servers' addresses; the
	// benchmark a /16, for thousands of servers and load balancer VIPs.
	PrivateCIDR string
	// ServeTraffic serves each load balancer's listeners on its VIP and
	// floating IP, forwarding to its members (see dataplane.go). PrivateCIDR and
	// PublicCIDR must then be loopback prefixes (Start refuses otherwise).
	ServeTraffic bool
	// StrandGraphChildren makes Octavia behave as the Octavia 11.0.0 (Zed,
	// Debian 12 packages) of the test harness does, measured 2026-11-23: a load
	// balancer created fully populated (with listeners, and their pools, members
	// and monitors) becomes ACTIVE, but the objects created with it stay
	// PENDING_CREATE for good, and so immutable (409); a cascade delete of the
	// load balancer still removes them. Objects created later settle normally.
	StrandGraphChildren bool
	// PublicCIDR is the external network's subnet, where floating IPs come from
	// (from its 10th address on); default 203.0.113.0/24 (floating IPs
	// .10–.250). Addresses only: nothing is ever sent to them.
	PublicCIDR string
}

// Emulator is an in-memory OpenStack. It is an http.Handler and can also
// listen by itself (Start). All methods are safe for concurrent use.
type Emulator struct {
	opts   Options
	mux    *http.ServeMux
	ctl    *http.ServeMux
	noAuth map[string]bool // route patterns that need no token
	done   chan struct{}

	mu        sync.Mutex
	clock     func() time.Time // read under mu
	latency   time.Duration
	provDelay time.Duration
	idRand    *rand.Rand
	faultRand *rand.Rand
	faults    []*faultEntry
	faultSeq  int
	macSeq    uint32

	callsMu sync.Mutex
	calls   map[callKey]int // guarded by callsMu

	fx Fixture

	// Keystone
	tokens      map[string]*token
	users       map[string]*user // by id
	appCreds    map[string]*appCred
	projectName string

	// Nova
	servers *store[*server]
	flavors *store[*flavor]
	images  map[string]string // id -> name

	// Neutron
	networks   *store[*network]
	subnets    *store[*subnet]
	ports      *store[*port]
	portsByDev map[string][]string // device_id -> port ids
	fips       *store[*floatingIP]
	fipByPort  map[string]string
	routers    *store[*router]
	secGroups  *store[*secGroup]
	sgRules    *store[*sgRule]
	overflow   map[string]int // network id -> overflow subnets added

	// Octavia
	lbs        *store[*loadBalancer]
	listeners  *store[*listener]
	pools      *store[*lbPool]
	members    *store[*lbMember]
	monitors   *store[*healthMonitor]
	pendingLBs map[string]bool
	defaultSG  string

	srvMu sync.Mutex
	srv   *http.Server
	url   string

	dpMu   sync.Mutex
	dpErrs map[string]string // load balancer → why the data plane cannot serve it
}

// New returns an emulator with its fixture (see Fixture).
func New(opts Options) *Emulator {
	if opts.Region == "" {
		opts.Region = "RegionOne"
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	seed := uint64(opts.Seed)
	e := &Emulator{
		opts:       opts,
		mux:        http.NewServeMux(),
		ctl:        http.NewServeMux(),
		noAuth:     map[string]bool{},
		done:       make(chan struct{}),
		clock:      time.Now,
		latency:    opts.Latency,
		provDelay:  opts.ProvisioningDelay,
		idRand:     rand.New(rand.NewPCG(seed, 0x6f70656e737461)),
		faultRand:  rand.New(rand.NewPCG(seed, 0x6661756c7473)),
		calls:      map[callKey]int{},
		tokens:     map[string]*token{},
		users:      map[string]*user{},
		appCreds:   map[string]*appCred{},
		servers:    newStore[*server](),
		flavors:    newStore[*flavor](),
		images:     map[string]string{},
		networks:   newStore[*network](),
		subnets:    newStore[*subnet](),
		ports:      newStore[*port](),
		portsByDev: map[string][]string{},
		fips:       newStore[*floatingIP](),
		fipByPort:  map[string]string{},
		routers:    newStore[*router](),
		secGroups:  newStore[*secGroup](),
		sgRules:    newStore[*sgRule](),
		overflow:   map[string]int{},
		lbs:        newStore[*loadBalancer](),
		listeners:  newStore[*listener](),
		pools:      newStore[*lbPool](),
		members:    newStore[*lbMember](),
		monitors:   newStore[*healthMonitor](),
		pendingLBs: map[string]bool{},
		dpErrs:     map[string]string{},
	}
	e.routeKeystone()
	e.routeNova()
	e.routeNeutron()
	e.routeOctavia()
	e.routeControl()
	e.mu.Lock()
	e.seedFixture()
	e.mu.Unlock()
	return e
}

// Start listens on addr (for example "127.0.0.1:0") and serves in the
// background until Close.
func (e *Emulator) Start(addr string) error {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	if e.srv != nil {
		return errors.New("openstack emulator: already started")
	}
	if err := checkServeTraffic(e.opts); err != nil {
		return fmt.Errorf("openstack emulator: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("openstack emulator: listen: %w", err)
	}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	e.url = "http://" + ln.Addr().String()
	go func() { _ = e.srv.Serve(ln) }()
	if e.opts.ServeTraffic {
		go e.runDataPlane(l4proxy.NewManager(l4proxy.Options{}))
	}
	return nil
}

// URL is the base URL, "http://127.0.0.1:PORT", once started; "" before.
func (e *Emulator) URL() string {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	return e.url
}

// Close stops the server started by Start and releases hanging requests.
func (e *Emulator) Close() error {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	select {
	case <-e.done:
	default:
		close(e.done)
	}
	if e.srv == nil {
		return nil
	}
	err := e.srv.Close()
	e.srv = nil
	return err
}

// SetLatency changes the latency added to every API call.
func (e *Emulator) SetLatency(d time.Duration) {
	e.mu.Lock()
	e.latency = d
	e.mu.Unlock()
}

// SetProvisioningDelay changes how long Octavia mutations stay pending. It
// applies to mutations made after the call.
func (e *Emulator) SetProvisioningDelay(d time.Duration) {
	e.mu.Lock()
	e.provDelay = d
	e.mu.Unlock()
}

// lock takes the state lock, settles due Octavia transitions and returns the
// current time of the emulator's clock.
func (e *Emulator) lock() time.Time {
	e.mu.Lock()
	now := e.clock()
	e.settleLBs(now)
	return now
}

// ServeHTTP serves the emulated APIs and the /_emulator control endpoints.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_emulator" || strings.HasPrefix(r.URL.Path, "/_emulator/") {
		e.ctl.ServeHTTP(w, r)
		return
	}
	service := serviceOf(r.URL.Path)
	_, pattern := e.mux.Handler(r)
	route := routeTemplate(r.Method, pattern, service)
	rec := &statusRecorder{ResponseWriter: w, counted: func(code int) { e.countCall(service, r.Method, route, code) }}
	defer func() {
		if rec.code == 0 { // no response: the client gave up, or the emulator closed
			e.countCall(service, r.Method, route, 0)
		}
	}()

	e.mu.Lock()
	latency := e.latency
	f := e.matchFault(service, r.Method, route, e.clock())
	e.mu.Unlock()

	if latency > 0 && !e.wait(r.Context(), latency) {
		return // the client gave up
	}
	if f != nil {
		e.applyFault(rec, r, service, f)
		return
	}
	if pattern != "" && !e.noAuth[pattern] && !e.authorized(r) {
		writeUnauthorized(rec)
		return
	}
	if pattern == "" {
		notFound(rec, service, "The resource could not be found.")
		return
	}
	e.mux.ServeHTTP(rec, r)
}

// wait sleeps for d unless the request is cancelled or the emulator closed.
func (e *Emulator) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-e.done:
		return false
	}
}

func serviceOf(path string) string {
	p := strings.TrimPrefix(path, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		p = p[:i]
	}
	switch p {
	case "identity", "compute", "network", "load-balancer":
		return p
	}
	return "unknown"
}

// routeTemplate turns a mux pattern ("GET /compute/v2.1/servers/{id}") into
// the route reported by Calls, with every wildcard spelled {id}.
func routeTemplate(method, pattern, service string) string {
	if pattern == "" {
		return method + " /" + service + "/*"
	}
	var b strings.Builder
	b.Grow(len(pattern))
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '{' {
			if j := strings.IndexByte(pattern[i:], '}'); j > 0 {
				if pattern[i:i+j+1] != "{$}" {
					b.WriteString("{id}")
				}
				i += j
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// statusRecorder calls counted with the response code before the response
// leaves: a client that decodes the body may act (and read the counters) before
// the handler has returned.
type statusRecorder struct {
	http.ResponseWriter
	code    int
	counted func(code int)
}

func (s *statusRecorder) WriteHeader(code int) {
	s.record(code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.record(http.StatusOK)
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) record(code int) {
	if s.code == 0 {
		s.code = code
		s.counted(code)
	}
}

// handle registers an API route that needs a token.
func (e *Emulator) handle(pattern string, h http.HandlerFunc) {
	e.mux.HandleFunc(pattern, h)
}

// handlePublic registers an API route that needs no token.
func (e *Emulator) handlePublic(pattern string, h http.HandlerFunc) {
	e.noAuth[pattern] = true
	e.mux.HandleFunc(pattern, h)
}

// newID returns a random UUID (version 4 layout) from the seeded generator.
// Call with mu held.
func (e *Emulator) newID() string {
	hi, lo := e.idRand.Uint64(), e.idRand.Uint64()
	hi = (hi &^ (0xf << 12)) | (4 << 12)
	lo = (lo &^ (0x3 << 62)) | (0x2 << 62)
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}

// newMAC returns a fresh fa:16:3e MAC address. Call with mu held.
func (e *Emulator) newMAC() string {
	e.macSeq++
	m := e.macSeq
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(m>>16), byte(m>>8), byte(m))
}

// baseURL is the emulator's URL as seen by the client of r.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// decodeJSON reads a JSON request body into v.
func decodeJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return errors.New("the request body is empty")
	}
	return json.Unmarshal(b, v)
}

// notFound answers 404 in the style of the service.
func notFound(w http.ResponseWriter, service, msg string) {
	switch service {
	case "compute":
		novaError(w, http.StatusNotFound, msg)
	case "network":
		neutronError(w, http.StatusNotFound, "HTTPNotFound", msg)
	case "load-balancer":
		octaviaError(w, http.StatusNotFound, msg)
	default:
		keystoneError(w, http.StatusNotFound, msg)
	}
}

// Time formats of the services.
const (
	neutronTimeFormat  = "2006-01-02T15:04:05Z"
	octaviaTimeFormat  = "2006-01-02T15:04:05"
	novaTimeFormat     = "2006-01-02T15:04:05Z"
	keystoneTimeFormat = "2006-01-02T15:04:05.000000Z"
)

// Times that marshal in a service's format.
type (
	neutronTime time.Time
	octaviaTime time.Time
	novaTime    time.Time
)

func (t neutronTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(neutronTimeFormat) + `"`), nil
}

func (t octaviaTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(octaviaTimeFormat) + `"`), nil
}

func (t novaTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(novaTimeFormat) + `"`), nil
}

// nonNil returns s, or an empty slice instead of nil (for JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// idRef is the {"id": ...} element of Octavia's and Nova's lists of references.
type idRef struct {
	ID string `json:"id"`
}

func idRefs(ids []string) []idRef {
	out := make([]idRef, len(ids))
	for i, id := range ids {
		out[i] = idRef{ID: id}
	}
	return out
}

// without returns a new slice of s without v.
func without(s []string, v string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// with returns a new slice of s with v appended.
func with(s []string, v string) []string {
	out := make([]string, 0, len(s)+1)
	out = append(out, s...)
	return append(out, v)
}
