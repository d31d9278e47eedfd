package oci

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/oci"
)

// With useInstancePrincipals and no key, the CCM calls as the instance it
// runs on: its region and compartment from the metadata service, a session
// token from the federation endpoint, every request signed with it.
func TestInstancePrincipalsCallAsTheInstance(t *testing.T) {
	e, err := emulator.New(emulator.Options{InstancePrincipals: true})
	e = coretest.Serve(t, e, err)
	f := e.Fixture()
	conf := fmt.Sprintf("useInstancePrincipals: true\nvcn: %s\nloadBalancer:\n  subnet1: %s\nendpoints:\n  api: %s\n  metadata: %s/opc/v2\n  auth: %s\n",
		f.VCNID, f.SubnetID, e.URL(), e.URL(), e.URL())
	c := cloudOn(t, conf)
	assert.Equal(t, f.CompartmentID, c.cfg.CompartmentID, "the instance's compartment")
	assert.Equal(t, "us-ashburn-1", c.cfg.Auth.Region, "the instance's region")

	id, _ := e.AddMachine("node-a")
	md, err := c.InstanceMetadata(t.Context(), nodeNamed("node-a", ""))
	require.NoError(t, err)
	assert.Equal(t, ProviderIDPrefix+id, md.ProviderID)

	keyID, _, err := c.sessions.SigningKey()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(keyID, "ST$"), "a session token signs (ociapi's TestAnInstancePrincipalsTokenIsRenewedAndDroppedWhenRefused holds its renewal)")
}

func TestInstancePrincipalsWithoutTheMetadataServiceSayWhatToSet(t *testing.T) {
	cfg, err := Read(strings.NewReader("useInstancePrincipals: true\nloadBalancer:\n  subnet1: " + subnet1 + "\nendpoints:\n  metadata: http://127.0.0.1:1/opc/v2\n"))
	require.NoError(t, err)
	_, err = New(cfg)
	require.ErrorContains(t, err, "set auth.region and compartment to start without it")
}
