package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
	"github.com/overcast-ccm/overcast/internal/providerid"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// ProviderIDPrefix is the scheme of OpenStack providerIDs (see providerid).
const ProviderIDPrefix = providerid.OpenStackPrefix

// Snapshot timing (besides the ages every cloud's snapshot serves at).
const (
	// serversFullEvery is how often the snapshot lists every server; in between
	// it asks Nova only for the servers changed since (changes-since, which
	// lists deleted servers too), one call however many servers there are. A
	// full listing drops what changes-since cannot report: servers whose
	// deleted rows were archived before the CCM saw them go.
	serversFullEvery = time.Hour
	// changesOverlap reaches back before the time Nova answered the last
	// listing: for a change whose transaction committed after that answer with
	// an earlier updated_at, and for hosts whose clocks differ a little (NTP
	// keeps them well within it). Longer is not safer for free: every change
	// made within it before an answer is listed again by the next refresh (e.g.
	// 2,000 servers booted at once, three pages). A change missed anyway shows
	// at the next full listing.
	changesOverlap = 10 * time.Second
)

// serverKeys: the ID first (its identity), then the name; a name two servers
// share is left out of the snapshot's index, so a Node of that name takes the
// direct path, which reports the ambiguity.
func serverKeys(s osapi.Server) []string {
	return []string{"id/" + s.ID, "name/" + s.Name}
}

func newServerSnapshot(gw osapi.API) *snapshot.Snapshot[osapi.Server] {
	since := func(ctx context.Context, mark string) ([]osapi.Server, string, error) {
		changesSince := ""
		if mark != "" {
			t, err := time.Parse(time.RFC3339, mark)
			if err != nil {
				return nil, "", fmt.Errorf("changes-since mark %q: %w", mark, err)
			}
			changesSince = t.Add(-changesOverlap).UTC().Format(time.RFC3339)
		}
		return listServers(ctx, gw, changesSince)
	}
	return snapshot.NewIncremental("openstack", snapshot.MaxAge, snapshot.MinMiss, serverKeys, snapshot.Incremental[osapi.Server]{
		Since:     since,
		Gone:      func(s osapi.Server) bool { return s.Status == "DELETED" },
		FullEvery: serversFullEvery,
	}).WithBudget(snapshot.ReadBudget)
}

// listServers lists every server, or those changed since changesSince (deleted
// ones included). next is Nova's own time when it answered the first page (its
// Date header): every change committed before then is in this listing, so the
// next listing starts there, and a quiet cloud answers it with nothing. Without
// a Date header it is the newest "updated" time listed, or "" (the next
// listing is then a full one).
func listServers(ctx context.Context, gw osapi.API, changesSince string) (list []osapi.Server, next string, err error) {
	if err := gw.Session(ctx, osapi.Nova); err != nil {
		return nil, "", err
	}
	query := url.Values{"limit": {"1000"}}
	if changesSince != "" {
		query.Set("changes-since", changesSince)
	}
	list, answered, err := gw.ListServers(ctx, query)
	if err != nil {
		return nil, "", fmt.Errorf("listing servers: %w", err)
	}
	if answered.IsZero() {
		for _, s := range list {
			if t, err := time.Parse(time.RFC3339, s.Updated); err == nil && t.After(answered) {
				answered = t
			}
		}
	}
	if answered.IsZero() {
		return list, "", nil
	}
	return list, answered.UTC().Format(time.RFC3339), nil
}

// ErrForeignProviderID says a Node's providerID is not openstack://; such a Node is never taken
// for a missing server.
var ErrForeignProviderID = providerid.ErrForeign

// serverID returns the server UUID of a providerID ("" for none).
func serverID(providerID string) (string, error) { return providerid.ParseOpenStack(providerID) }

// find locates the Node's server: in a snapshot at most maxAge old, else directly (GET by ID, or a
// list filtered by exact name). found=false only when the API itself said there is
// no such server; any failure is an error, never "gone".
func (c *Cloud) find(ctx context.Context, node *v1.Node, maxAge time.Duration) (osapi.Server, bool, error) {
	id, err := serverID(node.Spec.ProviderID)
	if err != nil {
		return osapi.Server{}, false, err
	}
	key := "name/" + node.Name
	if id != "" {
		key = "id/" + id
	}
	s, found, err := c.servers.GetWithin(ctx, key, maxAge)
	if err != nil {
		return osapi.Server{}, false, err
	}
	if found {
		return s, true, nil
	}
	if err := c.api.Session(ctx, osapi.Nova); err != nil {
		return osapi.Server{}, false, err
	}
	if id != "" {
		got, err := c.api.GetServer(ctx, id)
		switch {
		case errors.Is(err, outcome.ErrNotFound):
			return osapi.Server{}, false, nil
		case err != nil:
			return osapi.Server{}, false, fmt.Errorf("getting server %s: %w", id, err)
		}
		c.servers.Put(got)
		return got, true, nil
	}
	list, _, err := c.api.ListServers(ctx, url.Values{"name": {"^" + regexp.QuoteMeta(node.Name) + "$"}})
	if err != nil {
		return osapi.Server{}, false, fmt.Errorf("listing servers named %s: %w", node.Name, err)
	}
	return provider.OneNamed(list, func(s osapi.Server) string { return s.ID }, "servers", node.Name, providerid.OpenStack(""))
}

// InstanceExists is false only when Nova says the server is gone (404, no server
// of that name, or status DELETED). Errors, 401/403, timeouts and 5xx are errors.
func (c *Cloud) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	s, found, err := c.find(ctx, node, c.lifecycleMaxAge())
	if err != nil {
		return false, err
	}
	exists := found && s.Status != "DELETED"
	if !exists {
		klog.FromContext(ctx).Info("Server of Node is gone", "node", klog.KObj(node), "providerID", node.Spec.ProviderID)
	}
	return exists, nil
}

// InstanceShutdown is true for a SHUTOFF server.
func (c *Cloud) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	s, found, err := c.find(ctx, node, c.lifecycleMaxAge())
	return provider.InstanceShutdown(s, found, err, func(s osapi.Server) bool { return s.Status == "SHUTOFF" })
}

// lifecycleMaxAge is [Global] lifecycle-max-age, never below the age any other
// look-up accepts.
func (c *Cloud) lifecycleMaxAge() time.Duration {
	return max(snapshot.LifecycleAge(c.globals().LifecycleMaxAge.Duration), snapshot.MaxAge)
}

// addressesOf is the server's addresses by network: Neutron's ports when known,
// else Nova's view of them.
func (c *Cloud) addressesOf(ctx context.Context, s osapi.Server) map[string][]osapi.ServerAddress {
	if c.ports != nil {
		if a, ok := c.ports.of(ctx, s.ID); ok {
			return a
		}
	}
	return s.Addresses
}

// InstanceMetadata returns providerID, flavor, availability zone, region and
// addresses. A Node that matches no server gets a Warning Event.
func (c *Cloud) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	s, found, err := c.find(ctx, node, snapshot.MaxAge)
	if err := c.Looked(ctx, node, "OpenStack server", found, err, "by name in the project of the CCM's credentials"); err != nil {
		return nil, err
	}
	return c.metadataOf(ctx, s), nil
}

// metadataOf is what the node controller is told of server s.
func (c *Cloud) metadataOf(ctx context.Context, s osapi.Server) *cloudprovider.InstanceMetadata {
	flavor := s.Flavor.OriginalName
	if flavor == "" {
		flavor = s.Flavor.ID
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    providerid.OpenStack(s.ID),
		InstanceType:  flavor,
		Zone:          s.AvailabilityZone,
		Region:        c.api.Region(),
		NodeAddresses: nodeAddresses(s.Name, c.addressesOf(ctx, s), []string{s.AccessIPv4, s.AccessIPv6}, c.cfg.Networking),
	}
}
