package openstack

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// ErrNotFound is returned by the direct-state methods for an unknown id.
var ErrNotFound = core.ErrNotFound

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
	// OctaviaBefore226 makes Octavia an older one (API v2.25, Yoga): no
	// additional_vips (a request with them is refused as an unknown
	// attribute). The default is v2.26, as the Zed of the test harness, which
	// takes additional VIPs (measured 2026-11-26).
	OctaviaBefore226 bool
	// NoKeyManager leaves Barbican out of the catalog, as in a cloud without
	// it (its routes still answer: only the catalog does not name them).
	NoKeyManager bool
}

// Emulator is an in-memory OpenStack. It is an http.Handler and can also
// listen by itself (Start). All methods are safe for concurrent use.
type Emulator struct {
	// Server is the emulator core: serving on loopback, latency, faults,
	// counting calls, /_emulator.
	*core.Server

	opts   Options
	mux    *http.ServeMux
	noAuth map[string]bool // route patterns that need no token

	mu        sync.Mutex
	clock     func() time.Time // read under mu
	provDelay time.Duration
	idRand    *rand.Rand
	macSeq    uint32

	fx Fixture

	// Keystone
	tokens      map[string]*token
	users       map[string]*user // by id
	appCreds    map[string]*appCred
	projectName string

	// Nova
	servers *core.Store[*server]
	flavors *core.Store[*flavor]
	images  map[string]string // id -> name

	// Neutron
	networks   *core.Store[*network]
	subnets    *core.Store[*subnet]
	ports      *core.Store[*port]
	portsByDev map[string][]string // device_id -> port ids
	fips       *core.Store[*floatingIP]
	fipByPort  map[string]string
	routers    *core.Store[*router]
	secGroups  *core.Store[*secGroup]
	sgRules    *core.Store[*sgRule]
	overflow   map[string]int // network id -> overflow subnets added

	// Barbican
	kmSecrets    map[string]*kmSecret
	kmContainers map[string]*kmContainer

	// Octavia
	lbs        *core.Store[*loadBalancer]
	listeners  *core.Store[*listener]
	pools      *core.Store[*lbPool]
	members    *core.Store[*lbMember]
	monitors   *core.Store[*healthMonitor]
	pendingLBs map[string]bool
	defaultSG  string

	quotas map[string]int // resource → limit (absent: unlimited); under mu

	dataPlane core.DataPlane
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
		opts:         opts,
		mux:          http.NewServeMux(),
		noAuth:       map[string]bool{},
		clock:        time.Now,
		provDelay:    opts.ProvisioningDelay,
		idRand:       rand.New(rand.NewPCG(seed, 0x6f70656e737461)),
		tokens:       map[string]*token{},
		users:        map[string]*user{},
		appCreds:     map[string]*appCred{},
		servers:      core.NewStore[*server](),
		flavors:      core.NewStore[*flavor](),
		images:       map[string]string{},
		networks:     core.NewStore[*network](),
		subnets:      core.NewStore[*subnet](),
		ports:        core.NewStore[*port](),
		portsByDev:   map[string][]string{},
		fips:         core.NewStore[*floatingIP](),
		fipByPort:    map[string]string{},
		routers:      core.NewStore[*router](),
		secGroups:    core.NewStore[*secGroup](),
		sgRules:      core.NewStore[*sgRule](),
		overflow:     map[string]int{},
		lbs:          core.NewStore[*loadBalancer](),
		kmSecrets:    map[string]*kmSecret{},
		kmContainers: map[string]*kmContainer{},
		listeners:    core.NewStore[*listener](),
		pools:        core.NewStore[*lbPool](),
		members:      core.NewStore[*lbMember](),
		monitors:     core.NewStore[*healthMonitor](),
		pendingLBs:   map[string]bool{},
		quotas:       map[string]int{},
	}
	e.Server = core.New(http.HandlerFunc(e.serveAPI), core.Options{
		Name:       "openstack emulator",
		Latency:    opts.Latency,
		Seed:       opts.Seed,
		Classify:   e.classify,
		WriteError: writeFault,
		Pager:      pager{},
		Services:   []string{"identity", "compute", "network", "load-balancer"},
		Clock: func() time.Time {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.clock()
		},
	})
	e.routeKeystone()
	e.routeNova()
	e.routeNeutron()
	e.routeOctavia()
	e.routeKeyManager()
	e.routeControl()
	e.mu.Lock()
	e.seedFixture()
	e.mu.Unlock()
	return e
}

// Start listens on addr, a loopback address (for example "127.0.0.1:0"), and
// serves in the background until Close; with ServeTraffic, the load balancers
// carry traffic too.
func (e *Emulator) Start(addr string) error {
	if err := checkServeTraffic(e.opts); err != nil {
		return fmt.Errorf("openstack emulator: %w", err)
	}
	return e.StartServing(addr, e.opts.ServeTraffic, &e.dataPlane, e.dataPlaneSpecs)
}

// SetProvisioningDelay changes how long Octavia mutations stay pending. It
// applies to mutations made after the call.
func (e *Emulator) SetProvisioningDelay(d time.Duration) {
	e.mu.Lock()
	e.provDelay = d
	e.mu.Unlock()
}

// Quota resources of SetQuota.
const (
	// QuotaFloatingIP is Neutron's "floatingip" quota of the project.
	QuotaFloatingIP = "floatingip"
	// QuotaLoadBalancer is Octavia's "loadbalancer" quota of the project.
	QuotaLoadBalancer = "loadbalancer"
)

// SetQuota limits the project's floating IPs or load balancers to limit (a
// negative limit: unlimited, the default). A create beyond it is refused as
// the real services refuse it: Neutron with 409 OverQuota, Octavia with 403.
func (e *Emulator) SetQuota(resource string, limit int) {
	if resource != QuotaFloatingIP && resource != QuotaLoadBalancer {
		panic("openstack emulator: SetQuota: unknown resource " + resource)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if limit < 0 {
		delete(e.quotas, resource)
		return
	}
	e.quotas[resource] = limit
}

// quotaMet says whether one more of resource, with used in use, is beyond the
// quota. Call with mu held.
func (e *Emulator) quotaMet(resource string, used int) bool {
	limit, ok := e.quotas[resource]
	return ok && used >= limit
}

// lock takes the state lock, settles due Octavia transitions and returns the
// current time of the emulator's clock.
func (e *Emulator) lock() time.Time {
	e.mu.Lock()
	now := e.clock()
	e.settleLBs(now)
	return now
}

// classify names a request as Calls and faults see it: its service by the
// path's first segment, its route as the mux pattern with every wildcard
// spelled {id} ("GET /compute/v2.1/servers/{id}"), the operation names of
// cloudapi's metrics for these paths.
func (e *Emulator) classify(r *http.Request) (string, string) {
	service := serviceOf(r.URL.Path)
	_, pattern := e.mux.Handler(r)
	return service, routeTemplate(r.Method, pattern, service)
}

// serveAPI serves the emulated APIs (behind the core's latency and faults).
func (e *Emulator) serveAPI(w http.ResponseWriter, r *http.Request) {
	_, pattern := e.mux.Handler(r)
	if pattern != "" && !e.noAuth[pattern] && !e.authorized(r) {
		writeUnauthorized(w)
		return
	}
	if pattern == "" {
		notFound(w, serviceOf(r.URL.Path), "The resource could not be found.")
		return
	}
	if core.OnlyFirstPage(r) {
		// Answered as the first page: no marker (Nova, Neutron, Octavia),
		// no offset (Barbican).
		q := r.URL.Query()
		q.Del("marker")
		q.Del("offset")
		r = r.Clone(r.Context())
		r.URL.RawQuery = q.Encode()
	}
	e.mux.ServeHTTP(w, r)
}

// pager makes a list answer link a next page (core.MangleEndlessPages): the
// collection's <key>_links (Nova, Neutron, Octavia) or next (Barbican).
type pager struct{}

func (pager) MorePages(r *http.Request, _ http.Header, body []byte) []byte {
	var doc map[string]json.RawMessage
	if r.Method != http.MethodGet || json.Unmarshal(body, &doc) != nil {
		return body
	}
	next := nextLink(r, "more")
	changed := false
	for key, raw := range doc {
		var items []json.RawMessage
		if strings.HasSuffix(key, "_links") || json.Unmarshal(raw, &items) != nil || len(items) == 0 {
			continue
		}
		changed = true
		if strings.HasPrefix(r.URL.Path, kmPrefix+"/") {
			doc["next"], _ = json.Marshal(next)
			continue
		}
		doc[key+"_links"], _ = json.Marshal([]map[string]string{{"rel": "next", "href": next}})
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
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
	return core.UUID(e.idRand)
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

func writeJSON(w http.ResponseWriter, code int, v any) { core.WriteJSON(w, code, v) }

func decodeJSON(r *http.Request, v any) error { return core.DecodeJSON(r, v) }

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
func with(s []string, v ...string) []string {
	out := make([]string, 0, len(s)+len(v))
	out = append(out, s...)
	return append(out, v...)
}

// Objects counts what a CCM may create, by kind (the fixture's own objects
// included): the same counts before a Service and after its deletion mean
// that nothing of it was left behind.
func (e *Emulator) Objects() map[string]int {
	e.lock()
	defer e.mu.Unlock()
	return map[string]int{
		"loadbalancers": e.lbs.Len(), "listeners": e.listeners.Len(), "pools": e.pools.Len(),
		"members": e.members.Len(), "healthmonitors": e.monitors.Len(), "floatingips": e.fips.Len(),
		"ports": e.ports.Len(), "security-groups": e.secGroups.Len(), "security-group-rules": e.sgRules.Len(),
	}
}
