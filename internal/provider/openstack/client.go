package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
)

// novaMicroversion gives servers' flavor names (original_name) and tags.
const novaMicroversion = "2.47"

// clients are the authenticated service clients, built on first use and rebuilt
// after a failure (Keystone down at start must not crash-loop the CCM).
type clients struct {
	cfg Config

	mu       sync.Mutex
	provider *gophercloud.ProviderClient
	compute  *gophercloud.ServiceClient
	network  *gophercloud.ServiceClient
	octavia  *gophercloud.ServiceClient
}

// octaviaClient returns the Octavia client, authenticating on first use.
func (c *clients) octaviaClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.octavia != nil {
		return c.octavia, nil
	}
	provider, err := c.providerClient(ctx)
	if err != nil {
		return nil, err
	}
	octavia, err := openstack.NewLoadBalancerV2(provider, c.endpointOpts())
	if err != nil {
		return nil, fmt.Errorf("finding the load-balancer endpoint: %w", redact(err))
	}
	c.octavia = octavia
	return octavia, nil
}

func (c *clients) endpointOpts() gophercloud.EndpointOpts {
	return gophercloud.EndpointOpts{Region: c.cfg.Global.Region, Availability: availability(c.cfg.Global.EndpointType)}
}

// providerClient authenticates once; the provider re-authenticates by itself.
// Callers hold c.mu.
func (c *clients) providerClient(ctx context.Context) (*gophercloud.ProviderClient, error) {
	if c.provider != nil {
		return c.provider, nil
	}
	p, err := newProvider(ctx, c.cfg.Global)
	if err != nil {
		return nil, err
	}
	c.provider = p
	return p, nil
}

// networkClient returns the Neutron client, authenticating on first use.
func (c *clients) networkClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.network != nil {
		return c.network, nil
	}
	provider, err := c.providerClient(ctx)
	if err != nil {
		return nil, err
	}
	network, err := openstack.NewNetworkV2(provider, c.endpointOpts())
	if err != nil {
		return nil, fmt.Errorf("finding the network endpoint: %w", redact(err))
	}
	c.network = network
	return network, nil
}

// computeClient returns the Nova client, authenticating on first use.
func (c *clients) computeClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.compute != nil {
		return c.compute, nil
	}
	provider, err := c.providerClient(ctx)
	if err != nil {
		return nil, err
	}
	compute, err := openstack.NewComputeV2(provider, c.endpointOpts())
	if err != nil {
		return nil, fmt.Errorf("finding the compute endpoint: %w", redact(err))
	}
	compute.Microversion = novaMicroversion
	c.compute = compute
	return compute, nil
}

func availability(endpointType string) gophercloud.Availability {
	switch strings.TrimSuffix(endpointType, "URL") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	}
	return gophercloud.AvailabilityPublic
}

// newProvider authenticates against Keystone through the shared cloudapi transport
// (rate limits, retries, metrics, secrets kept out of errors).
func newProvider(ctx context.Context, g Global) (*gophercloud.ProviderClient, error) {
	base, err := baseTransport(g)
	if err != nil {
		return nil, err
	}
	hc, err := cloudapi.NewClient(cloudapi.Config{Cloud: "openstack"}, base)
	if err != nil {
		return nil, err
	}
	provider, err := openstack.NewClient(g.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("[Global] auth-url: %w", err)
	}
	provider.HTTPClient = *hc
	provider.UserAgent.Prepend("overcast-ccm")
	if err := openstack.Authenticate(ctx, provider, authOptions(g)); err != nil {
		return nil, fmt.Errorf("authenticating to %s: %w", redactURL(g.AuthURL), redact(err))
	}
	return provider, nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[Global] auth-url"
	}
	return cloudapi.RedactURL(u)
}

// redact strips URLs' query strings from an SDK error (tokens never appear in
// gophercloud's messages; query strings could).
func redact(err error) error { return cloudapi.RedactError(err) }

func authOptions(g Global) gophercloud.AuthOptions {
	o := gophercloud.AuthOptions{
		IdentityEndpoint:            g.AuthURL,
		Username:                    g.Username,
		UserID:                      g.UserID,
		Password:                    g.Password,
		TenantID:                    g.TenantID,
		TenantName:                  g.TenantName,
		DomainID:                    firstNonEmpty(g.UserDomainID, g.DomainID),
		DomainName:                  firstNonEmpty(g.UserDomainName, g.DomainName),
		TokenID:                     g.Token,
		ApplicationCredentialID:     g.ApplicationCredentialID,
		ApplicationCredentialName:   g.ApplicationCredentialName,
		ApplicationCredentialSecret: g.ApplicationCredentialSecret,
		AllowReauth:                 g.Token == "",
	}
	if o.ApplicationCredentialID != "" || o.ApplicationCredentialName != "" {
		// An application credential carries its own project scope.
		o.TenantID, o.TenantName = "", ""
		o.Password = ""
	}
	if g.TenantDomainID != "" || g.TenantDomainName != "" {
		o.Scope = &gophercloud.AuthScope{
			ProjectID: g.TenantID, ProjectName: g.TenantName,
			DomainID: g.TenantDomainID, DomainName: g.TenantDomainName,
		}
		o.TenantID, o.TenantName = "", ""
	}
	return o
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}

func baseTransport(g Global) (http.RoundTripper, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: g.TLSInsecure} //nolint:gosec // tls-insecure is the operator's explicit choice
	if g.CAFile != "" {
		pem, err := os.ReadFile(g.CAFile)
		if err != nil {
			return nil, fmt.Errorf("[Global] ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("[Global] ca-file %s: no PEM certificate in it", g.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if g.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(g.CertFile, g.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("[Global] cert-file/key-file: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = tlsCfg
	return tr, nil
}
