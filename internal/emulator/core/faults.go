package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fault makes matching API calls fail. A call matches when Service, Method and
// Route match (empty means any) and the call falls inside [From, Until) of the
// emulator's clock (zero means unbounded). Of the matching faults, the one
// injected first answers.
type Fault struct {
	// Service is one of the emulator's services, or "" for all.
	Service string
	// Method is an HTTP method or "" for all.
	Method string
	// Route is an operation as in Calls (for example
	// "GET /compute/v2.1/servers/detail", or "GET listVirtualMachines") or ""
	// for all of Service and Method.
	Route string
	// Status is the HTTP status to answer, e.g. 500, 503, 429, 401, 409.
	Status int
	// RetryAfter adds a Retry-After header in whole seconds (rounded up).
	RetryAfter time.Duration
	// Hang does not answer until the client gives up (its request context is
	// done) or the emulator is closed: a timeout. Such calls are counted with
	// code 0.
	Hang bool
	// Lost carries the call out, then drops its answer (the connection is
	// closed): a write made whose answer never arrives.
	Lost bool
	// Late carries the call out only after Late has passed, whether or not
	// the client still waits; its answer then goes to a client still waiting
	// (none, when the client's timeout is shorter): until then the object
	// it creates is not there to be found, as with an API that answers a
	// create late under load (Octavia allocates the VIP port before it
	// answers, and its load balancer is listed only then).
	Late time.Duration
	// Mangle answers as a broken or hostile cloud would (Status is not
	// used): one of Mangles.
	// Truncate and WrongTypes run the call for real first, so a write is
	// made while its answer is garbage.
	Mangle string
	// Rate: 0 or 1 fails every matching call; 0<Rate<1 fails that fraction,
	// at random from Options.Seed.
	Rate float64
	// Count: 0 is unlimited; otherwise only the next Count matching calls fail.
	Count int
	// From and Until bound an outage window; zero means no bound.
	From, Until time.Time
}

// The ways Fault.Mangle breaks an answer.
const (
	// MangleTruncate cuts the real answer's body in half.
	MangleTruncate = "truncate"
	// MangleWrongTypes gives every value of the real answer's JSON another
	// type: strings become numbers, numbers strings, booleans strings.
	MangleWrongTypes = "wrong-types"
	// MangleHuge answers 200 with a JSON body of 1 GiB, streamed.
	MangleHuge = "huge"
	// MangleReset closes the connection without an answer.
	MangleReset = "reset"
	// MangleEndlessPages answers every list with its first page, claiming a
	// next page that is the same again (Options.Pager): a listing that never
	// ends unless its reader bounds it.
	MangleEndlessPages = "endless-pages"
	// MangleEmpty404 answers 404 with an empty body, as a server does at a
	// wrong path.
	MangleEmpty404 = "empty-404"
	// MangleHTMLPage answers 200 with an HTML page, as a login portal does.
	MangleHTMLPage = "html-page"
	// MangleProxy502 answers 502 with a proxy's text/plain page.
	MangleProxy502 = "proxy-502"
)

// Mangles are the broken answers of a cloud (every Fault.Mangle), and
// NotAPI those of them that are no answer of the cloud's API at all, but of
// something else at its URL.
var (
	NotAPI  = []string{MangleEmpty404, MangleHTMLPage, MangleProxy502}
	Mangles = append([]string{MangleTruncate, MangleWrongTypes, MangleHuge, MangleReset, MangleEndlessPages}, NotAPI...)
)

// hugeBody is MangleHuge's body size.
const hugeBody = 1 << 30

type faultEntry struct {
	id   int
	f    Fault
	left int // remaining count when f.Count > 0
}

// faultJSON is the wire form of Fault on /_emulator/faults.
type faultJSON struct {
	ID         int             `json:"id,omitempty"`
	Service    string          `json:"Service"`
	Method     string          `json:"Method"`
	Route      string          `json:"Route"`
	Status     int             `json:"Status"`
	RetryAfter json.RawMessage `json:"RetryAfter,omitempty"`
	Hang       bool            `json:"Hang"`
	Lost       bool            `json:"Lost,omitempty"`
	Late       string          `json:"Late,omitempty"`
	Mangle     string          `json:"Mangle,omitempty"`
	Rate       float64         `json:"Rate"`
	Count      int             `json:"Count"`
	From       *time.Time      `json:"From,omitempty"`
	Until      *time.Time      `json:"Until,omitempty"`
}

func (fj faultJSON) fault() (Fault, error) {
	f := Fault{Service: fj.Service, Method: strings.ToUpper(fj.Method), Route: fj.Route,
		Status: fj.Status, Hang: fj.Hang, Lost: fj.Lost, Mangle: fj.Mangle, Rate: fj.Rate, Count: fj.Count}
	if fj.Late != "" {
		d, err := time.ParseDuration(fj.Late)
		if err != nil {
			return f, fmt.Errorf("fault late: %w", err)
		}
		f.Late = d
	}
	if fj.From != nil {
		f.From = *fj.From
	}
	if fj.Until != nil {
		f.Until = *fj.Until
	}
	if len(fj.RetryAfter) > 0 && string(fj.RetryAfter) != "null" {
		var s string
		if err := json.Unmarshal(fj.RetryAfter, &s); err == nil {
			d, err := time.ParseDuration(s)
			if err != nil {
				return f, fmt.Errorf("RetryAfter: %w", err)
			}
			f.RetryAfter = d
		} else {
			var n int64
			if err := json.Unmarshal(fj.RetryAfter, &n); err != nil {
				return f, fmt.Errorf("RetryAfter: want a duration string such as \"2s\" or nanoseconds")
			}
			f.RetryAfter = time.Duration(n)
		}
	}
	return f, nil
}

func (s *Server) validate(f Fault) error {
	if f.Service != "" && len(s.opts.Services) > 0 && !slices.Contains(s.opts.Services, f.Service) {
		return fmt.Errorf("fault service %q: want %s or empty", f.Service, strings.Join(s.opts.Services, ", "))
	}
	if f.Mangle != "" && !slices.Contains(Mangles, f.Mangle) {
		return fmt.Errorf("fault mangle %q: want one of %s", f.Mangle, strings.Join(Mangles, ", "))
	}
	if f.Late < 0 {
		return fmt.Errorf("fault late %v: want >= 0", f.Late)
	}
	if !f.Hang && !f.Lost && f.Late == 0 && f.Mangle == "" && (f.Status < 100 || f.Status > 599) {
		return fmt.Errorf("fault status %d: want an HTTP status (or Hang, Lost, Late, or Mangle)", f.Status)
	}
	if f.Rate < 0 || f.Rate > 1 {
		return fmt.Errorf("fault rate %v: want 0..1", f.Rate)
	}
	if f.Count < 0 {
		return fmt.Errorf("fault count %d: want >= 0", f.Count)
	}
	return nil
}

// InjectFault adds a fault and returns its id. An invalid fault (unknown
// service, no status and no Hang, Rate outside 0..1, negative Count) panics:
// it is a bug in the test that injects it.
func (s *Server) InjectFault(f Fault) int {
	f.Method = strings.ToUpper(f.Method)
	if err := s.validate(f); err != nil {
		panic(s.opts.Name + ": InjectFault: " + err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultSeq++
	s.faults = append(s.faults, &faultEntry{id: s.faultSeq, f: f, left: f.Count})
	return s.faultSeq
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// matchFault returns the fault that answers this call, if any, and consumes
// one of its Count. Call with mu held.
func (s *Server) matchFault(service, method, op string, now time.Time) *Fault {
	for i, fe := range s.faults {
		f := &fe.f
		if f.Service != "" && f.Service != service ||
			f.Method != "" && f.Method != method ||
			f.Route != "" && f.Route != op ||
			!f.From.IsZero() && now.Before(f.From) ||
			!f.Until.IsZero() && !now.Before(f.Until) {
			continue
		}
		if f.Rate > 0 && f.Rate < 1 && s.faultRand.Float64() >= f.Rate {
			continue
		}
		out := *f
		if f.Count > 0 {
			fe.left--
			if fe.left <= 0 {
				s.faults = slices.Delete(slices.Clone(s.faults), i, i+1)
			}
		}
		return &out
	}
	return nil
}

// applyFault answers a call with a fault.
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, service string, f *Fault) {
	if f.Lost || f.Late > 0 {
		s.actUnanswered(w, r, f)
		return
	}
	if f.Mangle != "" {
		s.mangle(w, r, f.Mangle)
		return
	}
	if f.Hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
	}
	s.opts.WriteError(w, r, service, f.Status, fmt.Sprintf("injected fault: %d %s", f.Status, http.StatusText(f.Status)))
}

// mangle answers as Fault.Mangle says.
func (s *Server) mangle(w http.ResponseWriter, r *http.Request, how string) {
	switch how {
	case MangleReset:
		// net/http closes the connection of a handler that panics with
		// ErrAbortHandler, without an answer and without logging it.
		panic(http.ErrAbortHandler)
	case MangleEmpty404:
		w.WriteHeader(http.StatusNotFound)
		return
	case MangleHTMLPage:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body><form action=\"/login\">Sign in</form></body></html>\n")
		return
	case MangleProxy502:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "Bad Gateway\n")
		return
	case MangleHuge:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		if _, err := io.WriteString(w, `{"items":["`); err != nil {
			return
		}
		for sent := 0; sent < hugeBody && r.Context().Err() == nil; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"]}`)
		return
	}
	if how == MangleEndlessPages {
		r = r.WithContext(context.WithValue(r.Context(), firstPageKey{}, true))
	}
	rec := httptest.NewRecorder()
	s.api.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	switch {
	case how == MangleTruncate:
		body = body[:len(body)/2]
	case how == MangleWrongTypes:
		body = wrongTypes(body)
	case how == MangleEndlessPages && s.opts.Pager != nil && rec.Code/100 == 2:
		body = s.opts.Pager.MorePages(r, rec.Header(), body)
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

type firstPageKey struct{}

// OnlyFirstPage says whether a list handler must answer r with the first
// page whatever page r asks for (MangleEndlessPages).
func OnlyFirstPage(r *http.Request) bool {
	v, _ := r.Context().Value(firstPageKey{}).(bool)
	return v
}

// wrongTypes is a JSON document with every value of another type; a body
// that is not JSON is kept.
func wrongTypes(body []byte) []byte {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return body
	}
	var flip func(v any) any
	flip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = flip(e)
			}
			return x
		case []any:
			for i, e := range x {
				x[i] = flip(e)
			}
			return x
		case string:
			return 12345
		case json.Number:
			return "not a number"
		case bool:
			return "not a boolean"
		}
		return v
	}
	out, err := json.Marshal(flip(doc))
	if err != nil {
		return body
	}
	return out
}

// actUnanswered carries the call out as Fault.Lost and Fault.Late say: after
// Late (the body read first, the client's going away not stopping it), then
// its answer dropped (Lost) or given to a client still waiting.
func (s *Server) actUnanswered(w http.ResponseWriter, r *http.Request, f *Fault) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r = r.Clone(context.WithoutCancel(r.Context()))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if f.Late > 0 && !s.Wait(r.Context(), f.Late) {
		return // the emulator closed
	}
	rec := httptest.NewRecorder()
	s.api.ServeHTTP(rec, r)
	if f.Lost {
		panic(http.ErrAbortHandler) // the connection closed, no answer
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}
