package cloudstack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An ACL item is changed in place by updateNetworkACLItem: the fields given
// change, the others, its id and its reason stay; a bad value is refused.
func TestAnACLItemIsUpdatedInPlace(t *testing.T) {
	e := started(t, Options{VPC: true})
	c := user(e)
	p := c.NetworkACL.NewCreateNetworkACLParams("tcp")
	p.SetAclid(e.fx.ACLListID)
	p.SetStartport(80)
	p.SetEndport(80)
	p.SetCidrlist([]string{"10.0.0.0/8"})
	p.SetReason("made by the test")
	made, err := c.NetworkACL.CreateNetworkACL(p)
	require.NoError(t, err)
	u := c.NetworkACL.NewUpdateNetworkACLItemParams(made.Id)
	u.SetAction("Deny")
	u.SetCidrlist([]string{"192.0.2.0/24"})
	u.SetEndport(81)
	_, err = c.NetworkACL.UpdateNetworkACLItem(u)
	require.NoError(t, err)
	got, _, err := c.NetworkACL.GetNetworkACLByID(made.Id)
	require.NoError(t, err)
	assert.Equal(t, []string{"Deny", "192.0.2.0/24", "80", "81", "Ingress", "tcp", "made by the test"},
		[]string{got.Action, got.Cidrlist, got.Startport, got.Endport, got.Traffictype, got.Protocol, got.Reason})

	bad := c.NetworkACL.NewUpdateNetworkACLItemParams(made.Id)
	bad.SetTraffictype("Sideways")
	_, err = c.NetworkACL.UpdateNetworkACLItem(bad)
	require.ErrorContains(t, err, "431")
}
