package core

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writer is a Server whose API makes a thing on each POST /things (its
// body kept), and the count of things made.
func writer(t *testing.T) (*Server, *atomic.Int64, *atomic.Value) {
	t.Helper()
	var made atomic.Int64
	var last atomic.Value
	api := http.NewServeMux()
	api.HandleFunc("POST /things", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.Store(string(b))
		made.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	s := New(api, Options{Services: []string{"things"}, WriteError: func(w http.ResponseWriter, _ *http.Request, _ string, status int, _ string) {
		w.WriteHeader(status)
	}})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	return s, &made, &last
}

func post(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"name":"a"}`))
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

func TestALostAnswerIsAWriteMadeWithoutAnAnswer(t *testing.T) {
	s, made, last := writer(t)
	s.InjectFault(Fault{Route: "POST /things", Lost: true, Count: 1})
	_, err := post(t.Context(), s.URL()+"/things")
	require.Error(t, err, "no answer")
	assert.Equal(t, int64(1), made.Load(), "the thing was made all the same")
	assert.Equal(t, `{"name":"a"}`, last.Load(), "from the request's body")
	code, err := post(t.Context(), s.URL()+"/things")
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, code, "the fault ran out")
}

func TestALateAnswerActsAfterTheClientGaveUp(t *testing.T) {
	s, made, _ := writer(t)
	s.InjectFault(Fault{Route: "POST /things", Late: 500 * time.Millisecond, Count: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := post(ctx, s.URL()+"/things")
	require.Error(t, err, "the client gave up")
	assert.Equal(t, int64(0), made.Load(), "not made yet: nothing to find")
	require.Eventually(t, func() bool { return made.Load() == 1 }, 5*time.Second, 20*time.Millisecond, "made once its time came")

	s.InjectFault(Fault{Route: "POST /things", Late: 100 * time.Millisecond, Count: 1})
	code, err := post(t.Context(), s.URL()+"/things")
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, code, "a client still waiting has the answer")
	assert.Equal(t, int64(2), made.Load())
}
