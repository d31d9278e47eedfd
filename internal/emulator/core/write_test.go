package core

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counter is a Write over one counter: the body {"by": n} adds n; a
// negative n is refused by Decode, a sum over 10 by Do.
func counter(mu *sync.Mutex, n *int) Write[struct{ By int }, int] {
	return Write[struct{ By int }, int]{
		Decode: func(r *http.Request, req *struct{ By int }) error {
			if err := DecodeJSON(r, req); err != nil {
				return err
			}
			if req.By < 0 {
				return errors.New("negative")
			}
			return nil
		},
		Lock:   func() int { mu.Lock(); return *n },
		Unlock: mu.Unlock,
		Do: func(_ *http.Request, req *struct{ By int }, was int) (Reply, error) {
			if was+req.By > 10 {
				return Reply{}, errors.New("too many")
			}
			*n = was + req.By
			return OK(map[string]int{"n": *n}), nil
		},
		Fail: func(w http.ResponseWriter, err error) {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		},
	}
}

func TestWriteChangesUnderTheLockOrAnswersTheErrorAndChangesNothing(t *testing.T) {
	var mu sync.Mutex
	n := 0
	h := counter(&mu, &n)
	for _, c := range []struct {
		body   string
		status int
		answer string
		n      int
	}{
		{`{"By": 4}`, 200, `{"n":4}`, 4},
		{`{"By": -1}`, 400, `{"error":"negative"}`, 4},
		{`{"By": 7}`, 400, `{"error":"too many"}`, 4},
		{`{"By": 6}`, 200, `{"n":10}`, 10},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body)))
		assert.Equal(t, c.status, rec.Code, c.body)
		assert.JSONEq(t, c.answer, rec.Body.String(), c.body)
		assert.Equal(t, c.n, n, c.body)
	}
	require.True(t, mu.TryLock(), "the lock is released")
	mu.Unlock()

	rec := httptest.NewRecorder()
	NoContent().Write(rec)
	assert.Equal(t, http.StatusNoContent, rec.Code)
	assert.Empty(t, rec.Body.String(), "a reply without a body writes none")

	rec = httptest.NewRecorder()
	Reply{Status: http.StatusOK, Body: map[string]int{}, Header: map[string]string{"etag": "3"}}.Write(rec)
	assert.Equal(t, "3", rec.Header().Get("etag"), "a reply's own headers are written")
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
}

func TestViewsPageAndNameTheNextMarker(t *testing.T) {
	var mu sync.Mutex
	s := NewStore[string]()
	for _, id := range []string{"a", "b", "c"} {
		s.Add(id, id)
	}
	id := func(v string) string { return v }
	view := func(v string) any { return strings.ToUpper(v) }
	views, next, err := Views(&mu, s, "", 2, nil, view, id)
	require.NoError(t, err)
	assert.Equal(t, []any{"A", "B"}, views)
	assert.Equal(t, "b", next)
	views, next, err = Views(&mu, s, next, 2, nil, view, id)
	require.NoError(t, err)
	assert.Equal(t, []any{"C"}, views)
	assert.Empty(t, next, "the last page names no next one")
	_, _, err = Views(&mu, s, "zz", 2, nil, view, id)
	require.ErrorIs(t, err, ErrBadMarker)

	v, ok := View(&mu, s, "c", view)
	assert.True(t, ok)
	assert.Equal(t, "C", v)
	_, ok = View(&mu, s, "zz", view)
	assert.False(t, ok)
}

func TestDelayIsSetWhileItIsRead(t *testing.T) {
	var d Delay
	assert.Zero(t, d.Get(), "the zero value is no delay")
	var wg sync.WaitGroup
	wg.Go(func() { d.Set(3) })
	wg.Wait()
	assert.EqualValues(t, 3, d.Get())
}
