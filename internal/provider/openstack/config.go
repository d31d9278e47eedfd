package openstack

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
	AuthURL                     string `ini:"auth-url"`
	EndpointType                string `ini:"os-endpoint-type"`
	CAFile                      string `ini:"ca-file"`
	CertFile                    string `ini:"cert-file"`
	KeyFile                     string `ini:"key-file"`
	Username                    string `ini:"username"`
	UserID                      string `ini:"user-id"`
	Password                    string `ini:"password"`
	Region                      string `ini:"region"`
	DomainID                    string `ini:"domain-id"`
	DomainName                  string `ini:"domain-name"`
	TenantID                    string `ini:"tenant-id"`
	TenantName                  string `ini:"tenant-name"`
	TenantDomainID              string `ini:"tenant-domain-id"`
	TenantDomainName            string `ini:"tenant-domain-name"`
	UserDomainID                string `ini:"user-domain-id"`
	UserDomainName              string `ini:"user-domain-name"`
	TrustID                     string `ini:"trust-id"`
	TrusteeID                   string `ini:"trustee-id"`
	TrusteePassword             string `ini:"trustee-password"`
	UseClouds                   bool   `ini:"use-clouds"`
	CloudsFile                  string `ini:"clouds-file"`
	Cloud                       string `ini:"cloud"`
	ApplicationCredentialID     string `ini:"application-credential-id"`
	ApplicationCredentialName   string `ini:"application-credential-name"`
	ApplicationCredentialSecret string `ini:"application-credential-secret"`
	TLSInsecure                 bool   `ini:"tls-insecure"`
	Token                       string `ini:"token"`
	// CredentialsFile (an Overcast extension) names a second INI file, typically
	// a mounted Secret, whose [Global] keys override these: the rest of the
	// cloud.conf can then live in a ConfigMap. Both files are read again every
	// few seconds; changed credentials take effect without a restart.
	CredentialsFile string `ini:"credentials-file"`
}

// LoadBalancer configures Octavia load balancers.
type LoadBalancer struct {
	Enabled                        *bool            `ini:"enabled"`
	FloatingNetworkID              string           `ini:"floating-network-id"`
	FloatingSubnet                 string           `ini:"floating-subnet"`
	FloatingSubnetID               string           `ini:"floating-subnet-id"`
	FloatingSubnetTags             string           `ini:"floating-subnet-tags"`
	LBMethod                       string           `ini:"lb-method"`
	LBProvider                     string           `ini:"lb-provider"`
	LBVersion                      string           `ini:"lb-version"`
	SubnetID                       string           `ini:"subnet-id"`
	MemberSubnetID                 string           `ini:"member-subnet-id"`
	NetworkID                      string           `ini:"network-id"`
	ManageSecurityGroups           bool             `ini:"manage-security-groups"`
	CreateMonitor                  bool             `ini:"create-monitor"`
	MonitorDelay                   cfgutil.Duration `ini:"monitor-delay"`
	MonitorTimeout                 cfgutil.Duration `ini:"monitor-timeout"`
	MonitorMaxRetries              uint             `ini:"monitor-max-retries"`
	MonitorMaxRetriesDown          uint             `ini:"monitor-max-retries-down"`
	InternalLB                     bool             `ini:"internal-lb"`
	NodeSelector                   string           `ini:"node-selector"`
	CascadeDelete                  *bool            `ini:"cascade-delete"`
	FlavorID                       string           `ini:"flavor-id"`
	AvailabilityZone               string           `ini:"availability-zone"`
	EnableIngressHostname          bool             `ini:"enable-ingress-hostname"`
	IngressHostnameSuffix          string           `ini:"ingress-hostname-suffix"`
	DefaultTLSContainerRef         string           `ini:"default-tls-container-ref"`
	ContainerStore                 string           `ini:"container-store"`
	MaxSharedLB                    *int             `ini:"max-shared-lb"`
	ProviderRequiresSerialAPICalls bool             `ini:"provider-requires-serial-api-calls"`
	// PublishOnlyPublicAddress (an Overcast extension): true (the default, as
	// cloud-provider-openstack does) puts only the floating IP of a public load
	// balancer into the Service status; false publishes the VIP after it, for
	// clients inside the OpenStack network.
	PublishOnlyPublicAddress *bool `ini:"publish-only-public-address"`
}

// LoadBalancerClass is a named set of network choices selected by the
// loadbalancer.openstack.org/class annotation.
type LoadBalancerClass struct {
	FloatingNetworkID  string `ini:"floating-network-id"`
	FloatingSubnetID   string `ini:"floating-subnet-id"`
	FloatingSubnet     string `ini:"floating-subnet"`
	FloatingSubnetTags string `ini:"floating-subnet-tags"`
	NetworkID          string `ini:"network-id"`
	SubnetID           string `ini:"subnet-id"`
	MemberSubnetID     string `ini:"member-subnet-id"`
}

// Networking chooses which server addresses become Node addresses.
type Networking struct {
	IPv6SupportDisabled bool     `ini:"ipv6-support-disabled"`
	PublicNetworkName   []string `ini:"public-network-name"`
	InternalNetworkName []string `ini:"internal-network-name"`
	AddressSortOrder    string   `ini:"address-sort-order"`
}

// Route enables routes through a Neutron router's extraroutes.
type Route struct {
	RouterID string `ini:"router-id"`
}

// Metadata says where instance metadata comes from.
type Metadata struct {
	SearchOrder    string           `ini:"search-order"`
	RequestTimeout cfgutil.Duration `ini:"request-timeout"`
}

// BlockStorage is the Cinder CSI driver's section; Overcast ignores it.
type BlockStorage struct {
	BSVersion             string `ini:"bs-version"`
	TrustDevicePath       bool   `ini:"trust-device-path"`
	IgnoreVolumeAZ        bool   `ini:"ignore-volume-az"`
	NodeVolumeAttachLimit int    `ini:"node-volume-attach-limit"`
	RescanOnResize        bool   `ini:"rescan-on-resize"`
}

// Read parses a cloud.conf. It reports every unknown section and key and every
// value of the wrong type at once, and returns what it could decode even then.
func Read(r io.Reader) (Config, error) {
	var c Config
	if r == nil {
		return c, errors.New("no --cloud-config given: the openstack cloud needs a cloud.conf")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return c, fmt.Errorf("reading the cloud config: %w", err)
	}
	err = cfgutil.DecodeINI(data, &c)
	if f, ok := r.(interface{ Name() string }); ok {
		c.path = f.Name()
	}
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
func (c *Config) Reread() (Config, error) {
	if c.path == "" {
		return *c, nil
	}
	f, err := os.Open(c.path)
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	return Read(f)
}

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
	g := c.Global
	if !g.UseClouds {
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
	} else if g.CloudsFile != "" {
		if _, err := os.Stat(g.CloudsFile); err != nil {
			add("[Global] clouds-file: %v", err)
		} else if _, err := resolveAuth(g); err != nil {
			add("%v", err)
		}
	} else if _, err := resolveAuth(g); err != nil {
		add("%v", err)
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
	switch g.EndpointType {
	case "", "public", "publicURL", "internal", "internalURL", "admin", "adminURL":
	default:
		add("[Global] os-endpoint-type: %q is not one of public, internal, admin", g.EndpointType)
	}

	lb := c.LoadBalancer
	switch strings.ToUpper(lb.LBMethod) {
	case "", "ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT":
	default:
		add("[LoadBalancer] lb-method: %q is not one of ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT", lb.LBMethod)
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
	switch c.Networking.AddressSortOrder {
	case "":
	default:
		for _, cidr := range strings.Split(c.Networking.AddressSortOrder, ",") {
			if _, err := parseCIDR(strings.TrimSpace(cidr)); err != nil {
				add("[Networking] address-sort-order: %q is not a CIDR", strings.TrimSpace(cidr))
			}
		}
	}
	if c.Route.RouterID != "" && !looksLikeUUID(c.Route.RouterID) {
		add("[Route] router-id: %q is not a router UUID", c.Route.RouterID)
	}
	for _, s := range strings.Split(c.Metadata.SearchOrder, ",") {
		switch strings.TrimSpace(s) {
		case "", "configDrive", "metadataService":
		default:
			add("[Metadata] search-order: %q is not configDrive or metadataService", strings.TrimSpace(s))
		}
	}
	return errors.Join(errs...)
}

func parseCIDR(s string) (netip.Prefix, error) { return netip.ParsePrefix(s) }

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

func looksLikeUUID(s string) bool { return uuidRE.MatchString(s) }
