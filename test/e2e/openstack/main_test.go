// Package openstack tests overcast-ccm --cloud-provider=openstack against a real
// OpenStack (test/openstack: keystone, nova with the fake driver, neutron, octavia)
// and a real kube-apiserver. Run it with `make test-openstack`.
package openstack

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

var (
	env     *framework.Env
	osEnv   map[string]string
	compute *gophercloud.ServiceClient // as the CCM's user, to make servers
)

func TestMain(m *testing.M) {
	var err error
	if osEnv, err = readEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "openstack e2e: %v\n(start the harness with `make openstack-up`)\n", err)
		os.Exit(1)
	}
	if compute, err = computeClient(); err != nil {
		fmt.Fprintf(os.Stderr, "openstack e2e: %v\n", err)
		os.Exit(1)
	}
	if env, err = framework.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "openstack e2e: cannot start the control plane: %v\n", err)
		os.Exit(1)
	}
	if err := env.ApplyCloud(context.Background(), "openstack"); err != nil {
		fmt.Fprintf(os.Stderr, "openstack e2e: applying deploy/openstack: %v\n", err)
		env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// stateDir is the harness's state directory (test/openstack/env.sh).
func stateDir() string {
	if s := os.Getenv("OVERCAST_OPENSTACK_STATE"); s != "" {
		return s
	}
	return "/var/tmp/overcast-openstack"
}

// readEnv reads the KEY=VALUE file test/openstack/up.sh writes.
func readEnv() (map[string]string, error) {
	f, err := os.Open(filepath.Join(stateDir(), "openstack.env"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	for _, k := range []string{"OS_AUTH_URL", "OVERCAST_OS_APPLICATION_CREDENTIAL_ID", "OVERCAST_OS_NETWORK_ID", "OVERCAST_OS_IMAGE_ID", "OVERCAST_OS_FLAVOR_ID", "OVERCAST_OS_CLOUD_CONF"} {
		if out[k] == "" {
			return nil, fmt.Errorf("%s is not in %s", k, f.Name())
		}
	}
	return out, sc.Err()
}

func computeClient() (*gophercloud.ServiceClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := gopenstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint:            osEnv["OS_AUTH_URL"],
		ApplicationCredentialID:     osEnv["OVERCAST_OS_APPLICATION_CREDENTIAL_ID"],
		ApplicationCredentialSecret: osEnv["OVERCAST_OS_APPLICATION_CREDENTIAL_SECRET"],
	})
	if err != nil {
		return nil, fmt.Errorf("authenticating as the CCM's application credential: %w", err)
	}
	c, err := gopenstack.NewComputeV2(p, gophercloud.EndpointOpts{Region: osEnv["OS_REGION_NAME"]})
	if err != nil {
		return nil, err
	}
	c.Microversion = "2.47"
	return c, nil
}

// novaServer is what the tests read of a server.
type novaServer struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Status           string `json:"status"`
	AvailabilityZone string `json:"OS-EXT-AZ:availability_zone"`
	Addresses        map[string][]struct {
		Addr string `json:"addr"`
	} `json:"addresses"`
}

func (s novaServer) fixedIP() string {
	for _, as := range s.Addresses {
		for _, a := range as {
			return a.Addr
		}
	}
	return ""
}

// createServer boots a server on the tenant network and waits until it is ACTIVE
// with an address; it is deleted when the test ends.
func createServer(t *testing.T, name string) novaServer {
	t.Helper()
	ctx := context.Background()
	r := servers.Create(ctx, compute, servers.CreateOpts{
		Name:      name,
		ImageRef:  osEnv["OVERCAST_OS_IMAGE_ID"],
		FlavorRef: osEnv["OVERCAST_OS_FLAVOR_ID"],
		Networks:  []servers.Network{{UUID: osEnv["OVERCAST_OS_NETWORK_ID"]}},
	}, nil)
	created, err := r.Extract()
	if err != nil {
		t.Fatalf("creating server %s: %v", name, err)
	}
	t.Cleanup(func() { deleteServer(t, created.ID) })
	var s novaServer
	err = devenv.Poll(2*time.Minute, time.Second, func() error {
		err := servers.Get(ctx, compute, created.ID).ExtractInto(&s)
		if gophercloud.ResponseCodeIs(err, 404) {
			return devenv.Permanent(fmt.Errorf("server %s vanished while booting: %w", name, err))
		}
		if err != nil {
			return err
		}
		if s.Status == "ERROR" {
			return devenv.Permanent(fmt.Errorf("server %s went to ERROR", name))
		}
		if s.Status != "ACTIVE" || s.fixedIP() == "" {
			return fmt.Errorf("server %s is %s", name, s.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func deleteServer(t *testing.T, id string) {
	ctx := context.Background()
	err := servers.Delete(ctx, compute, id).ExtractErr()
	if gophercloud.ResponseCodeIs(err, 404) {
		return
	}
	if err != nil {
		t.Errorf("deleting server %s: %v", id, err)
		return
	}
	if err := devenv.Poll(2*time.Minute, time.Second, func() error {
		err := servers.Get(ctx, compute, id).Err
		if gophercloud.ResponseCodeIs(err, 404) {
			return nil
		}
		return fmt.Errorf("server %s still exists", id)
	}); err != nil {
		t.Error(err)
	}
}

func cloudConf(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile(osEnv[key])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// until waits up to 3 minutes for f to answer nil; what says what is
// waited for.
func until(t *testing.T, what string, f func() error) {
	t.Helper()
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, f), what)
}
