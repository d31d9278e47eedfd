package csapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writesFile records every write's parameters, by command: the provider's
// TestEveryFieldSentIsDriftCheckedOrLeftOutWithAReason holds each to a drift
// check or a reason, reading it here, beside the calls that send them.
const writesFile = "testdata/writes.json"

// The record of the writes is what the pinned calls send: a parameter added
// to a write fails here until the record is made again
// (OVERCAST_UPDATE=1 go test ./internal/provider/cloudstack/csapi -run Record),
// then in the provider until the parameter is drift-checked or left out.
func TestTheRecordOfTheWritesIsWhatTheySend(t *testing.T) {
	sent := writesSent(t)
	for _, params := range sent {
		slices.Sort(params)
	}
	b, err := json.MarshalIndent(sent, "", "  ")
	require.NoError(t, err)
	b = append(b, '\n')
	if os.Getenv("OVERCAST_UPDATE") != "" {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(writesFile, b, 0o644))
	}
	want, err := os.ReadFile(writesFile)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(b), "the writes send other parameters: make the record again (OVERCAST_UPDATE=1)")
}

// writesSent are the parameters of each write of the pinned calls, by
// command (the envelope's command, response, apiKey, signatureversion and
// expires aside; tags[i].key and tags[i].value as tags).
func writesSent(t *testing.T) map[string][]string {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	gw, err := New(Settings{APIURL: srv.URL + "/client/api", APIKey: wireKey, SecretKey: wireSecret, ProjectID: wireProject})
	require.NoError(t, err)
	tagged := regexp.MustCompile(`^tags\[\d+\]\.(key|value)$`)
	out := map[string][]string{}
	for _, c := range slices.Concat(wireMachines(), wireAddresses(), wireRules(), wireMembersAndHealthChecks(), wireOpeningsAndJobs()) {
		c.ours(context.Background(), gw)
		got, _ := rec.take()
		for _, r := range got {
			if r.Method != http.MethodPost {
				continue
			}
			command := r.Params.Get("command")
			for p := range r.Params {
				switch {
				case slices.Contains([]string{"command", "response", "apiKey", "signatureversion"}, p):
					continue
				case tagged.MatchString(p):
					p = "tags"
				}
				if !slices.Contains(out[command], p) {
					out[command] = append(out[command], p)
				}
			}
		}
	}
	return out
}
