package ociapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
)

// An instance principal's session token is reused until 5 minutes before
// it expires, then renewed; one OCI refuses (401) is dropped, and the next
// call gets another.
func TestAnInstancePrincipalsTokenIsRenewedAndDroppedWhenRefused(t *testing.T) {
	e, err := emulator.New(emulator.Options{InstancePrincipals: true})
	e = coretest.Serve(t, e, err)
	s := NewInstancePrincipal(Principal{Region: "us-ashburn-1", Metadata: e.URL() + "/opc/v2", Auth: e.URL()}).Sessions()
	// The token is reused until 5 minutes before it expires, then renewed.
	keyID, _, err := s.SigningKey()
	require.NoError(t, err)
	again, _, err := s.SigningKey()
	require.NoError(t, err)
	assert.Equal(t, keyID, again)
	s.mu.Lock()
	s.cur.exp = time.Now().Add(tokenRenewal - time.Minute) // due
	s.cur.iat = s.cur.exp.Add(-20 * time.Minute)
	s.mu.Unlock()
	renewed, _, err := s.SigningKey()
	require.NoError(t, err)
	assert.NotEqual(t, keyID, renewed, "a new token")

	// A token OCI refuses (401) is dropped: the next call gets another.
	s.forget(renewed)
	next, _, err := s.SigningKey()
	require.NoError(t, err)
	assert.NotEqual(t, renewed, next)
}
