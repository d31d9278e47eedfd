// Package oci is the Oracle Cloud Infrastructure cloud, a drop-in for
// oci-cloud-controller-manager: its cloud-provider.yaml, providerIDs and
// Service annotations work unchanged (--cloud-provider=oci).
package oci

// The reference page, by make generate.
//go:generate go run ../../../hack/gen-config-docs -format yaml -file config.go -root Config -title "OCI cloud-provider.yaml" -out ../../../docs/reference/oci-cloud-provider-yaml.md

import (
	"crypto/md5" //nolint:gosec // OCI names an API key by the MD5 of its public key; not a use of MD5 for security
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// ProviderName is this cloud's --cloud-provider name, the peer's.
const ProviderName = "oci"

// Config is oci-cloud-controller-manager's cloud-provider.yaml, every key the
// peer reads, with the same names and meanings. The peer's deprecated keys
// are read too, each with one warning naming its replacement (Warnings).
type Config struct {
	// Auth is the API key of a user (the user principal), unless
	// useInstancePrincipals or useWorkloadIdentity is set.
	Auth Auth `json:"auth"`
	// LoadBalancer configures the Services' load balancers.
	LoadBalancer *LoadBalancer `json:"loadBalancer"`
	// RateLimiter limits the calls to OCI, client-side.
	RateLimiter *RateLimiter `json:"rateLimiter"`
	// Metrics is the peer's push of metrics to OCI Monitoring. Accepted;
	// Overcast serves its metrics on /metrics for Prometheus instead.
	Metrics *Metrics `json:"metrics"`
	// Tags are added to the load balancers the CCM creates.
	Tags *InitialTags `json:"tags"`
	// The region's short key (e.g. IAD). Not used by Overcast, which reads
	// the region's name from auth.region.
	// Default: auth.regionKey
	RegionKey string `json:"regionKey" secret:"false"`
	// Authenticate as the instance the CCM runs on (instance principal):
	// the auth block's keys are then ignored.
	// Default: false
	UseInstancePrincipals bool `json:"useInstancePrincipals"`
	// Authenticate as the CCM's Kubernetes ServiceAccount: the pod's
	// ServiceAccount token is traded for session tokens at an OCI IAM
	// identity domain when the environment sets the peer's
	// OCI_WORKLOAD_IDENTITY_DOMAIN_URL (the peer's self-managed workload
	// identity, its OCI_WORKLOAD_IDENTITY_* variables), else at the
	// cluster's workload identity endpoint (OKE's, an enhanced cluster; the
	// peer does not serve this form). docs/oci.md lists the variables.
	// Needs auth.region and compartment; the auth block's other keys are
	// then ignored.
	// Default: false
	UseWorkloadIdentity bool `json:"useWorkloadIdentity"`
	// The OCID of the compartment of the cluster's instances and load
	// balancers.
	// Default: auth.compartment, else the instance's (instance principal)
	CompartmentID string `json:"compartment"`
	// The OCID of the cluster's VCN.
	// Default: the VCN of loadBalancer.subnet1
	VCNID string `json:"vcn"`
	// Endpoints replaces OCI's public endpoints, which follow from
	// auth.region (Overcast only: a private endpoint or an emulator).
	Endpoints *EndpointOverrides `json:"endpoints"`
	// How old the listing that answers the node lifecycle controller may be
	// (Overcast only): a stopped instance's Node is tainted, and a
	// terminated one's deleted, within about this long. Shorter costs more
	// calls while a Node is NotReady.
	// Default: 5m
	LifecycleMaxAge cfgutil.Duration `json:"lifecycleMaxAge"`

	// path is the file the config was read from ("" for a stream).
	path string
}

// Auth is the API key of a user.
type Auth struct {
	// The region's name (us-ashburn-1) or short code (iad).
	// Default: the instance's region (instance principal); the environment's OCI_RESOURCE_PRINCIPAL_REGION (workload identity)
	Region string `json:"region"`
	// The tenancy's OCID.
	TenancyID string `json:"tenancy"`
	// The user's OCID.
	UserID string `json:"user"`
	// The user's API signing key, PEM (PKCS#1 or PKCS#8; encrypted with
	// passphrase when the PEM says so). Never logged.
	PrivateKey string `json:"key" secret:"true"`
	// The key's fingerprint, as the console shows it (aa:bb:…): checked
	// against the key.
	Fingerprint string `json:"fingerprint"`
	// The passphrase of an encrypted key. Never logged. (The peer accepts
	// it but does not use it.)
	Passphrase string `json:"passphrase" secret:"true"`
	// Deprecated: regionKey.
	RegionKey string `json:"regionKey" secret:"false"`
	// Deprecated: useInstancePrincipals.
	UseInstancePrincipals bool `json:"useInstancePrincipals"`
	// Deprecated: compartment.
	CompartmentID string `json:"compartment"`
	// Deprecated: auth.passphrase.
	PrivateKeyPassphrase string `json:"key_passphrase" secret:"true"`
}

// EndpointOverrides are base URLs of OCI's services (Overcast only): https,
// or http to a loopback address. Without them the endpoints follow from
// auth.region in the commercial realm (oc1); another realm's regions need
// them.
type EndpointOverrides struct {
	// The base URL of every service not given one of its own below.
	// Default: https://iaas.<region>.oraclecloud.com and the like
	API string `json:"api"`
	// Compute and virtual network.
	// Default: api
	Core string `json:"core"`
	// Identity (availability domains).
	// Default: api
	Identity string `json:"identity"`
	// Load balancers.
	// Default: api
	LoadBalancer string `json:"loadBalancer"`
	// Network load balancers.
	// Default: api
	NetworkLoadBalancer string `json:"networkLoadBalancer"`
	// The instance metadata service, with useInstancePrincipals (the
	// environment's OCI_METADATA_BASE_URL too, as oci-go-sdk reads it).
	// Default: http://169.254.169.254/opc/v2
	Metadata string `json:"metadata"`
	// The federation endpoint that gives instance principals their
	// session tokens (the environment's OCI_SDK_AUTH_CLIENT_REGION_URL too).
	// Default: https://auth.<region>.oraclecloud.com
	Auth string `json:"auth"`
	// OKE's workload identity endpoint, with useWorkloadIdentity: https
	// only, its certificate checked against the cluster's CA.
	// Default: https://<KUBERNETES_SERVICE_HOST>:12250
	WorkloadIdentity string `json:"workloadIdentity"`
}

// endpoints are the services' base URLs: the region's, or the overrides.
func (c *Config) endpoints() ociapi.Endpoints {
	ep := ociapi.EndpointsFor(ociapi.RegionName(c.Auth.Region))
	o := c.Endpoints
	if o == nil {
		return ep
	}
	for _, f := range []struct {
		to   *string
		from string
	}{{&ep.Core, o.Core}, {&ep.Identity, o.Identity}, {&ep.LoadBalancer, o.LoadBalancer}, {&ep.NetworkLoadBalancer, o.NetworkLoadBalancer}} {
		switch {
		case f.from != "":
			*f.to = strings.TrimRight(f.from, "/")
		case o.API != "":
			*f.to = strings.TrimRight(o.API, "/")
		}
	}
	return ep
}

// checkEndpoint is the problem of an endpoint override, "" for none.
func checkEndpoint(key, v string) string {
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Sprintf("%s: %q is not an http(s) URL", key, v)
	case u.Scheme == "http" && !ociapi.IsLoopback(u.Hostname()):
		return fmt.Sprintf("%s: %q: plain http is allowed to a loopback address only (the requests carry signatures)", key, v)
	case u.RawQuery != "" || (u.Path != "" && u.Path != "/"):
		return fmt.Sprintf("%s: %q: a base URL has no path or query (the API version is added)", key, v)
	}
	return ""
}

// Security list management modes of the load balancers (the peer's names).
const (
	ModeAll      = "All"
	ModeFrontend = "Frontend"
	ModeNone     = "None"
	// ModeNSG (the rule mode annotation's alone): network security groups
	// instead of security lists (nsg.go).
	ModeNSG = "NSG"
)

// LoadBalancer configures the Services' load balancers.
type LoadBalancer struct {
	// No load balancers: type LoadBalancer Services are left alone.
	// Default: false
	Disabled bool `json:"disabled"`
	// Deprecated: securityListManagementMode None.
	DisableSecurityListManagement bool `json:"disableSecurityListManagement"`
	// Which security list rules the CCM manages for a load balancer: All
	// (the load balancer's ingress, its egress to the nodes and the nodes'
	// ingress from it), Frontend (the ingress alone) or None. A Service's
	// annotation overrides it.
	// Default: All
	SecurityListManagementMode string `json:"securityListManagementMode"`
	// The OCID of the load balancers' subnet (a regional one, or the first
	// of two availability-domain ones).
	Subnet1 string `json:"subnet1"`
	// The OCID of the second availability-domain subnet.
	Subnet2 string `json:"subnet2"`
	// The security list to change for each subnet (subnet OCID → security
	// list OCID).
	// Default: the subnet's oldest security list
	SecurityLists map[string]string `json:"securityLists"`
}

// RateLimiter limits the calls to OCI, client-side.
type RateLimiter struct {
	// Read calls per second.
	// Default: 20
	RateLimitQPSRead float32 `json:"rateLimitQPSRead"`
	// Read calls in a burst.
	// Default: 5
	RateLimitBucketRead int `json:"rateLimitBucketRead"`
	// Write calls per second.
	// Default: 20
	RateLimitQPSWrite float32 `json:"rateLimitQPSWrite"`
	// Write calls in a burst.
	// Default: 5
	RateLimitBucketWrite int `json:"rateLimitBucketWrite"`
	// No client-side limit.
	// Default: false
	DisableRateLimiter bool `json:"disableRateLimiter"`
}

// Metrics is the peer's push of metrics to OCI Monitoring (accepted, unused).
type Metrics struct {
	// The compartment of the metrics (accepted, unused).
	CompartmentID string `json:"compartmentID"`
	// The metrics' namespace (accepted, unused).
	Namespace string `json:"namespace"`
	// The metrics' resource group (accepted, unused).
	ResourceGroup string `json:"resourceGroup"`
	// A prefix of the metrics' names (accepted, unused).
	Prefix string `json:"prefix"`
}

// InitialTags are tags added to what the CCMs (and the CSI drivers, whose
// keys are accepted here) create: loadBalancer and common apply to load
// balancers.
type InitialTags struct {
	LoadBalancer *TagConfig `json:"loadBalancer"`
	BlockVolume  *TagConfig `json:"blockVolume"`
	FSS          *TagConfig `json:"fss"`
	Lustre       *TagConfig `json:"lustre"`
	Common       *TagConfig `json:"common"`
}

// TagConfig is freeform and defined tags.
type TagConfig struct {
	// Freeform tags: name → value.
	FreeformTags map[string]string `json:"freeform"`
	// Defined tags: namespace → name → value.
	DefinedTags map[string]map[string]any `json:"defined"`
}

// Read parses a cloud-provider.yaml: an unknown key (with the nearest known
// one), a value of the wrong type, every problem at once. The peer's
// deprecated keys are moved to their replacements (Warnings says which).
func Read(r io.Reader) (Config, error) {
	c, path, err := cfgutil.Read[Config](r, "the oci cloud needs a cloud-provider.yaml (the Secret oci-cloud-controller-manager of oci-cloud-controller-manager's install)", cfgutil.DecodeYAML)
	c.path = path
	c.complete()
	return c, err
}

// Reread reads the file the config came from again (the config itself when
// it came from a stream).
func (c *Config) Reread() (Config, error) { return cfgutil.Reread(c.path, *c, Read) }

// complete moves the deprecated keys to their replacements, as the peer does.
func (c *Config) complete() {
	a := &c.Auth
	if a.Passphrase == "" {
		a.Passphrase = a.PrivateKeyPassphrase
	}
	if c.CompartmentID == "" {
		c.CompartmentID = a.CompartmentID
	}
	if a.UseInstancePrincipals {
		c.UseInstancePrincipals = true
	}
	if c.RegionKey == "" {
		c.RegionKey = a.RegionKey
	}
	if c.UseWorkloadIdentity && a.Region == "" {
		// oci-go-sdk's workload identity takes its region from there.
		a.Region = os.Getenv("OCI_RESOURCE_PRINCIPAL_REGION")
	}
	if lb := c.LoadBalancer; lb != nil && lb.SecurityListManagementMode == "" {
		lb.SecurityListManagementMode = ModeAll
		if lb.DisableSecurityListManagement {
			lb.SecurityListManagementMode = ModeNone
		}
	}
}

// Warnings are the deprecated keys used, each with its replacement.
func (c *Config) Warnings() []string {
	var w []string
	dep := func(used bool, key, instead string) {
		if used {
			w = append(w, fmt.Sprintf("%s is deprecated; use %s", key, instead))
		}
	}
	a := c.Auth
	dep(a.PrivateKeyPassphrase != "", "auth.key_passphrase", "auth.passphrase")
	dep(a.CompartmentID != "", "auth.compartment", "compartment")
	dep(a.UseInstancePrincipals, "auth.useInstancePrincipals", "useInstancePrincipals")
	dep(a.RegionKey != "", "auth.regionKey", "regionKey")
	if lb := c.LoadBalancer; lb != nil {
		dep(lb.DisableSecurityListManagement, "loadBalancer.disableSecurityListManagement", "loadBalancer.securityListManagementMode: None")
	}
	if c.Metrics != nil {
		w = append(w, "metrics is accepted but not used: overcast-ccm serves its metrics on /metrics")
	}
	return w
}

// Validate reports every problem of the values at once, each with its key.
// The key and the passphrase are never repeated in an error.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	ocid := func(key, v, kind string) {
		if v != "" && !validOCID(v, kind) {
			add("%s: %q is not the OCID of a %s (ocid1.%s.…)", key, v, kind, kind)
		}
	}
	errs = append(errs, c.principalProblems()...)
	a := c.Auth
	ocid("auth.tenancy", a.TenancyID, "tenancy")
	ocid("auth.user", a.UserID, "user")
	ocid("compartment", c.CompartmentID, "compartment")
	ocid("vcn", c.VCNID, "vcn")
	if lb := c.LoadBalancer; lb != nil && !lb.Disabled {
		if lb.Subnet1 == "" && c.VCNID == "" {
			add("loadBalancer.subnet1: required, or vcn (the subnets are then named by each Service's annotations)")
		}
		ocid("loadBalancer.subnet1", lb.Subnet1, "subnet")
		ocid("loadBalancer.subnet2", lb.Subnet2, "subnet")
		switch lb.SecurityListManagementMode {
		case ModeAll, ModeFrontend, ModeNone:
		default:
			add("loadBalancer.securityListManagementMode: %q is not All, Frontend or None", lb.SecurityListManagementMode)
		}
		for subnet, list := range lb.SecurityLists {
			ocid("loadBalancer.securityLists key", subnet, "subnet")
			ocid("loadBalancer.securityLists["+subnet+"]", list, "securitylist")
		}
	}
	if o := c.Endpoints; o != nil {
		for _, k := range []struct{ key, v string }{{"endpoints.api", o.API}, {"endpoints.core", o.Core},
			{"endpoints.identity", o.Identity}, {"endpoints.loadBalancer", o.LoadBalancer}, {"endpoints.networkLoadBalancer", o.NetworkLoadBalancer},
			{"endpoints.auth", o.Auth}, {"endpoints.workloadIdentity", o.WorkloadIdentity}} {
			if msg := checkEndpoint(k.key, k.v); msg != "" {
				add("%s", msg)
			}
		}
		if v := o.WorkloadIdentity; v != "" && !strings.HasPrefix(v, "https://") {
			add("endpoints.workloadIdentity: %q: https only (the ServiceAccount token goes there, and the endpoint's certificate is checked against the cluster's CA)", v)
		}
	}
	if c.Auth.Region != "" && !c.UseInstancePrincipals && c.Endpoints == nil && !validRegion(ociapi.RegionName(c.Auth.Region)) {
		add("auth.region: %q is not a region's name (us-ashburn-1) or short code (iad)", c.Auth.Region)
	}
	if d := c.LifecycleMaxAge.Duration; d < 0 || d > time.Hour {
		add("lifecycleMaxAge: %s is not between 0s and 1h", d)
	}
	if rl := c.RateLimiter; rl != nil {
		if rl.RateLimitQPSRead < 0 || rl.RateLimitQPSWrite < 0 || rl.RateLimitBucketRead < 0 || rl.RateLimitBucketWrite < 0 {
			add("rateLimiter: the rates and buckets cannot be negative")
		}
	}
	return errors.Join(errs...)
}

// principalProblems are the problems of the keys of the principal the CCM
// calls as: a user's API key, the instance, or the ServiceAccount (workload
// identity; the environment's problems are New's, ociapi/tokenexchange.go).
func (c *Config) principalProblems() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	a := c.Auth
	switch {
	case c.UseInstancePrincipals && c.UseWorkloadIdentity:
		add("useWorkloadIdentity: cannot be set with useInstancePrincipals (as the peer refuses both): choose one")
	case c.UseWorkloadIdentity:
		if strings.TrimSpace(a.Region) == "" {
			add("auth.region: required with useWorkloadIdentity (the cluster's region; or the environment's OCI_RESOURCE_PRINCIPAL_REGION)")
		}
		if c.CompartmentID == "" {
			add("compartment: required with useWorkloadIdentity (the compartment of the cluster's instances and load balancers)")
		}
	case !c.UseInstancePrincipals:
		for _, k := range []struct{ key, v string }{
			{"auth.region", a.Region}, {"auth.tenancy", a.TenancyID}, {"auth.user", a.UserID},
			{"auth.key", a.PrivateKey}, {"auth.fingerprint", a.Fingerprint},
		} {
			if strings.TrimSpace(k.v) == "" {
				add("%s: required (or set useInstancePrincipals or useWorkloadIdentity)", k.key)
			}
		}
		if c.CompartmentID == "" {
			add("compartment: required (with instance principals it is the instance's)")
		}
		if a.PrivateKey != "" {
			if _, err := a.signingKey(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// validOCID says whether v has the form of an OCID of kind:
// ocid1.<kind>.<realm>.[region][.future].<unique>
// (https://docs.oracle.com/en-us/iaas/Content/General/Concepts/identifiers.htm).
func validOCID(v, kind string) bool {
	parts := strings.Split(v, ".")
	return len(parts) >= 5 && parts[0] == "ocid1" && parts[1] == kind && parts[2] != "" && parts[len(parts)-1] != ""
}

// signingKey is the API key, decrypted with the passphrase where the PEM says
// it is encrypted, checked against the fingerprint. Its errors never hold the
// key or the passphrase.
func (a Auth) signingKey() (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(a.PrivateKey)))
	if block == nil {
		return nil, errors.New("auth.key: not a PEM private key (it starts with -----BEGIN RSA PRIVATE KEY----- or -----BEGIN PRIVATE KEY-----)")
	}
	der := block.Bytes
	//nolint:staticcheck // legacy PEM encryption is how OCI's own tools encrypt API keys (openssl genrsa -aes128)
	if x509.IsEncryptedPEMBlock(block) {
		if a.Passphrase == "" {
			return nil, errors.New("auth.key: the key is encrypted: set auth.passphrase")
		}
		var err error
		//nolint:staticcheck // see above
		if der, err = x509.DecryptPEMBlock(block, []byte(a.Passphrase)); err != nil {
			return nil, errors.New("auth.passphrase: does not decrypt auth.key")
		}
	} else if block.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, errors.New("auth.key: an encrypted PKCS#8 key is not supported; decrypt it (openssl pkcs8 -in key.pem -out plain.pem) or re-encrypt it as PKCS#1 (openssl rsa -aes128)")
	}
	key, err := parseRSA(der)
	if err != nil {
		return nil, err
	}
	if want := Fingerprint(&key.PublicKey); a.Fingerprint != "" && !strings.EqualFold(strings.TrimSpace(a.Fingerprint), want) {
		return nil, fmt.Errorf("auth.fingerprint: %q is not the key's (%s): the key or the fingerprint is another user's", a.Fingerprint, want)
	}
	return key, nil
}

func parseRSA(der []byte) (*rsa.PrivateKey, error) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("auth.key: not an RSA private key (PKCS#1 or PKCS#8)")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("auth.key: OCI API keys are RSA keys; this one is not")
	}
	return rk, nil
}

// Fingerprint is how OCI names an API key: the MD5 of its public key's DER
// (SubjectPublicKeyInfo), as colon-separated hex pairs.
func Fingerprint(pub *rsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := md5.Sum(der) //nolint:gosec // the API key's name, not a security use
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hexes, ":")
}

var regionPattern = regexp.MustCompile(`^[a-z]{2,}-[a-z]+-[0-9]+$`)

// validRegion says whether name has the form of a region's name of the
// commercial realm (us-ashburn-1).
func validRegion(name string) bool { return regionPattern.MatchString(name) }

// apiKeyOf is the API key of a's user.
func apiKeyOf(a Auth) (ociapi.APIKey, error) {
	key, err := a.signingKey()
	if err != nil {
		return ociapi.APIKey{}, err
	}
	return ociapi.APIKey{KeyID: a.TenancyID + "/" + a.UserID + "/" + Fingerprint(&key.PublicKey), Key: key}, nil
}

// limits are the client's limits the rateLimiter section sets (negative
// values read as unset, as the peer reads them).
func (c *Config) limits() ociapi.Limits {
	rl := c.RateLimiter
	if rl == nil {
		return ociapi.Limits{}
	}
	return ociapi.Limits{Disabled: rl.DisableRateLimiter, ReadQPS: float64(max(rl.RateLimitQPSRead, 0)), WriteQPS: float64(max(rl.RateLimitQPSWrite, 0)),
		ReadBurst: max(rl.RateLimitBucketRead, 0), WriteBurst: max(rl.RateLimitBucketWrite, 0)}
}

// principal is where the config's session tokens come from: its region and
// endpoint overrides.
func (c *Config) principal() ociapi.Principal {
	p := ociapi.Principal{Region: c.Auth.Region}
	if o := c.Endpoints; o != nil {
		p.Metadata, p.Auth, p.WorkloadIdentity = o.Metadata, o.Auth, o.WorkloadIdentity
	}
	return p
}
