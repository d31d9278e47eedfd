package osapi

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/cloudapi"
)

// novaMicroversion gives servers' flavor names (original_name) and tags.
const novaMicroversion = "2.47"

// clients are the authenticated service clients, built on first use and rebuilt
// after a failure (Keystone down at start must not crash-loop the CCM).
type clients struct {
	// settings are those in effect (setGlobal changes them).
	settings Settings
	// createTimeout bounds a load balancer's create (OctaviaCreateTimeout
	// when 0).
	CreateTimeout time.Duration

	// authOnce serialises authentication (one Keystone token for every
	// caller); a caller waits for it only as long as its context allows. mu
	// guards the fields and is never held during a call.
	authOnce cloudapi.Turn

	mu       sync.Mutex
	gen      int // counts setGlobal's changes: a client of older settings is not kept
	endpoint gophercloud.EndpointOpts
	provider *gophercloud.ProviderClient
	compute  *gophercloud.ServiceClient
	network  *gophercloud.ServiceClient
	octavia  *gophercloud.ServiceClient
	barbican *gophercloud.ServiceClient
}

// SetSettings swaps in new settings (rotated credentials): the next call
// authenticates with them. It says whether anything changed.
func (c *clients) SetSettings(g Settings) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g == c.settings {
		return false
	}
	c.settings = g
	c.gen++
	c.provider, c.compute, c.network, c.octavia, c.barbican = nil, nil, nil, nil, nil
	return true
}

// providerClient authenticates once; the provider re-authenticates by itself.
func (c *clients) providerClient(ctx context.Context) (*gophercloud.ProviderClient, error) {
	if p := loaded(c, &c.provider); p != nil {
		return p, nil
	}
	done, err := c.turn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	p, _, err := c.authenticated(ctx)
	return p, err
}

// loaded is *field of c, read under its lock.
func loaded[T any](c *clients, field *T) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *field
}

// turn waits, as long as ctx allows, for the turn to authenticate.
func (c *clients) turn(ctx context.Context) (func(), error) {
	return c.authOnce.Take(ctx, "the authentication to Keystone")
}

// authenticated is the provider and the endpoints' options, authenticating
// when no one has yet. The caller has its turn (authenticating).
func (c *clients) authenticated(ctx context.Context) (*gophercloud.ProviderClient, int, error) {
	c.mu.Lock()
	p, g, gen := c.provider, c.settings, c.gen
	c.mu.Unlock()
	if p != nil {
		return p, gen, nil
	}
	a, err := resolveAuth(g)
	if err != nil {
		return nil, 0, err
	}
	p, err = newProvider(ctx, a)
	if err != nil {
		return nil, 0, err
	}
	if a.endpoint.Region == "" {
		// The classic guide's cloud.conf names no region: one the catalog has
		// alone is the region (of the endpoints, and of the Nodes' label).
		a.endpoint.Region = catalogRegion(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.provider, c.endpoint = p, a.endpoint
	}
	return p, gen, nil
}

// Region is the region of the endpoints in use: the configured one, else the
// catalog's only one once authenticated ("" before, or when it has several).
func (c *clients) Region() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settings.Region != "" {
		return c.settings.Region
	}
	return c.endpoint.Region
}

// catalogRegion is the one region of the token's catalog, "" when it has none
// or several (a choice the cloud.conf must make).
func catalogRegion(p *gophercloud.ProviderClient) string {
	var cat *tokens.ServiceCatalog
	var err error
	switch r := p.GetAuthResult().(type) {
	case tokens.CreateResult:
		cat, err = r.ExtractServiceCatalog()
	case tokens.GetResult:
		cat, err = r.ExtractServiceCatalog()
	default:
		return ""
	}
	if err != nil || cat == nil {
		return ""
	}
	regions := map[string]bool{}
	for _, e := range cat.Entries {
		for _, ep := range e.Endpoints {
			if r := cmp.Or(ep.RegionID, ep.Region); r != "" {
				regions[r] = true
			}
		}
	}
	if len(regions) != 1 {
		return ""
	}
	for r := range regions {
		return r
	}
	return ""
}

// OctaviaClient returns the Octavia client, authenticating on first use.
func (c *clients) OctaviaClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	return c.service(ctx, &c.octavia, "load-balancer", openstack.NewLoadBalancerV2)
}

// KeyManagerClient returns the Barbican client, authenticating on first use.
func (c *clients) KeyManagerClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	return c.service(ctx, &c.barbican, "key-manager", openstack.NewKeyManagerV1)
}

// NetworkClient returns the Neutron client, authenticating on first use.
func (c *clients) NetworkClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	return c.service(ctx, &c.network, "network", openstack.NewNetworkV2)
}

// ComputeClient returns the Nova client (at the microversion the CCM
// speaks), authenticating on first use.
func (c *clients) ComputeClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	return c.service(ctx, &c.compute, "compute", func(p *gophercloud.ProviderClient, eo gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error) {
		compute, err := openstack.NewComputeV2(p, eo)
		if err == nil {
			compute.Microversion = novaMicroversion
		}
		return compute, err
	})
}

// service is *client, made on first use from the catalog's endpoint of kind
// (which authenticates when nothing has yet).
func (c *clients) service(ctx context.Context, client **gophercloud.ServiceClient, kind string,
	newClient func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error)) (*gophercloud.ServiceClient, error) {
	if sc := loaded(c, client); sc != nil {
		return sc, nil
	}
	done, err := c.turn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if sc := loaded(c, client); sc != nil {
		return sc, nil
	}
	provider, gen, err := c.authenticated(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sc, err := newClient(provider, c.endpoint)
	if err != nil {
		return nil, fmt.Errorf("finding the %s endpoint: %w", kind, redact(err))
	}
	if c.gen == gen {
		*client = sc
	}
	return sc, nil
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

// auth is how to reach and authenticate to Keystone, from [Global] or from a
// clouds.yaml.
type auth struct {
	opts     gophercloud.AuthOptions
	endpoint gophercloud.EndpointOpts
	tls      *tls.Config
	limits   cloudapi.Config // client-side rate limits
}

// Check says what is wrong with s that no call would change: a clouds.yaml
// that cannot be read or has no such cloud, a CA, certificate or key file
// that cannot be loaded.
func Check(s Settings) error {
	_, err := resolveAuth(s)
	return err
}

// resolveAuth turns [Global] into auth options: a clouds.yaml entry (use-clouds),
// a trust (the trustee's password scoped to the trust), an application
// credential, a token, or a password.
func resolveAuth(g Settings) (auth, error) {
	a := auth{endpoint: gophercloud.EndpointOpts{Region: g.Region, Availability: availability(g.EndpointType)}}
	a.limits = cloudapi.Config{Cloud: "openstack", AnswersJSON: true, Endpoint: "[Global] auth-url and the endpoints of its catalog"}.WithQPS(g.APIReadQPS, g.APIWriteQPS)
	if g.UseClouds {
		opts := []clouds.ParseOption{}
		if g.CloudsFile != "" {
			opts = append(opts, clouds.WithLocations(g.CloudsFile))
		}
		if g.Cloud != "" {
			opts = append(opts, clouds.WithCloudName(g.Cloud))
		}
		ao, eo, tlsCfg, err := clouds.Parse(opts...)
		if err != nil {
			return a, fmt.Errorf("[Global] use-clouds: %w", cfgutil.QuietYAMLError(redact(err)))
		}
		ao.AllowReauth = ao.TokenID == ""
		a.opts, a.tls = ao, tlsCfg
		if a.endpoint.Region == "" {
			a.endpoint.Region = eo.Region
		}
		if g.EndpointType == "" && eo.Availability != "" {
			a.endpoint.Availability = eo.Availability
		}
		return a, nil
	}
	a.opts = authOptions(g)
	tlsCfg, err := globalTLS(g)
	a.tls = tlsCfg
	return a, err
}

// newProvider authenticates against Keystone through the shared cloudapi transport
// (rate limits, retries, metrics, secrets kept out of errors).
func newProvider(ctx context.Context, a auth) (*gophercloud.ProviderClient, error) {
	hc, err := cloudapi.NewClient(a.limits, baseTransport(a))
	if err != nil {
		return nil, err
	}
	provider, err := openstack.NewClient(a.opts.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("auth-url: %w", redact(err))
	}
	provider.HTTPClient = *hc
	provider.UserAgent.Prepend("overcast-ccm")
	if err := openstack.Authenticate(ctx, provider, a.opts); err != nil {
		return nil, fmt.Errorf("authenticating to %s: %w", RedactURL(a.opts.IdentityEndpoint), keystoneErr(err))
	}
	return provider, nil
}

// RedactURL is s without its query string (or "[Global] auth-url" when it
// is not a URL): what may be shown of an endpoint.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[Global] auth-url"
	}
	return cloudapi.RedactURL(u)
}

// redact strips URLs' query strings from an SDK error (tokens never appear in
// gophercloud's messages; query strings could).
func redact(err error) error { return cloudapi.RedactError(err) }

func authOptions(g Settings) gophercloud.AuthOptions {
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
	if g.TrustID != "" {
		// The trustee acts for the trustor, within the trust's roles and project.
		return gophercloud.AuthOptions{
			IdentityEndpoint: g.AuthURL,
			UserID:           g.TrusteeID,
			Password:         g.TrusteePassword,
			AllowReauth:      true,
			Scope:            &gophercloud.AuthScope{TrustID: g.TrustID},
		}
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

// maxIdleConnsPerEndpoint: how many connections to one endpoint are kept for
// reuse.
const maxIdleConnsPerEndpoint = 32

func baseTransport(a auth) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = a.tls
	// A burst (a restart's resync, many Services at once) has dozens of calls
	// in flight to one endpoint: keeping only Go's default 2 connections idle
	// would make most of them a new TLS handshake.
	tr.MaxIdleConnsPerHost = maxIdleConnsPerEndpoint
	return tr
}

// globalTLS: ca-file, cert-file/key-file and tls-insecure of [Global].
func globalTLS(g Settings) (*tls.Config, error) {
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
	return tlsCfg, nil
}
