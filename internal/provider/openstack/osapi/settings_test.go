package osapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The limits of reads and writes a second are the settings', with a burst of
// twice as many; unset, cloudapi's defaults apply.
func TestTheSettingsLimitTheCalls(t *testing.T) {
	s := Settings{AuthURL: "http://127.0.0.1:5000/v3", ApplicationCredentialID: "a", ApplicationCredentialSecret: "s", APIReadQPS: 200, APIWriteQPS: 50}
	a, err := resolveAuth(s)
	require.NoError(t, err)
	assert.InDelta(t, 200, a.limits.ReadQPS, 0)
	assert.Equal(t, 400, a.limits.ReadBurst)
	assert.InDelta(t, 50, a.limits.WriteQPS, 0)
	assert.Equal(t, 100, a.limits.WriteBurst)

	s.APIReadQPS, s.APIWriteQPS = 0, 0
	a, err = resolveAuth(s)
	require.NoError(t, err)
	assert.Zero(t, a.limits.WriteQPS, "unset: cloudapi's defaults apply")
}
