package csapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The server's clock is learnt from the Date of its answers: an address's
// allocated date is compared with the server's time, not ours.
func TestTheServersClockIsLearntFromItsAnswers(t *testing.T) {
	ahead := time.Now().Add(time.Hour)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", ahead.UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	var clock serverClock
	_, known := clock.now()
	require.False(t, known)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := dated{next: http.DefaultTransport, clock: &clock}.RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	now, known := clock.now()
	require.True(t, known)
	assert.WithinDuration(t, ahead, now, 2*time.Second)
}
