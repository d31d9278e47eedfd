// Package core is what every Overcast cloud emulator shares: serving on
// loopback, latency, injected faults, counting calls by operation (the names
// cloudapi's metrics give them), control endpoints under /_emulator, paging,
// and asynchronous jobs that finish after a delay. A cloud's emulator supplies
// its API handler, how a request is named, and how its errors look.
package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options of a Server.
type Options struct {
	// Name names the emulator in errors ("openstack emulator").
	Name string
	// Latency is added to every API call (not to /_emulator).
	Latency time.Duration
	// Seed seeds the random faults (Fault.Rate).
	Seed int64
	// Classify names a request's service and operation, as counted and as
	// faults match them. Default: the first path segment and "METHOD /path".
	Classify func(r *http.Request) (service, operation string)
	// WriteError answers a call with an injected fault's status, in the
	// cloud's error shape. Default: a plain-text body.
	WriteError func(w http.ResponseWriter, r *http.Request, service string, status int, message string)
	// Services are the service names a Fault may name; empty: any.
	Services []string
	// Clock is the emulator's clock (time.Now when nil); outage windows of
	// faults are on it.
	Clock func() time.Time
	// Pager knows the cloud's paging, for MangleEndlessPages; nil: that
	// mangle answers as the cloud does.
	Pager Pager
}

// Pager is how a cloud pages its lists, for a fault that never lets a
// listing end (MangleEndlessPages). While it lasts, the cloud's list
// handlers answer the first page whatever page is asked (OnlyFirstPage).
type Pager interface {
	// MorePages rewrites a successful list answer to r (header h, body) so
	// that it claims a next page; an answer that is not a list, or has no
	// items, is returned as it is.
	MorePages(r *http.Request, h http.Header, body []byte) []byte
}

// Server serves a cloud's API handler with the shared behaviour in front of
// it. All methods are safe for concurrent use.
type Server struct {
	opts Options
	api  http.Handler
	ctl  *http.ServeMux
	done chan struct{}

	mu        sync.Mutex
	latency   time.Duration
	faultRand *rand.Rand
	faults    []*faultEntry
	faultSeq  int

	callsMu sync.Mutex
	calls   map[callKey]int
	tracing bool
	trace   []Traced

	srvMu sync.Mutex
	srv   *http.Server
	url   string
	// ca and tunnelHosts: CONNECT tunnels this server answers itself
	// (tlsproxy.go); tunnels, the servers of the open ones.
	ca          *CA
	tunnelHosts []string
	tunnels     map[*http.Server]bool
}

// New returns a Server of api.
func New(api http.Handler, opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "emulator"
	}
	if opts.Classify == nil {
		opts.Classify = defaultClassify
	}
	if opts.WriteError == nil {
		opts.WriteError = func(w http.ResponseWriter, _ *http.Request, _ string, status int, msg string) {
			http.Error(w, msg, status)
		}
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Server{
		opts:      opts,
		api:       api,
		ctl:       http.NewServeMux(),
		done:      make(chan struct{}),
		latency:   opts.Latency,
		faultRand: rand.New(rand.NewPCG(uint64(opts.Seed), 0x6661756c7473)),
		calls:     map[callKey]int{},
	}
	s.routeControl()
	return s
}

func defaultClassify(r *http.Request) (string, string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	service, _, _ := strings.Cut(p, "/")
	return service, r.Method + " " + r.URL.Path
}

// Control is the mux of /_emulator: a cloud adds its own endpoints to it (no
// token, no latency, not counted).
func (s *Server) Control() *http.ServeMux { return s.ctl }

// ServeHTTP serves /_emulator, and every other request through latency,
// faults and counting to the API handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		s.tunnel(w, r)
		return
	}
	if r.URL.Path == "/_emulator" || strings.HasPrefix(r.URL.Path, "/_emulator/") {
		s.ctl.ServeHTTP(w, r)
		return
	}
	service, op := s.opts.Classify(r)
	object := s.objectOf(r)
	rec := &statusRecorder{ResponseWriter: w, counted: func(code int) {
		s.count(service, r.Method, op, code)
		if object != "" {
			s.traced(object, code)
		}
	}}
	defer func() {
		if rec.code == 0 { // no response: the client gave up, or the emulator closed
			s.count(service, r.Method, op, 0)
		}
	}()
	s.mu.Lock()
	latency := s.latency
	f := s.matchFault(service, r.Method, op, s.opts.Clock())
	s.mu.Unlock()
	if latency > 0 && !s.Wait(r.Context(), latency) {
		return
	}
	if f != nil {
		s.applyFault(rec, r, service, f)
		return
	}
	s.api.ServeHTTP(rec, r)
}

// Wait sleeps for d unless ctx ends or the emulator closes; false if cut short.
func (s *Server) Wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// Done is closed when the emulator closes.
func (s *Server) Done() <-chan struct{} { return s.done }

// Start listens on addr, which must be a loopback address ("127.0.0.1:0"), and
// serves in the background until Close.
func (s *Server) Start(addr string) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv != nil {
		return fmt.Errorf("%s: already started", s.opts.Name)
	}
	if err := LoopbackOnly(addr); err != nil {
		return fmt.Errorf("%s: %w", s.opts.Name, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen: %w", s.opts.Name, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.srv, s.url = srv, "http://"+ln.Addr().String()
	go func() { _ = srv.Serve(ln) }() // srv, not s.srv: Close clears that
	return nil
}

// LoopbackOnly refuses an address that is not IP:PORT on loopback
// (127.0.0.0/8, ::1): an emulator never serves beyond the machine.
func LoopbackOnly(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want IP:PORT on loopback: %w", addr, err)
	}
	if !ap.Addr().IsLoopback() {
		return fmt.Errorf("listen address %s: only loopback addresses (127.0.0.0/8, ::1)", addr)
	}
	return nil
}

// URL is the base URL, "http://127.0.0.1:PORT", once started; "" before.
func (s *Server) URL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.url
}

// Close stops the server started by Start and releases hanging requests.
func (s *Server) Close() error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	for t := range s.tunnels {
		_ = t.Close()
	}
	s.tunnels = nil
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	s.srv = nil
	return err
}

// SetLatency changes the latency added to every API call.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

type callKey struct {
	service, method, op string
	code                int
}

// CallCount is the number of API calls with one service, method, operation and
// response code. Code 0 is a call that got no answer (the client gave up).
type CallCount struct {
	Service string `json:"service"`
	Method  string `json:"method"`
	Route   string `json:"route"`
	Code    int    `json:"code"`
	Count   int    `json:"count"`
}

func (s *Server) count(service, method, op string, code int) {
	s.callsMu.Lock()
	s.calls[callKey{service, method, op, code}]++
	s.callsMu.Unlock()
}

// Calls returns every API call so far, grouped by service, method, operation
// and response code, sorted by those.
func (s *Server) Calls() []CallCount {
	s.callsMu.Lock()
	out := make([]CallCount, 0, len(s.calls))
	for k, n := range s.calls {
		out = append(out, CallCount{Service: k.service, Method: k.method, Route: k.op, Code: k.code, Count: n})
	}
	s.callsMu.Unlock()
	slices.SortFunc(out, func(a, b CallCount) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Method, b.Method),
			cmp.Compare(a.Route, b.Route), cmp.Compare(a.Code, b.Code))
	})
	return out
}

// CallCount is the number of API calls so far, of every kind.
func (s *Server) CallCount() (n int) {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	for _, c := range s.calls {
		n += c
	}
	return n
}

// ResetCalls forgets the counted calls.
func (s *Server) ResetCalls() {
	s.callsMu.Lock()
	s.calls = map[callKey]int{}
	s.callsMu.Unlock()
}

// statusRecorder counts the call with its code before the response leaves: a
// client that decodes the body may act (and read the counters) before the
// handler returns.
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

// ErrNotFound is returned by direct-state methods of emulators for an unknown id.
var ErrNotFound = errors.New("not found")
