package cloudapi

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		cfg        Config
		wantFields []string // each must be named in the error; none means valid
		wantErrors int      // number of joined errors
	}{
		{name: "a config with only Cloud set is valid", cfg: Config{Cloud: "openstack"}},
		{name: "a fully set config is valid", cfg: Config{
			Cloud: "oci", ReadQPS: 50, ReadBurst: 100, WriteQPS: 10, WriteBurst: 20, MaxRetries: 8,
			BaseBackoff: time.Second, MaxBackoff: time.Minute, MaxRetryAfter: 2 * time.Minute, Timeout: time.Minute,
		}},
		{name: "unlimited rates and NoRetries are valid", cfg: Config{
			Cloud: "cloudstack", ReadQPS: math.Inf(1), WriteQPS: math.Inf(1), MaxRetries: NoRetries,
		}},
		{name: "a missing Cloud is reported", cfg: Config{}, wantFields: []string{"Cloud"}, wantErrors: 1},
		{name: "a NaN rate is reported", cfg: Config{Cloud: "oci", WriteQPS: math.NaN()}, wantFields: []string{"WriteQPS"}, wantErrors: 1},
		{name: "a base backoff above the default maximum is reported", cfg: Config{Cloud: "oci", BaseBackoff: time.Minute},
			wantFields: []string{"BaseBackoff", "MaxBackoff"}, wantErrors: 1},
		{name: "every problem is listed", cfg: Config{
			ReadQPS: -1, ReadBurst: -1, WriteQPS: -2, WriteBurst: -2, MaxRetries: -2,
			BaseBackoff: -time.Second, MaxBackoff: -time.Second, MaxRetryAfter: -time.Second, Timeout: -time.Second,
		}, wantFields: []string{
			"Cloud", "ReadQPS", "ReadBurst", "WriteQPS", "WriteBurst", "MaxRetries",
			"BaseBackoff", "MaxBackoff", "MaxRetryAfter", "Timeout",
		}, wantErrors: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			if len(tt.wantFields) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			joined, ok := err.(interface{ Unwrap() []error })
			require.True(t, ok, "Validate returns errors.Join of the problems")
			assert.Len(t, joined.Unwrap(), tt.wantErrors)
			for _, f := range tt.wantFields {
				assert.Contains(t, err.Error(), f)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	got := Config{Cloud: "openstack"}.withDefaults()
	assert.InDelta(t, DefaultReadQPS, got.ReadQPS, 0)
	assert.Equal(t, DefaultReadBurst, got.ReadBurst)
	assert.InDelta(t, DefaultWriteQPS, got.WriteQPS, 0)
	assert.Equal(t, DefaultWriteBurst, got.WriteBurst)
	assert.Equal(t, DefaultMaxRetries, got.MaxRetries)
	assert.Equal(t, DefaultBaseBackoff, got.BaseBackoff)
	assert.Equal(t, DefaultMaxBackoff, got.MaxBackoff)
	assert.Equal(t, DefaultMaxRetryAfter, got.MaxRetryAfter)
	assert.Equal(t, DefaultTimeout, got.Timeout)
	assert.NotNil(t, got.Classify)
	assert.Zero(t, Config{Cloud: "x", MaxRetries: NoRetries}.withDefaults().MaxRetries)
}
