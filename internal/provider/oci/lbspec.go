package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
	"github.com/overcast-ccm/overcast/internal/snapshot"
)

// The peer's defaults (oci-cloud-controller-manager load_balancer.go,
// load_balancer_spec.go).
const (
	defaultPolicy       = "ROUND_ROBIN"
	flexible            = "flexible"
	defaultFlexMin      = 10
	defaultFlexMax      = 100
	proxyHealthPort     = 10256 // kube-proxy's health check, for externalTrafficPolicy Cluster
	healthPath          = "/healthz"
	defaultRetries      = 3
	defaultIntervalMS   = 10000
	defaultTimeoutMS    = 3000
	defaultIdleTCP      = 300
	defaultIdleHTTP     = 60
	lbNamePrefixEnvVar  = "LOAD_BALANCER_PREFIX"
	excludeFromLBsLabel = "node.kubernetes.io/exclude-from-external-load-balancers"
)

// Ownership marks in the freeform tags of the load balancers this CCM
// creates: the cluster's UID and the Service's.
const (
	tagCluster = "overcast-cluster"
	tagService = "overcast-service"
)

// lbSpec is everything a Service asks of its load balancer.
type lbSpec struct {
	// kind is lb or nlb (oci.oraclecloud.com/load-balancer-type).
	kind string
	// name is the peer's displayName: [$LOAD_BALANCER_PREFIX-]<Service UID>
	// for an lb, <namespace>/<name>/<UID> for an nlb.
	name        string
	internal    bool
	subnets     []string
	shape       string
	flex        *ociapi.ShapeDetails // for the flexible shape
	listeners   map[string]ociapi.Listener
	backendSets map[string]ociapi.BackendSet // backends sorted
	freeform    map[string]string
	defined     map[string]map[string]any
	proxyMode   bool // ingress-ip-mode Proxy
	// ruleSets are the rule sets every listener applies (rule-sets); nil
	// when the annotation is not set: the load balancer's are then left as
	// they are, as the peer leaves them.
	ruleSets map[string]ociapi.RuleSet
	// nsgs are the network security groups the Service names for its load
	// balancer; backendNSGs the nodes' (NSG mode).
	nsgs, backendNSGs []string
	// tls are the Secrets of the SSL certificates, by certificate name (the
	// Secret's, as the peer names them); certs their contents, read by Spec.
	tls   map[string]types.NamespacedName
	certs map[string]ociapi.Certificate
	// preserveSource and ppv2 are an nlb's (is-preserve-source,
	// is-ppv2-enabled); externalOnly publishes its public address alone.
	preserveSource, ppv2, externalOnly bool
	// ip is spec.loadBalancerIP: a reserved public IP ("" for OCI's choice).
	ip string
	// assigned4 and assigned6 are the addresses an nlb takes in its subnet
	// (assigned-private-ipv4, assigned-ipv6; assigned.go): "" for OCI's
	// choice.
	assigned4, assigned6 string
	// mode is the security rule management mode (All, Frontend, None);
	// sources the addresses admitted; listenerPorts and backendPorts (the
	// node ports and the health check's) the ports the rules open.
	mode                        string
	sources                     []string
	listenerPorts, backendPorts []int
	// ipv are the IP families asked for and the versions serving them
	// (ipfamilies.go).
	ipv ipVersions
	// members are the Nodes backing it (shared with every Service on the
	// same Nodes: never written) and nodePorts each backend set's port:
	// what its backends are made of (fillBackends).
	members   []member
	nodePorts map[string]int32
}

// unsupported are the annotations this CCM does not serve yet, by kind: a
// Service using one is refused with a Warning and nothing is built for it.
var unsupported = map[string][]annotation.Name{}

// kindOf is the kind of load balancer the Service asks for: lb unless the
// annotation says nlb (parseSpec refuses a value that is neither).
func kindOf(svc *v1.Service) string {
	if v, err := annotation.OCILoadBalancerType.String(svc); err == nil && strings.EqualFold(strings.TrimSpace(v), ociapi.KindNLB) {
		return ociapi.KindNLB
	}
	return ociapi.KindLB
}

// nameOf is the peer's name of the Service's load balancer of a kind.
func nameOf(svc *v1.Service, kind string) string {
	if kind == ociapi.KindNLB {
		return nlbName(svc)
	}
	return lbName(svc)
}

// noun names a kind of load balancer in messages.
func noun(kind string) string {
	if kind == ociapi.KindNLB {
		return "network load balancer"
	}
	return "load balancer"
}

// kindAnnotations are the annotations that mean the same for either kind,
// under each kind's name.
type kindAnnotations struct {
	internal, subnet, retries, interval, timeout, nodeSelector, freeform, defined, nsgs annotation.Name
}

var annotationsOf = map[string]kindAnnotations{
	ociapi.KindLB: {annotation.OCIInternal, annotation.OCISubnet1, annotation.OCIHealthCheckRetries, annotation.OCIHealthCheckInterval,
		annotation.OCIHealthCheckTimeout, annotation.OCINodeLabelSelector, annotation.OCIInitialFreeformTagsOverride, annotation.OCIInitialDefinedTagsOverride,
		annotation.OCINetworkSecurityGroups},
	ociapi.KindNLB: {annotation.OCINLBInternal, annotation.OCINLBSubnet, annotation.OCINLBHealthCheckRetries, annotation.OCINLBHealthCheckInterval,
		annotation.OCINLBHealthCheckTimeout, annotation.OCINLBNodeLabelSelector, annotation.OCINLBInitialFreeformTagsOverride, annotation.OCINLBInitialDefinedTagsOverride,
		annotation.OCINLBNetworkSecurityGroups},
}

// parseSpec reads what the Service asks, checked whole: every problem at
// once, as one Problem, before any call.
func (st *steps) parseSpec(svc *v1.Service) (lbSpec, error) {
	var errs []error
	bad := func(err error) {
		if err != nil && !errors.Is(err, annotation.ErrNotSet) {
			errs = append(errs, err)
		}
	}
	_, err := annotation.OCILoadBalancerType.OneOf(svc, []string{ociapi.KindLB, ociapi.KindNLB})
	bad(err)
	s := lbSpec{kind: kindOf(svc), listeners: map[string]ociapi.Listener{}, backendSets: map[string]ociapi.BackendSet{}}
	s.name = nameOf(svc, s.kind)
	an := annotationsOf[s.kind]
	for _, n := range unsupported[s.kind] {
		if n.IsSet(svc) {
			errs = append(errs, fmt.Errorf("%s: not served by this overcast-ccm yet", n))
		}
	}
	_, err = annotation.OCIWorkloadServiceAccount.ServiceAccountName(svc) // workloads.go
	bad(err)
	if ip := strings.TrimSpace(svc.Spec.LoadBalancerIP); ip != "" {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("spec.loadBalancerIP: %q is not an IPv4 address", ip))
		} else {
			s.ip = a.String()
		}
	}
	s.mode = st.securityMode(svc, s.kind, bad)
	s.nsgs, err = an.nsgs.OCIDs(svc, "networksecuritygroup", 5)
	bad(err)
	s.backendNSGs, err = annotation.OCIBackendNetworkSecurityGroups.OCIDs(svc, "networksecuritygroup", 0)
	bad(err)
	if s.mode == ModeNSG && len(s.nsgs) > 4 {
		errs = append(errs, fmt.Errorf("%s: at most 4 with mode NSG, whose own network security group makes the fifth a load balancer may be in", an.nsgs))
	}

	s.sources, err = sources(svc)
	bad(err)
	if s.internal, err = an.internal.Bool(svc); err != nil {
		bad(err)
	}
	s.parseAssigned(svc, bad)
	if s.internal && s.ip != "" {
		errs = append(errs, fmt.Errorf("spec.loadBalancerIP: an internal load balancer takes an address of its subnet that OCI chooses; loadBalancerIP asks for a reserved public IP"))
	}
	s.subnets = st.subnets(svc, an.subnet, bad)
	s.ipv = askedVersions(svc)
	bad(s.ipv.check(s.kind))
	check := healthCheck(svc, an, bad)
	if s.kind == ociapi.KindNLB {
		nlbParts(svc, &s, check, bad)
	} else {
		lbParts(svc, &s, check, bad)
	}
	s.backendPorts = append(s.backendPorts, check.Port)
	slices.Sort(s.listenerPorts)
	slices.Sort(s.backendPorts)
	s.listenerPorts, s.backendPorts = slices.Compact(s.listenerPorts), slices.Compact(s.backendPorts)
	if len(svc.Spec.Ports) == 0 {
		errs = append(errs, errors.New("the Service has no ports"))
	}
	s.freeform, s.defined = st.tags(svc, an, bad)
	if mode, err := annotation.OCIIngressIPMode.OneOf(svc, []string{"VIP", "Proxy"}); err == nil {
		s.proxyMode = strings.EqualFold(mode, "Proxy")
	} else {
		bad(err)
	}
	return s, errors.Join(errs...)
}

// lbParts are what an lb asks beyond what both kinds do: its shape, policy,
// backend protocol, connections, and a TCP listener and backend set per port.
func lbParts(svc *v1.Service, s *lbSpec, check ociapi.HealthChecker, bad func(error)) {
	s.shape = flexible
	if shape, err := annotation.OCIShape.NonEmptyString(svc); err == nil {
		s.shape = shape
	} else {
		bad(err)
	}
	if strings.EqualFold(s.shape, flexible) {
		s.shape = flexible
		s.flex = &ociapi.ShapeDetails{MinimumBandwidthInMbps: defaultFlexMin, MaximumBandwidthInMbps: defaultFlexMax}
		if v, err := annotation.OCIShapeFlexMin.Bandwidth(svc); err == nil {
			s.flex.MinimumBandwidthInMbps = v
		} else {
			bad(err)
		}
		if v, err := annotation.OCIShapeFlexMax.Bandwidth(svc); err == nil {
			s.flex.MaximumBandwidthInMbps = v
		} else {
			bad(err)
		}
		if s.flex.MinimumBandwidthInMbps > s.flex.MaximumBandwidthInMbps {
			bad(fmt.Errorf("%s (%d) is more than %s (%d)", annotation.OCIShapeFlexMin, s.flex.MinimumBandwidthInMbps,
				annotation.OCIShapeFlexMax, s.flex.MaximumBandwidthInMbps))
		}
	}
	policy := defaultPolicy
	if p, err := annotation.OCIPolicy.OneOf(svc, []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "IP_HASH"}); err == nil {
		policy = strings.ToUpper(p)
	} else {
		bad(err)
	}
	protocol := "TCP"
	if p, err := annotation.OCIBackendProtocol.OneOf(svc, []string{"TCP", "HTTP"}); err == nil {
		protocol = strings.ToUpper(p)
	} else {
		bad(err)
	}
	conn := connection(svc, protocol, bad)
	listenerSSL, backendSSL := s.ssl(svc, bad)
	if backendSSL != nil {
		check.IsForcePlainText = true // plain HTTP checks of backends reached by SSL, as the peer's
	}
	sslPorts, err := annotation.OCISSLPorts.Ports(svc)
	bad(err)
	s.ruleSets = ruleSets(svc, bad)
	var ruleSetNames []string
	if len(s.ruleSets) > 0 {
		ruleSetNames = slices.Sorted(maps.Keys(s.ruleSets))
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP {
			bad(fmt.Errorf("port %d is %s: an OCI load balancer (lb) serves TCP only; use %s: nlb", p.Port, p.Protocol, annotation.OCILoadBalancerType))
			continue
		}
		name := fmt.Sprintf("%s-%d", p.Protocol, p.Port)
		bs := ociapi.BackendSet{Name: name, Policy: policy, HealthChecker: check, Backends: []ociapi.Backend{}}
		l := ociapi.Listener{Name: name, DefaultBackendSetName: name, Port: int(p.Port), Protocol: protocol, ConnectionConfiguration: conn,
			RuleSetNames: ruleSetNames}
		if slices.Contains(sslPorts, p.Port) {
			l.SSLConfiguration, bs.SSLConfiguration = listenerSSL, backendSSL
		}
		s.backendSets[name], s.listeners[name] = bs, l
		s.listenerPorts = append(s.listenerPorts, int(p.Port))
		s.backendPorts = append(s.backendPorts, int(p.NodePort))
	}
}

// ruleActions are the actions a rule may have (the Load Balancing API's
// RuleActionEnum).
var ruleActions = []string{"ADD_HTTP_REQUEST_HEADER", "EXTEND_HTTP_REQUEST_HEADER_VALUE", "REMOVE_HTTP_REQUEST_HEADER",
	"ADD_HTTP_RESPONSE_HEADER", "EXTEND_HTTP_RESPONSE_HEADER_VALUE", "REMOVE_HTTP_RESPONSE_HEADER", "ALLOW",
	"CONTROL_ACCESS_USING_HTTP_METHODS", "REDIRECT", "HTTP_HEADER", "IP_BASED_MAX_CONNECTIONS"}

// ruleSets reads rule-sets: {"<name>": {"items": [{"action": …, …}]}}, the
// API's RuleSetDetails by name, as the peer reads it; nil when not set.
func ruleSets(svc *v1.Service, bad func(error)) map[string]ociapi.RuleSet {
	var raw map[string]struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := annotation.OCIRuleSets.JSON(svc, &raw, `JSON {"<name>": {"items": [{"action": "…", …}]}}`); err != nil {
		bad(err)
		return nil
	}
	out := map[string]ociapi.RuleSet{}
	for name, rs := range raw {
		if name == "" || rs.Items == nil {
			bad(fmt.Errorf("%s: rule set %q needs a name and items", annotation.OCIRuleSets, name))
			continue
		}
		for i, item := range rs.Items {
			var r struct {
				Action string `json:"action"`
			}
			if err := json.Unmarshal(item, &r); err != nil || !slices.Contains(ruleActions, r.Action) {
				bad(fmt.Errorf("%s: rule %d of rule set %q has no action of %s", annotation.OCIRuleSets, i, name, strings.Join(ruleActions, ", ")))
			}
		}
		out[name] = ociapi.RuleSet{Items: rs.Items}
	}
	return out
}

// sslConfig is the cipher suite and protocols of an SSL config annotation,
// in the peer's JSON (field names as the peer's Go struct reads them).
type sslConfig struct {
	CipherSuiteName string   `json:"CipherSuiteName"`
	Protocols       []string `json:"Protocols"`
}

// ssl reads the SSL annotations of an lb: the SSL configuration of the
// listeners of ssl-ports (tls-secret's certificate) and of their backend
// sets (tls-backendset-secret's), nil for none. Each Secret becomes a
// certificate named as the Secret, as the peer names it.
func (s *lbSpec) ssl(svc *v1.Service, bad func(error)) (listener, backend *ociapi.SSLConfiguration) {
	ports, err := annotation.OCISSLPorts.Ports(svc)
	bad(err)
	for _, p := range ports {
		if !slices.ContainsFunc(svc.Spec.Ports, func(sp v1.ServicePort) bool { return sp.Port == p }) {
			bad(fmt.Errorf("%s: port %d is not a port of the Service", annotation.OCISSLPorts, p))
		}
	}
	s.tls = map[string]types.NamespacedName{}
	for _, a := range []struct {
		secret, config annotation.Name
		to             **ociapi.SSLConfiguration
	}{
		{annotation.OCITLSSecret, annotation.OCIListenerSSLConfig, &listener},
		{annotation.OCITLSBackendSetSecret, annotation.OCIBackendSetSSLConfig, &backend},
	} {
		ns, name, err := a.secret.SecretRef(svc)
		if err != nil {
			bad(err)
			if a.config.IsSet(svc) && errors.Is(err, annotation.ErrNotSet) {
				bad(fmt.Errorf("%s needs %s", a.config, a.secret))
			}
			continue
		}
		if len(ports) == 0 {
			bad(fmt.Errorf("%s: %s names no port to serve SSL on", a.secret, annotation.OCISSLPorts))
		}
		if was, ok := s.tls[name]; ok && was != (types.NamespacedName{Namespace: ns, Name: name}) {
			bad(fmt.Errorf("%s and %s name two Secrets of one name (%s, %s): OCI names a certificate by it", annotation.OCITLSSecret,
				annotation.OCITLSBackendSetSecret, was, ns+"/"+name))
		}
		s.tls[name] = types.NamespacedName{Namespace: ns, Name: name}
		c := &ociapi.SSLConfiguration{CertificateName: name}
		var cfg sslConfig
		if err := a.config.JSON(svc, &cfg, `JSON {"CipherSuiteName": "...", "Protocols": ["TLSv1.2"]}`); err == nil {
			c.CipherSuiteName, c.Protocols = cfg.CipherSuiteName, cfg.Protocols
		} else {
			bad(err)
		}
		*a.to = c
	}
	if len(ports) > 0 && !annotation.OCITLSSecret.IsSet(svc) {
		bad(fmt.Errorf("%s: SSL listeners need the certificate of %s", annotation.OCISSLPorts, annotation.OCITLSSecret))
	}
	return listener, backend
}

// readCerts reads the Secrets of the spec's certificates (data tls.crt,
// tls.key, ca.crt, passphrase: the peer's keys).
func (st *steps) readCerts(ctx context.Context, s *lbSpec) error {
	if len(s.tls) == 0 {
		return nil
	}
	kube := st.kube()
	if kube == nil {
		return errors.New("no Kubernetes client yet to read the TLS Secrets")
	}
	s.certs = map[string]ociapi.Certificate{}
	for name, ref := range s.tls {
		sec, err := kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the TLS Secret %s: %w", ref, err)
		}
		crt, key := sec.Data[v1.TLSCertKey], sec.Data[v1.TLSPrivateKeyKey]
		if len(crt) == 0 || len(key) == 0 {
			return outcome.Refuse(outcome.ReasonUnsupportedService, "the TLS Secret %s has no %s or no %s", ref, v1.TLSCertKey, v1.TLSPrivateKeyKey)
		}
		s.certs[name] = ociapi.Certificate{CertificateName: name, PublicCertificate: string(crt), PrivateKey: string(key),
			CaCertificate: string(sec.Data["ca.crt"]), Passphrase: string(sec.Data["passphrase"])}
	}
	return nil
}

// nlbParts are what an nlb asks beyond what both kinds do: its policy,
// source preservation, PPv2, and a listener and backend set per port (TCP,
// UDP, or TCP_AND_UDP for a port both use), named as the peer names them.
func nlbParts(svc *v1.Service, s *lbSpec, check ociapi.HealthChecker, bad func(error)) {
	policy := "FIVE_TUPLE"
	if p, err := annotation.OCINLBBackendPolicy.OneOf(svc, []string{"TWO_TUPLE", "THREE_TUPLE", "FIVE_TUPLE"}); err == nil {
		policy = strings.ToUpper(p)
	} else {
		bad(err)
	}
	// Source preservation: on by default with externalTrafficPolicy Local
	// (where the nodes see the client), refused with Cluster, as the peer.
	local := svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal
	s.preserveSource = local
	if v, err := annotation.OCINLBIsPreserveSource.Bool(svc); err == nil {
		if !local {
			bad(fmt.Errorf("%s: the client's address is preserved only with externalTrafficPolicy Local", annotation.OCINLBIsPreserveSource))
		}
		s.preserveSource = v && local
	} else {
		bad(err)
	}
	if v, err := annotation.OCINLBIsPPv2Enabled.Bool(svc); err == nil {
		s.ppv2 = v
	} else {
		bad(err)
	}
	if v, err := annotation.OCINLBExternalIPOnly.Bool(svc); err == nil {
		s.externalOnly = v && !s.internal
	} else {
		bad(err)
	}
	protocols := map[int32][]v1.Protocol{}
	for _, p := range svc.Spec.Ports {
		protocols[p.Port] = append(protocols[p.Port], p.Protocol)
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP {
			bad(fmt.Errorf("port %d is %s: a network load balancer serves TCP and UDP", p.Port, p.Protocol))
			continue
		}
		if p.Protocol == v1.ProtocolUDP && s.mode != ModeNone {
			bad(fmt.Errorf("port %d is UDP: security rules are managed for TCP only; set %s: None (the peer's default for nlb) and open the ports yourself",
				p.Port, annotation.OCINLBSecurityListManagementMode))
		}
		protocol := string(p.Protocol)
		if len(protocols[p.Port]) > 1 {
			protocol = "TCP_AND_UDP"
		}
		name := fmt.Sprintf("%s-%d", protocol, p.Port)
		if _, done := s.listeners[name]; done {
			continue
		}
		preserve := s.preserveSource
		s.backendSets[name] = ociapi.BackendSet{Name: name, Policy: policy, HealthChecker: check, Backends: []ociapi.Backend{}, IsPreserveSource: &preserve}
		ppv2 := s.ppv2
		s.listeners[name] = ociapi.Listener{Name: name, DefaultBackendSetName: name, Port: int(p.Port), Protocol: protocol, IsPPv2Enabled: &ppv2}
		s.listenerPorts = append(s.listenerPorts, int(p.Port))
		s.backendPorts = append(s.backendPorts, int(p.NodePort))
	}
}

// nlbName is the peer's name of the Service's network load balancer.
func nlbName(svc *v1.Service) string {
	name := svc.Namespace + "/" + svc.Name + "/" + string(svc.UID)
	if len(name) > 1024 {
		name = name[:1024]
	}
	return name
}

// lbName is the peer's name of the Service's load balancer.
func lbName(svc *v1.Service) string {
	prefix := os.Getenv(lbNamePrefixEnvVar)
	if prefix != "" && !strings.HasSuffix(prefix, "-") {
		prefix += "-"
	}
	name := prefix + string(svc.UID)
	if len(name) > 1024 {
		name = name[:1024]
	}
	return name
}

// securityMode is the Service's security rule management mode: the
// annotations', else for an lb the config's (which the peer ignores: issue
// #498), for an nlb None (the peer's default).
func (st *steps) securityMode(svc *v1.Service, kind string, bad func(error)) string {
	if m, err := annotation.OCISecurityRuleManagementMode.OneOf(svc, []string{"SL-All", "SL-Frontend", "NSG", "None"}); err == nil {
		return map[string]string{"sl-all": ModeAll, "sl-frontend": ModeFrontend, "nsg": ModeNSG, "none": ModeNone}[strings.ToLower(m)]
	} else if !errors.Is(err, annotation.ErrNotSet) {
		bad(err)
		return ModeNone
	}
	listMode := annotation.OCISecurityListManagementMode
	if kind == ociapi.KindNLB {
		listMode = annotation.OCINLBSecurityListManagementMode
	}
	if m, err := listMode.OneOf(svc, []string{ModeAll, ModeFrontend, ModeNone}); err == nil {
		return map[string]string{"all": ModeAll, "frontend": ModeFrontend, "none": ModeNone}[strings.ToLower(m)]
	} else if !errors.Is(err, annotation.ErrNotSet) {
		bad(err)
		return ModeNone
	}
	if kind == ociapi.KindNLB {
		return ModeNone
	}
	if lb := st.cfg.LoadBalancer; lb != nil {
		return lb.SecurityListManagementMode
	}
	return ModeAll
}

// subnets are the load balancer's subnets: the annotations' (first), else
// the config's; an nlb takes one.
func (st *steps) subnets(svc *v1.Service, first annotation.Name, bad func(error)) []string {
	var s1, s2 string
	if lb := st.cfg.LoadBalancer; lb != nil {
		s1, s2 = lb.Subnet1, lb.Subnet2
	}
	if v, err := first.OCID(svc, "subnet"); err == nil {
		s1 = v
	} else {
		bad(err)
	}
	if first == annotation.OCINLBSubnet {
		s2 = ""
	} else if v, err := annotation.OCISubnet2.OCID(svc, "subnet"); err == nil {
		s2 = v
	} else {
		bad(err)
	}
	if s1 == "" {
		bad(fmt.Errorf("no subnet for the load balancer: set loadBalancer.subnet1 in the config or %s", first))
		return nil
	}
	if s2 == "" || s2 == s1 {
		return []string{s1}
	}
	return []string{s1, s2}
}

// healthCheck is the backend sets' health checker: kube-proxy's health check
// of every node, or the Service's own node port with externalTrafficPolicy
// Local (the nodes without its endpoints fail it).
func healthCheck(svc *v1.Service, an kindAnnotations, bad func(error)) ociapi.HealthChecker {
	hc := ociapi.HealthChecker{Protocol: "HTTP", Port: proxyHealthPort, URLPath: healthPath, ReturnCode: 200,
		Retries: defaultRetries, IntervalInMillis: defaultIntervalMS, TimeoutInMillis: defaultTimeoutMS}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		hc.Port = int(svc.Spec.HealthCheckNodePort)
	}
	for _, f := range []struct {
		n        annotation.Name
		to       *int
		min, max int
	}{
		{an.retries, &hc.Retries, 1, 10},
		{an.interval, &hc.IntervalInMillis, 1000, 1800000},
		{an.timeout, &hc.TimeoutInMillis, 1, 600000},
	} {
		if v, err := f.n.Int(svc, f.min, f.max); err == nil {
			*f.to = v
		} else {
			bad(err)
		}
	}
	return hc
}

// connection is the listeners' idle timeout and PROXY protocol version.
func connection(svc *v1.Service, protocol string, bad func(error)) *ociapi.ConnectionConfiguration {
	cc := &ociapi.ConnectionConfiguration{IdleTimeout: defaultIdleTCP}
	if protocol == "HTTP" {
		cc.IdleTimeout = defaultIdleHTTP
	}
	if v, err := annotation.OCIConnectionIdleTimeout.Int(svc, 1, 7200); err == nil {
		cc.IdleTimeout = int64(v)
	} else {
		bad(err)
	}
	if v, err := annotation.OCIProxyProtocolVersion.Int(svc, 1, 2); err == nil {
		if protocol != "TCP" {
			bad(fmt.Errorf("%s: the PROXY protocol is for TCP listeners; the listeners are %s", annotation.OCIProxyProtocolVersion, protocol))
		}
		cc.BackendTCPProxyProtocolVersion = v
	} else {
		bad(err)
	}
	return cc
}

// tags are the load balancer's tags at creation: the initial overrides, else
// the config's (tags.loadBalancer, else tags.common), and the ownership marks.
func (st *steps) tags(svc *v1.Service, an kindAnnotations, bad func(error)) (map[string]string, map[string]map[string]any) {
	var freeform map[string]string
	var defined map[string]map[string]any
	if t := st.cfg.Tags; t != nil {
		for _, tc := range []*TagConfig{t.Common, t.LoadBalancer} {
			if tc != nil {
				freeform, defined = tc.FreeformTags, tc.DefinedTags
			}
		}
	}
	if v, err := an.freeform.FreeformTags(svc); err == nil {
		freeform = v
	} else {
		bad(err)
	}
	if v, err := an.defined.DefinedTags(svc); err == nil {
		defined = v
	} else {
		bad(err)
	}
	out := maps.Clone(freeform)
	if out == nil {
		out = map[string]string{}
	}
	out[tagCluster], out[tagService] = st.cluster.Get(), string(svc.UID)
	return out, defined
}

// resolveBackends fills the backend sets with the eligible Nodes' internal
// addresses (and, for an nlb, their instances, as the peer names them) and
// the ports' node ports.
func (st *steps) resolveBackends(ctx context.Context, svc *v1.Service, s *lbSpec, nodes []*v1.Node) error {
	selector, key := labels.Everything(), ""
	sel := annotationsOf[s.kind].nodeSelector
	if v, err := sel.NonEmptyString(svc); err == nil {
		if selector, err = labels.Parse(v); err != nil {
			return outcome.Invalid(fmt.Errorf("%s: %q is not a label selector: %w", sel, v, err))
		}
		key = selector.String()
	}
	members := st.memberSet.Get(nodes, key, func() ([]member, bool) { return st.membersOf(ctx, nodes, selector) })
	nodePort := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		for _, name := range []string{fmt.Sprintf("%s-%d", p.Protocol, p.Port), fmt.Sprintf("TCP_AND_UDP-%d", p.Port)} {
			if was, ok := nodePort[name]; ok && was != p.NodePort {
				return outcome.Invalid(fmt.Errorf("port %d has node port %d for one protocol and %d for the other: a network load balancer's listener of both (TCP_AND_UDP) reaches one", p.Port, was, p.NodePort))
			}
			nodePort[name] = p.NodePort
		}
	}
	if err := st.serveFamilies(ctx, s, members); err != nil {
		return err
	}
	s.members, s.nodePorts = members, nodePort
	s.fillBackends()
	return nil
}

// fillBackends makes each backend set's backends of the members.
func (s *lbSpec) fillBackends() {
	for name, bs := range s.backendSets {
		bs.Backends = backendsOf(s.kind, bs.IPVersion, s.members, int(s.nodePorts[strings.TrimSuffix(name, ipv6Suffix)]))
		s.backendSets[name] = bs
	}
}

// withoutBackends is s with its backend sets' backends left out, to be made
// again by fillBackends: what a creation waiting its turn holds (at 5,000
// Nodes a backend set is most of a megabyte, and a burst of Services waits).
func (s lbSpec) withoutBackends() lbSpec {
	sets := make(map[string]ociapi.BackendSet, len(s.backendSets))
	for name, bs := range s.backendSets {
		bs.Backends = nil
		sets[name] = bs
	}
	s.backendSets = sets
	return s
}

// membersOf is the Nodes the selector picks as backends, by key; false
// when one was read from the cloud (a Node awaiting its addresses), which
// may change while the Nodes do not.
func (st *steps) membersOf(ctx context.Context, nodes []*v1.Node, selector labels.Selector) ([]member, bool) {
	var members []member
	keep := true
	for _, n := range nodes {
		if _, excluded := n.Labels[excludeFromLBsLabel]; excluded || !selector.Matches(labels.Set(n.Labels)) {
			continue
		}
		keep = keep && !provider.AwaitingAddresses(n)
		if m, ok := st.memberOf(ctx, n); ok {
			members = append(members, m)
		}
	}
	slices.SortFunc(members, compareMembers)
	members = slices.CompactFunc(members, func(a, b member) bool { return compareMembers(a, b) == 0 })
	return members, keep
}

// memberOf is Node n as a backend: its IPv4 InternalIP (its instance's
// private address while it awaits its addresses) and its IPv6 address;
// false for a Node of neither.
func (st *steps) memberOf(ctx context.Context, n *v1.Node) (member, bool) {
	instance, _ := ParseProviderID(n.Spec.ProviderID)
	ip6 := nodeIPv6(n.Status.Addresses)
	ip, ok := provider.InternalIP(n.Status.Addresses, v1.IPv4Protocol)
	if ok && ip.Is4() {
		return member{ip: ip.String(), ip6: ip6, instance: instance}, true
	}
	if !provider.AwaitingAddresses(n) {
		if ip6 != "" {
			return member{ip6: ip6, instance: instance}, true
		}
		klog.FromContext(ctx).V(2).Info("Leaving out a Node without an IPv4 InternalIP", "node", n.Name)
		return member{}, false
	}
	m, found, err := st.machineOf(ctx, n, snapshot.MaxAge)
	if err != nil || !found || m.PrivateIP == "" {
		klog.FromContext(ctx).V(2).Info("Leaving out a Node whose instance is not known yet", "node", n.Name)
		return member{}, false
	}
	return member{ip: m.PrivateIP, ip6: nodeIPv6(addresses(m, n.Labels[IPv6FamilyLabel] != "")), instance: m.ID}, true
}

// configFingerprint covers everything but the backends.
func (s *lbSpec) configFingerprint() string {
	h := lbcycle.NewHash()
	w := h.Line
	w("v1", s.name, s.internal, s.subnets, s.shape, s.flex, s.proxyMode, s.mode, s.sources, s.listenerPorts, s.backendPorts, s.ip)
	if len(s.nsgs)+len(s.backendNSGs) > 0 {
		w("nsgs", s.nsgs, s.backendNSGs)
	}
	if s.kind == ociapi.KindNLB {
		w("nlb", s.preserveSource, s.ppv2, s.externalOnly)
	}
	if s.assigned4+s.assigned6 != "" {
		w("assigned", s.assigned4, s.assigned6)
	}
	s.ipv.fingerprint(w)
	for _, name := range slices.Sorted(maps.Keys(s.listeners)) {
		l := s.listeners[name]
		var conn ociapi.ConnectionConfiguration
		if l.ConnectionConfiguration != nil {
			conn = *l.ConnectionConfiguration
		}
		w("listener", name, l.Port, l.Protocol, l.DefaultBackendSetName, conn)
		if l.SSLConfiguration != nil {
			w("ssl", *l.SSLConfiguration)
		}
		if ssl := s.backendSets[name].SSLConfiguration; ssl != nil {
			w("set ssl", *ssl)
		}
		bs := s.backendSets[name]
		w("set", name, bs.Policy, bs.HealthChecker)
	}
	w("tags", s.freeform, s.defined)
	for _, name := range slices.Sorted(maps.Keys(s.ruleSets)) {
		for _, item := range s.ruleSets[name].Items {
			w("rule", name, string(item))
		}
	}
	if s.ruleSets != nil {
		w("rule sets managed")
	}
	for _, name := range slices.Sorted(maps.Keys(s.certs)) {
		// The certificate's content, not its key: a renewed Secret changes it.
		sum := sha256.Sum256([]byte(s.certs[name].PublicCertificate + s.certs[name].CaCertificate))
		w("cert", name, hex.EncodeToString(sum[:8]))
	}
	return h.Config()
}

// membersFingerprint covers the backends.
func (s *lbSpec) membersFingerprint() string {
	var line lbcycle.MembersLine // each "<set>=<ip>:<port>[/<target>]"
	for _, name := range slices.Sorted(maps.Keys(s.backendSets)) {
		for _, b := range s.backendSets[name].Backends {
			line.Begin()
			line.Add(name)
			line.Add("=")
			line.Add(b.IPAddress)
			line.Add(":")
			line.AddInt(b.Port)
			if b.TargetID != "" {
				line.Add("/")
				line.Add(b.TargetID)
			}
		}
	}
	return line.Members()
}
