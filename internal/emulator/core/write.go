package core

import (
	"net/http"
	"sync"
)

// Reply is what a write answers when it succeeds: its status, its body as
// JSON (nil: no body, as a 202 or a 204 answers) and headers of its own
// (OCI's etag and opc-work-request-id).
type Reply struct {
	Status int
	Body   any
	Header map[string]string
}

// Created is 201 with body, the answer of most creates.
func Created(body any) Reply { return Reply{Status: http.StatusCreated, Body: body} }

// OK is 200 with body, the answer of most updates.
func OK(body any) Reply { return Reply{Status: http.StatusOK, Body: body} }

// NoContent is 204 without a body, the answer of most deletes.
func NoContent() Reply { return Reply{Status: http.StatusNoContent} }

// Write is one write request of an emulated API (a create, an update, a
// delete), which every cloud serves in the same steps: read and check the
// body, then under the emulator's lock find, check and change its objects,
// then answer. Each cloud gives the parts that are its own: how its bodies
// read, its lock, and how its errors look on the wire; the steps, and the
// rule that nothing changes once an error is answered, are here once.
type Write[Req, Ctx any] struct {
	// Decode reads (and checks what needs no lock of) the body into req;
	// nil for a request without one.
	Decode func(r *http.Request, req *Req) error
	// Lock takes the emulator's lock and returns what a change needs of it
	// (OpenStack's and OCI's: the time of the request).
	Lock func() Ctx
	// Unlock releases it, after the answer is written: the reply's body may
	// share the objects' slices.
	Unlock func()
	// Do makes the change, or refuses it with an error and changes nothing.
	Do func(r *http.Request, req *Req, c Ctx) (Reply, error)
	// Fail answers an error of Decode or Do in the API's own format.
	Fail func(w http.ResponseWriter, err error)
}

// ServeHTTP serves the write.
func (wr Write[Req, Ctx]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req Req
	if wr.Decode != nil {
		if err := wr.Decode(r, &req); err != nil {
			wr.Fail(w, err)
			return
		}
	}
	c := wr.Lock()
	defer wr.Unlock()
	rep, err := wr.Do(r, &req, c)
	if err != nil {
		wr.Fail(w, err)
		return
	}
	rep.Write(w)
}

// Write answers the reply.
func (rep Reply) Write(w http.ResponseWriter) {
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Body == nil {
		w.WriteHeader(rep.Status)
		return
	}
	WriteJSON(w, rep.Status, rep.Body)
}

// Views is the page of st's objects that keep accepts (nil: all), up to
// limit after marker, each made a view under lock (views are encoded after
// it is released), and the marker of the next page ("" when none follows):
// the paging every marker-paged list shares (OpenStack's marker, OCI's
// opc-next-page). err is ErrBadMarker for a marker that never existed.
func Views[T any](lock sync.Locker, st *Store[T], marker string, limit int, keep func(T) bool, view func(T) any, id func(T) string) (views []any, next string, err error) {
	return ViewsOf(lock, st, nil, marker, limit, keep, view, id)
}

// ViewsOf is Views over the objects whose ids within gives (read under
// lock: a parent's children); nil within is every object.
func ViewsOf[T any](lock sync.Locker, st *Store[T], within func() []string, marker string, limit int, keep func(T) bool,
	view func(T) any, id func(T) string) (views []any, next string, err error) {
	lock.Lock()
	defer lock.Unlock()
	var items []T
	var more bool
	if within == nil {
		items, more, err = st.Page(marker, limit, false, keep)
	} else {
		items, more, err = st.PageOf(within(), marker, limit, keep)
	}
	if err != nil {
		return nil, "", err
	}
	views = make([]any, len(items))
	for i, it := range items {
		views[i] = view(it)
	}
	if more && len(items) > 0 {
		next = id(items[len(items)-1])
	}
	return views, next, nil
}

// View is the view of st's object id, made under lock; false when there is
// none.
func View[T any](lock sync.Locker, st *Store[T], id string, view func(T) any) (any, bool) {
	lock.Lock()
	defer lock.Unlock()
	o, ok := st.Get(id)
	if !ok {
		return nil, false
	}
	return view(o), true
}
