package cloudstack

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThePeersCloudConfigIsReadUnchanged(t *testing.T) {
	// The form CloudStack writes for CKS clusters and the peer's README shows.
	c, err := Read(strings.NewReader(`[Global]
api-url = https://cloud.example.com/client/api
api-key = AbCdEf-123
secret-key = "s3cr3t;with#marks"
project-id = 5b9e5ab9-2a1d-4c4e-9d4f-0123456789ab
zone = zone-1
ssl-no-verify = true
`))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, Global{APIURL: "https://cloud.example.com/client/api", APIKey: "AbCdEf-123", SecretKey: "s3cr3t;with#marks",
		ProjectID: "5b9e5ab9-2a1d-4c4e-9d4f-0123456789ab", Zone: "zone-1", SSLNoVerify: true}, c.Global)
	assert.Equal(t, "zone-1", c.RegionOf("zone-1"), "the region is the zone unless configured")
	c.Global.Region = "eu"
	assert.Equal(t, "eu", c.RegionOf("zone-1"))
}

func TestEveryProblemOfTheConfigIsNamedWithItsKey(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		read       []string // problems of the form
		validate   []string // problems of the values
	}{
		{"empty [Global]", "[Global]\n", nil, []string{"[Global] api-url: required", "[Global] api-key: required", "[Global] secret-key: required"}},
		{"not a URL", "[Global]\napi-url = cloud.example.com\napi-key = k\nsecret-key = s\n", nil, []string{`[Global] api-url: "cloud.example.com" is not an http(s) URL`}},
		{"credentials in the URL", "[Global]\napi-url = https://admin:pw@cloud.example.com/client/api\napi-key = k\nsecret-key = s\n", nil, []string{"[Global] api-url: must not carry credentials"}},
		{"an unknown key and a bad bool", "[Global]\napi-url = https://c/client/api\napi-key = k\nsecret-key = s\napi-secret = s\nssl-no-verify = maybe\n", []string{"line 5: [Global] unknown key", "line 6", "ssl-no-verify"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Read(strings.NewReader(tc.conf))
			if tc.read == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				for _, want := range tc.read {
					assert.Contains(t, err.Error(), want)
				}
			}
			verr := c.Validate()
			if tc.validate == nil {
				if tc.read == nil {
					assert.NoError(t, verr)
				}
				return
			}
			require.Error(t, verr)
			for _, want := range tc.validate {
				assert.Contains(t, verr.Error(), want)
			}
			assert.NotContains(t, verr.Error(), "pw", "no secret in an error")
		})
	}
	_, err := Read(nil)
	assert.ErrorContains(t, err, "no --cloud-config given")
}
