package openstack

// The reference page, by make generate.
//go:generate go run ../../../hack/gen-config-docs -file config.go -root Config -title "OpenStack cloud.conf" -out ../../../docs/reference/openstack-cloud-conf.md

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Config is cloud-provider-openstack's cloud.conf, read as it reads it: every
// section and key it documents is accepted under its own name.
type Config struct {
	Global              Global                        `ini:"Global"`
	LoadBalancer        LoadBalancer                  `ini:"LoadBalancer"`
	LoadBalancerClasses map[string]*LoadBalancerClass `ini:"LoadBalancerClass"`
	Networking          Networking                    `ini:"Networking"`
	Route               Route                         `ini:"Route"`
	Metadata            Metadata                      `ini:"Metadata"`
	// BlockStorage belongs to the Cinder CSI driver; accepted, with a warning.
	BlockStorage BlockStorage `ini:"BlockStorage"`

	// path is where the cloud.conf was read from ("" for a stream): the CCM
	// reads it again, and its credentials-file, to pick up new credentials.
	path string
}

// Global holds the credentials and endpoint.
type Global struct {
	// Keystone v3 URL, such as https://keystone.example:5000/v3. Required unless use-clouds.
	AuthURL string `ini:"auth-url"`
	// Which catalog endpoints to call: public, internal or admin.
	// Default: public
	EndpointType string `ini:"os-endpoint-type"`
	// PEM file of the CAs that sign the OpenStack endpoints' certificates.
	// Default: the system's CAs
	CAFile string `ini:"ca-file"`
	// PEM client certificate for the OpenStack endpoints (with key-file).
	CertFile string `ini:"cert-file"`
	// PEM private key of cert-file.
	KeyFile string `ini:"key-file" secret:"false"`
	// User name for password authentication (with user-domain-name or domain-name).
	Username string `ini:"username"`
	// User ID for password authentication, instead of username.
	UserID string `ini:"user-id"`
	// Password of username or user-id. A secret: never logged.
	Password string `ini:"password" secret:"true"`
	// Region of the catalog endpoints; also the Nodes' topology.kubernetes.io/region label.
	Region string `ini:"region"`
	// Domain ID of the user (and of the project when no tenant-domain-id is given).
	DomainID string `ini:"domain-id"`
	// Domain name of the user (and of the project when no tenant-domain-name is given).
	DomainName string `ini:"domain-name"`
	// Project ID to scope the token to (password authentication).
	TenantID string `ini:"tenant-id"`
	// Project name to scope the token to, instead of tenant-id.
	TenantName string `ini:"tenant-name"`
	// Domain ID of the project, when it differs from the user's.
	TenantDomainID string `ini:"tenant-domain-id"`
	// Domain name of the project, when it differs from the user's.
	TenantDomainName string `ini:"tenant-domain-name"`
	// Domain ID of the user; wins over domain-id.
	UserDomainID string `ini:"user-domain-id"`
	// Domain name of the user; wins over domain-name.
	UserDomainName string `ini:"user-domain-name"`
	// Keystone trust to act under: the trustee (trustee-id, trustee-password) gets the trustor's roles on the trust's project.
	TrustID string `ini:"trust-id"`
	// User ID of the trustee of trust-id.
	TrusteeID string `ini:"trustee-id"`
	// Password of trustee-id. A secret: never logged.
	TrusteePassword string `ini:"trustee-password" secret:"true"`
	// Authenticate with an entry of a clouds.yaml instead of this section's credentials.
	// Default: false
	UseClouds bool `ini:"use-clouds"`
	// The clouds.yaml of use-clouds.
	// Default: the standard locations (./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml)
	CloudsFile string `ini:"clouds-file"`
	// The entry of the clouds.yaml to use.
	// Default: $OS_CLOUD
	Cloud string `ini:"cloud"`
	// Application credential ID (it carries its own project scope).
	ApplicationCredentialID string `ini:"application-credential-id" secret:"false"`
	// Application credential name, with the user (username or user-id and its domain).
	ApplicationCredentialName string `ini:"application-credential-name" secret:"false"`
	// Secret of the application credential. A secret: never logged.
	ApplicationCredentialSecret string `ini:"application-credential-secret" secret:"true"`
	// Skip verification of the endpoints' TLS certificates. Only for tests.
	// Default: false
	TLSInsecure bool `ini:"tls-insecure"`
	// A Keystone token to use as it is (it cannot be renewed).
	Token string `ini:"token" secret:"true"`
	// CredentialsFile (an Overcast extension) names a second INI file, typically
	// a mounted Secret, whose [Global] keys override these: the rest of the
	// cloud.conf can then live in a ConfigMap. Both files are read again every
	// few seconds; changed credentials take effect without a restart.
	CredentialsFile string `ini:"credentials-file" secret:"false"`
	// Client-side limit of read calls (GET) to OpenStack, per second, with a burst
	// of twice as many (an Overcast extension).
	// Default: 100
	APIReadQPS int `ini:"api-read-qps"`
	// Client-side limit of write calls (POST, PUT, DELETE) to OpenStack, per
	// second, with a burst of twice as many (an Overcast extension). Creating a
	// load balancer takes four writes, so this bounds how fast many Services get
	// theirs.
	// Default: 50
	APIWriteQPS int `ini:"api-write-qps"`
	// How old the shared list of servers may be when the node lifecycle
	// controller asks, every few seconds, whether a NotReady Node's server still
	// exists or is shut down (an Overcast extension). The list is refreshed for
	// Node initialisation and the periodic address update anyway, so with the
	// default these questions cost no call of their own; a shorter age finds a
	// shut down or deleted server sooner at one listing per that age while any
	// Node is NotReady. A server missing from the list is always confirmed by a
	// direct GET before its Node is deleted.
	// Default: 5m
	LifecycleMaxAge cfgutil.Duration `ini:"lifecycle-max-age"`
}

// settings are the session's: how to reach and authenticate to Keystone.
func (g Global) settings() osapi.Settings {
	return osapi.Settings{
		AuthURL: g.AuthURL, EndpointType: g.EndpointType, Region: g.Region,
		CAFile: g.CAFile, CertFile: g.CertFile, KeyFile: g.KeyFile, TLSInsecure: g.TLSInsecure,
		Username: g.Username, UserID: g.UserID, Password: g.Password,
		DomainID: g.DomainID, DomainName: g.DomainName, UserDomainID: g.UserDomainID, UserDomainName: g.UserDomainName,
		TenantID: g.TenantID, TenantName: g.TenantName, TenantDomainID: g.TenantDomainID, TenantDomainName: g.TenantDomainName,
		TrustID: g.TrustID, TrusteeID: g.TrusteeID, TrusteePassword: g.TrusteePassword,
		ApplicationCredentialID: g.ApplicationCredentialID, ApplicationCredentialName: g.ApplicationCredentialName,
		ApplicationCredentialSecret: g.ApplicationCredentialSecret,
		Token:                       g.Token, UseClouds: g.UseClouds, CloudsFile: g.CloudsFile, Cloud: g.Cloud,
		APIReadQPS: g.APIReadQPS, APIWriteQPS: g.APIWriteQPS,
	}
}

// LoadBalancer configures Octavia load balancers.
type LoadBalancer struct {
	// Serve Services of type LoadBalancer through Octavia.
	// Default: true
	Enabled *bool `ini:"enabled"`
	// External network the floating IPs of public load balancers come from.
	// Default: the only external network the project sees
	FloatingNetworkID string `ini:"floating-network-id"`
	// Subnet of the floating network, by name pattern (see the floating-subnet annotation).
	FloatingSubnet string `ini:"floating-subnet"`
	// Subnet of the floating network, by ID.
	FloatingSubnetID string `ini:"floating-subnet-id"`
	// Subnet of the floating network, by Neutron tags (see the floating-subnet-tags annotation).
	FloatingSubnetTags string `ini:"floating-subnet-tags"`
	// Pool algorithm: ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT.
	// Default: ROUND_ROBIN
	LBMethod string `ini:"lb-method"`
	// Octavia provider driver, such as amphora or ovn.
	// Default: Octavia's default provider
	LBProvider string `ini:"lb-provider"`
	// Create load balancers step by step (the load balancer, then each
	// listener, pool, members and monitor) instead of in one fully populated
	// create, for providers that leave the listeners and pools of a fully
	// populated load balancer pending. Such a provider is also found out on the
	// first load balancer, which is then rebuilt step by step.
	// Default: false
	ProviderRequiresSerialAPICalls bool `ini:"provider-requires-serial-api-calls"`
	// Accepted for compatibility; Octavia v2 is the only API (any other value gets a warning).
	LBVersion string `ini:"lb-version"`
	// Subnet of the load balancers' VIPs.
	SubnetID string `ini:"subnet-id"`
	// Subnet through which the load balancers reach the Nodes.
	// Default: the VIP subnet
	MemberSubnetID string `ini:"member-subnet-id"`
	// Network of the VIPs, when no subnet-id says which subnet of it.
	NetworkID string `ini:"network-id"`
	// (An Overcast extension.) The subnet of the VIPs of IPv6 Services (spec.ipFamilies starting with IPv6); the annotation subnet-id wins.
	// Default: the one IPv6 subnet of the VIPs' network (network-id, or subnet-id's network)
	IPv6SubnetID string `ini:"ipv6-subnet-id"`
	// A security group per Service, as cloud-provider-openstack makes it (lb-sg-<UID>-<namespace>-<name>): a rule per NodePort (and healthCheckNodePort) from the member subnets (from the source ranges with lb-provider ovn), on each member Node's port. Tagged as this cluster's; deleted with the Service, whatever this setting says then.
	// Default: false
	ManageSecurityGroups bool `ini:"manage-security-groups"`
	// Give every pool a health monitor. Services with externalTrafficPolicy Local get one regardless.
	// Default: false
	CreateMonitor bool `ini:"create-monitor"`
	// Time between two probes of a Node, a duration such as 5s.
	// Default: 5s
	MonitorDelay cfgutil.Duration `ini:"monitor-delay"`
	// How long a probe may take, at most monitor-delay.
	// Default: 3s
	MonitorTimeout cfgutil.Duration `ini:"monitor-timeout"`
	// Probes in a row that must pass before a Node counts as healthy (1 to 10).
	// Default: 1
	MonitorMaxRetries uint `ini:"monitor-max-retries"`
	// Probes in a row that must fail before a Node counts as unhealthy (1 to 10).
	// Default: 3
	MonitorMaxRetriesDown uint `ini:"monitor-max-retries-down"`
	// Make load balancers internal (no floating IP) unless a Service says otherwise.
	// Default: false
	InternalLB bool `ini:"internal-lb"`
	// Only Nodes with these labels become members: comma-separated key or key=value.
	// Default: every Node
	NodeSelector string `ini:"node-selector"`
	// Accepted for compatibility; Overcast always deletes its load balancers with Octavia's cascade delete.
	// Default: true
	CascadeDelete *bool `ini:"cascade-delete"`
	// Octavia flavor of new load balancers.
	// Default: Octavia's default flavor
	FlavorID string `ini:"flavor-id"`
	// Octavia availability zone of new load balancers.
	// Default: Octavia's choice
	AvailabilityZone string `ini:"availability-zone"`
	// With PROXY protocol, publish the hostname <address>.<ingress-hostname-suffix> instead of the address, so kube-proxy sends in-cluster traffic through the load balancer.
	// Default: false
	EnableIngressHostname bool `ini:"enable-ingress-hostname"`
	// Suffix of enable-ingress-hostname's names.
	// Default: nip.io
	IngressHostnameSuffix string `ini:"ingress-hostname-suffix"`
	// Certificate every Service terminates TLS with on its TCP ports (TERMINATED_HTTPS listeners, HTTP pools) unless it names its own with the annotation default-tls-container-ref or overcast.io/tls-secret: a Barbican container or secret URL.
	// Default: none (no TLS termination)
	DefaultTLSContainerRef string `ini:"default-tls-container-ref"`
	// Where TLS references live: barbican (each is read in Barbican before anything is built with it) or external (passed to Octavia unread; overcast.io/tls-secret needs barbican).
	// Default: barbican
	ContainerStore string `ini:"container-store"`
	// How many Services may share one load balancer (the load-balancer-id annotation), the one it was made for included; a Service beyond it gets a Warning and nothing is built for it.
	// Default: 2
	MaxSharedLB *int `ini:"max-shared-lb"`
	// PublishOnlyPublicAddress (an Overcast extension): true (the default, as
	// cloud-provider-openstack does) puts only the floating IP of a public load
	// balancer into the Service status; false publishes the VIP after it, for
	// clients inside the OpenStack network.
	PublishOnlyPublicAddress *bool `ini:"publish-only-public-address"`
}

// LoadBalancerClass is a named set of network choices selected by the
// loadbalancer.openstack.org/class annotation.
type LoadBalancerClass struct {
	// Floating network of the class.
	FloatingNetworkID string `ini:"floating-network-id"`
	// Floating subnet of the class, by ID.
	FloatingSubnetID string `ini:"floating-subnet-id"`
	// Floating subnet of the class, by name pattern.
	FloatingSubnet string `ini:"floating-subnet"`
	// Floating subnet of the class, by tags.
	FloatingSubnetTags string `ini:"floating-subnet-tags"`
	// VIP network of the class.
	NetworkID string `ini:"network-id"`
	// VIP subnet of the class.
	SubnetID string `ini:"subnet-id"`
	// Member subnet of the class.
	MemberSubnetID string `ini:"member-subnet-id"`
}

// Networking chooses which server addresses become Node addresses.
type Networking struct {
	// Leave IPv6 addresses out of the Node addresses.
	// Default: false
	IPv6SupportDisabled bool `ini:"ipv6-support-disabled"`
	// Networks whose fixed IPs are ExternalIPs (repeat the key for more).
	PublicNetworkName []string `ini:"public-network-name"`
	// Only fixed IPs on these networks are InternalIPs (repeat the key for more).
	// Default: every network that is not public
	InternalNetworkName []string `ini:"internal-network-name"`
	// Comma-separated CIDRs: Node addresses inside them come first, in this order.
	AddressSortOrder string `ini:"address-sort-order"`
}

// Route enables routes through a Neutron router's extraroutes.
type Route struct {
	// Neutron router whose extraroutes carry the pod CIDRs (needs --configure-cloud-routes, --allocate-node-cidrs and --cluster-cidr).
	RouterID string `ini:"router-id"`
}

// Metadata says where instance metadata comes from.
type Metadata struct {
	// Accepted for compatibility; Overcast reads everything from the APIs, never from config drive or the metadata service.
	SearchOrder string `ini:"search-order"`
	// Accepted for compatibility (see search-order).
	RequestTimeout cfgutil.Duration `ini:"request-timeout"`
}

// BlockStorage is the Cinder CSI driver's section; Overcast ignores it.
type BlockStorage struct {
	// The Cinder CSI driver\'s; ignored here (with a warning).
	BSVersion string `ini:"bs-version"`
	// The Cinder CSI driver\'s; ignored here (with a warning).
	TrustDevicePath bool `ini:"trust-device-path"`
	// The Cinder CSI driver\'s; ignored here (with a warning).
	IgnoreVolumeAZ bool `ini:"ignore-volume-az"`
	// The Cinder CSI driver\'s; ignored here (with a warning).
	NodeVolumeAttachLimit int `ini:"node-volume-attach-limit"`
	// The Cinder CSI driver\'s; ignored here (with a warning).
	RescanOnResize bool `ini:"rescan-on-resize"`
}

// Read parses a cloud.conf. It reports every unknown section and key and every
// value of the wrong type at once, and returns what it could decode even then.
func Read(r io.Reader) (Config, error) {
	c, path, err := cfgutil.Read[Config](r, "the openstack cloud needs a cloud.conf", cfgutil.DecodeINI)
	c.path = path
	if c.Global.CredentialsFile != "" {
		err = errors.Join(err, mergeCredentials(&c.Global, c.Global.CredentialsFile))
	}
	return c, err
}

// mergeCredentials overlays the [Global] keys of a credentials file.
func mergeCredentials(g *Global, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("[Global] credentials-file: %w", err)
	}
	var creds struct {
		Global Global `ini:"Global"`
	}
	if err := cfgutil.DecodeINI(data, &creds); err != nil {
		return fmt.Errorf("credentials-file %s: %w", path, err)
	}
	if creds.Global.CredentialsFile != "" {
		return fmt.Errorf("credentials-file %s: credentials-file cannot point further", path)
	}
	dst, src := reflect.ValueOf(g).Elem(), reflect.ValueOf(creds.Global)
	for i := range src.NumField() {
		if !src.Field(i).IsZero() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return nil
}

// Reread reads the cloud.conf (and its credentials-file) again from where it
// was first read.
func (c *Config) Reread() (Config, error) { return cfgutil.Reread(c.path, *c, Read) }

// Warnings are things worth telling the operator that do not stop the CCM.
func (c *Config) Warnings() []string {
	var w []string
	if c.BlockStorage != (BlockStorage{}) {
		w = append(w, "[BlockStorage] is ignored: volumes are the Cinder CSI driver's job, configure it there")
	}
	if c.LoadBalancer.LBVersion != "" && c.LoadBalancer.LBVersion != "v2" {
		w = append(w, fmt.Sprintf("[LoadBalancer] lb-version %q is ignored: Octavia v2 is the only API", c.LoadBalancer.LBVersion))
	}
	return w
}

// Validate reports every problem of the config, each naming its section and key.
// It never includes a secret's value.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	c.Global.validate(add)
	c.LoadBalancer.validate(add)
	c.Networking.validate(add)
	c.Route.validate(add)
	c.Metadata.validate(add)
	return errors.Join(errs...)
}

// problems records a problem of the config (fmt.Errorf's arguments).
type problems func(format string, a ...any)

// validate checks [Global]: the way to authenticate, the TLS files, the
// limits and the endpoint type.
func (g Global) validate(add problems) {
	switch {
	case !g.UseClouds:
		g.validateCredentials(add)
	case g.CloudsFile != "":
		if _, err := os.Stat(g.CloudsFile); err != nil {
			add("[Global] clouds-file: %v", err)
		} else if err := osapi.Check(g.settings()); err != nil {
			add("%v", err)
		}
	default:
		if err := osapi.Check(g.settings()); err != nil {
			add("%v", err)
		}
	}
	for _, f := range []struct{ key, path string }{{"ca-file", g.CAFile}, {"cert-file", g.CertFile}, {"key-file", g.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			add("[Global] %s: %v", f.key, err)
		}
	}
	if (g.CertFile == "") != (g.KeyFile == "") {
		add("[Global] cert-file and key-file: give both or neither")
	}
	cfgutil.CheckGlobal(add, g.APIReadQPS, g.APIWriteQPS, g.LifecycleMaxAge)
	switch g.EndpointType {
	case "", "public", "publicURL", "internal", "internalURL", "admin", "adminURL":
	default:
		add("[Global] os-endpoint-type: %q is not one of public, internal, admin", g.EndpointType)
	}
}

// validateCredentials checks the cloud.conf's own credentials (no
// clouds.yaml): the auth-url and one complete way to authenticate.
func (g Global) validateCredentials(add problems) {
	if g.AuthURL == "" {
		add("[Global] auth-url: required (or use-clouds = true with a clouds.yaml)")
	} else if u, err := url.Parse(g.AuthURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("[Global] auth-url: %q is not an http(s) URL", g.AuthURL)
	}
	methods := 0
	if g.ApplicationCredentialID != "" || g.ApplicationCredentialName != "" {
		methods++
		if g.ApplicationCredentialSecret == "" {
			add("[Global] application-credential-secret: required with an application credential")
		}
		if g.ApplicationCredentialID == "" && g.Username == "" && g.UserID == "" {
			add("[Global] application-credential-name: needs username (or user-id) and its domain; or use application-credential-id")
		}
	}
	if g.Token != "" {
		methods++
	}
	if g.TrustID != "" {
		methods++
		if g.TrusteeID == "" || g.TrusteePassword == "" {
			add("[Global] trust-id: needs trustee-id and trustee-password")
		}
	}
	if methods == 0 {
		if g.Username == "" && g.UserID == "" {
			add("[Global] username: required (or application-credential-id/secret, token, or trust-id)")
		}
		if g.Password == "" {
			add("[Global] password: required with username")
		}
		if g.TenantID == "" && g.TenantName == "" {
			add("[Global] tenant-id: required (or tenant-name) with username and password")
		}
	}
	if methods > 1 {
		add("[Global]: give one way to authenticate: application credential, token or trust")
	}
}

// validate checks [LoadBalancer]: the method, the certificates' store, the
// sharing limit and the health monitors.
func (lb LoadBalancer) validate(add problems) {
	switch strings.ToUpper(lb.LBMethod) {
	case "", "ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT":
	default:
		add("[LoadBalancer] lb-method: %q is not one of ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT", lb.LBMethod)
	}
	switch lb.ContainerStore {
	case "", "barbican", "external":
	default:
		add("[LoadBalancer] container-store: %q is not barbican or external", lb.ContainerStore)
	}
	if lb.DefaultTLSContainerRef != "" && (lb.ContainerStore == "" || lb.ContainerStore == "barbican") {
		if _, _, err := barbicanRef(lb.DefaultTLSContainerRef); err != nil {
			add("[LoadBalancer] default-tls-container-ref: %v", err)
		}
	}
	if lb.MaxSharedLB != nil && *lb.MaxSharedLB < 1 {
		add("[LoadBalancer] max-shared-lb: %d must be at least 1", *lb.MaxSharedLB)
	}
	if lb.MonitorDelay.Duration < 0 || lb.MonitorTimeout.Duration < 0 {
		add("[LoadBalancer] monitor-delay and monitor-timeout must not be negative")
	}
	if lb.MonitorDelay.Duration > 0 && lb.MonitorTimeout.Duration > lb.MonitorDelay.Duration {
		add("[LoadBalancer] monitor-timeout: %s must not exceed monitor-delay %s", lb.MonitorTimeout.Duration, lb.MonitorDelay.Duration)
	}
	if lb.MonitorMaxRetries > 10 {
		add("[LoadBalancer] monitor-max-retries: %d is outside 1..10", lb.MonitorMaxRetries)
	}
	if lb.MonitorMaxRetriesDown > 10 {
		add("[LoadBalancer] monitor-max-retries-down: %d is outside 1..10", lb.MonitorMaxRetriesDown)
	}
}

// validate checks [Networking]: address-sort-order is a list of CIDRs.
func (n Networking) validate(add problems) {
	if n.AddressSortOrder == "" {
		return
	}
	for _, cidr := range strings.Split(n.AddressSortOrder, ",") {
		if _, err := parseCIDR(strings.TrimSpace(cidr)); err != nil {
			add("[Networking] address-sort-order: %q is not a CIDR", strings.TrimSpace(cidr))
		}
	}
}

// validate checks [Route]: router-id is a UUID.
func (r Route) validate(add problems) {
	if r.RouterID != "" && !looksLikeUUID(r.RouterID) {
		add("[Route] router-id: %q is not a router UUID", r.RouterID)
	}
}

// validate checks [Metadata]: search-order names known sources.
func (m Metadata) validate(add problems) {
	for _, s := range strings.Split(m.SearchOrder, ",") {
		switch strings.TrimSpace(s) {
		case "", "configDrive", "metadataService":
		default:
			add("[Metadata] search-order: %q is not configDrive or metadataService", strings.TrimSpace(s))
		}
	}
}

func parseCIDR(s string) (netip.Prefix, error) { return netip.ParsePrefix(s) }

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

func looksLikeUUID(s string) bool { return uuidRE.MatchString(s) }
