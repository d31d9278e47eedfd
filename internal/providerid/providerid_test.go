package providerid

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenStackProviderIDs(t *testing.T) {
	const id = "4f1c7a2e-0b8d-4c55-9a3e-2d6b1f0e9c11"
	assert.Equal(t, "openstack:///"+id, OpenStack(id))
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{"written by either CCM", "openstack:///" + id, id, nil},
		{"with a region, as cloud-provider-openstack writes it when it has one", "openstack://RegionOne/" + id, id, nil},
		{"none yet", "", "", nil},
		{"another cloud's", "aws:///eu-west-1a/i-0abc", "", ErrForeign},
		{"no UUID", "openstack:///", "", ErrMalformed},
		{"a path", "openstack:///a/b", "", ErrMalformed},
		{"no slash", "openstack://" + id, "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOpenStack(tc.in)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), "openstack:///<server UUID>", "the error shows the form wanted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLocalProviderIDs(t *testing.T) {
	assert.Equal(t, "local://node-1", Local("node-1"))
	name, err := ParseLocal("local://node-1")
	require.NoError(t, err)
	assert.Equal(t, "node-1", name)
	_, err = ParseLocal("openstack:///x")
	assert.ErrorIs(t, err, ErrForeign)
	_, err = ParseLocal("local://")
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestCloudStackProviderIDsInEveryFormThePeerWrote(t *testing.T) {
	const id = "915653c4-298b-4d74-bdee-4ced282114f1"
	assert.Equal(t, "external-cloudstack://"+id, CloudStack(id), "the peer's form, both ways")
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{"the peer's form", "external-cloudstack://" + id, id, nil},
		{"a bare UUID (the peer before 1.0)", id, id, nil},
		{"cloudstack:/// form", "cloudstack:///" + id, id, nil},
		{"cloudstack:// form", "cloudstack://" + id, id, nil},
		{"none yet", "", "", nil},
		{"another cloud's", "openstack:///" + id, "", ErrForeign},
		{"the peer's early bug: no UUID", "external-cloudstack", "", ErrMalformed},
		{"not a UUID", "external-cloudstack://node-1", "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCloudStack(tc.in)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), "external-cloudstack://<VM UUID>")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
