package openstack

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// TLS termination: the listeners of the chosen TCP ports are TERMINATED_HTTPS
// with a certificate in Barbican, their pools HTTP (PROXY with
// proxy-protocol). The certificate is either a reference the Service or the
// cloud.conf names (cloud-provider-openstack's default-tls-container-ref),
// read in Barbican before anything is built with it, or a kubernetes.io/tls
// Secret of the Service's namespace (overcast.io/tls-secret), which Overcast
// stores in Barbican as a certificate container of its own: named after the
// Service's UID and the certificate's hash, made anew when the Secret
// changes (the listeners moved to it, then the old one deleted), deleted
// with the Service. The private key is only ever in the Secret and in
// Barbican: never in a log, an Event or an error.

// tlsSpec is a Service's TLS termination.
type tlsSpec struct {
	ref    string         // the certificate's reference; for a Secret, its container's once stored
	secret *tlsSecret     // the Secret the certificate comes from; nil: ref is named
	ports  map[int32]bool // the ports that terminate TLS; nil: every TCP port
	check  bool           // ref is to be read in Barbican before use (container-store barbican)
}

// tlsSecret is a kubernetes.io/tls Secret's certificate, as read.
type tlsSecret struct {
	name             string
	cert, chain, key []byte // PEM: the leaf, the intermediates (maybe none), the key
	hash             string // of tls.crt: names the stored container
}

// isTLS says whether p's listener terminates TLS.
func (s *lbSpec) isTLS(p v1.ServicePort) bool {
	return s.tls != nil && p.Protocol == v1.ProtocolTCP && (s.tls.ports == nil || s.tls.ports[p.Port])
}

// tlsFingerprint is what the listeners' TLS is made of ("" without TLS, so
// that the fingerprints of Services without it stay as they were).
func (s *lbSpec) tlsFingerprint() string {
	if s.tls == nil {
		return ""
	}
	var ports []int32
	for p := range s.tls.ports {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	if s.tls.secret != nil {
		return fmt.Sprintf("secret %s %s %v", s.tls.secret.name, s.tls.secret.hash, ports)
	}
	return fmt.Sprintf("ref %s %v", s.tls.ref, ports)
}

// barbicanRef splits a Barbican URL into its kind (containers or secrets)
// and UUID.
func barbicanRef(ref string) (kind, id string, err error) {
	u, err := url.Parse(ref)
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || len(parts) < 2 ||
		(parts[len(parts)-2] != "containers" && parts[len(parts)-2] != "secrets") || !looksLikeUUID(parts[len(parts)-1]) {
		return "", "", fmt.Errorf("%q is not the URL of a Barbican container or secret (https://<barbican>/v1/containers/<uuid> or .../v1/secrets/<uuid>)", ref)
	}
	return parts[len(parts)-2], parts[len(parts)-1], nil
}

// tlsOf resolves a Service's TLS termination from its annotations and the
// cloud.conf; the Secret itself is read later (readTLSSecret).
func (st *steps) tlsOf(svc *v1.Service, ports []v1.ServicePort, e *specErrors) *tlsSpec {
	cfg := st.cfg.LoadBalancer
	external := cfg.ContainerStore == "external"
	t := &tlsSpec{ref: cfg.DefaultTLSContainerRef, check: !external}
	named, err := annotation.OpenStackDefaultTLSContainerRef.NonEmptyString(svc)
	if e.keep(err) {
		t.ref = named
	}
	if name, err := annotation.OpenStackTLSSecret.NonEmptyString(svc); e.keep(err) {
		switch {
		case named != "":
			e.add("%s and %s both name a certificate: keep one", annotation.OpenStackTLSSecret, annotation.OpenStackDefaultTLSContainerRef)
		case external:
			e.add("%s: the certificate is stored in Barbican, which [LoadBalancer] container-store = external says this cloud does not use", annotation.OpenStackTLSSecret)
		case strings.Contains(name, "/"):
			e.add("%s: %q: name a Secret of the Service's own namespace (no namespace/)", annotation.OpenStackTLSSecret, name)
		}
		t.ref, t.secret, t.check = "", &tlsSecret{name: name}, false
	}
	if named != "" && t.check {
		if _, _, err := barbicanRef(named); err != nil {
			e.add("%s: %v", annotation.OpenStackDefaultTLSContainerRef, err)
		}
	}
	chosen, err := annotation.OpenStackTLSPorts.Ports(svc)
	if e.keep(err) {
		if t.ref == "" && t.secret == nil {
			e.add("%s names ports for TLS, but no certificate is named (%s or %s)", annotation.OpenStackTLSPorts, annotation.OpenStackTLSSecret, annotation.OpenStackDefaultTLSContainerRef)
		}
		t.ports = map[int32]bool{}
		for _, n := range chosen {
			i := slices.IndexFunc(ports, func(p v1.ServicePort) bool { return p.Port == n })
			switch {
			case i < 0:
				e.add("%s: port %d is not a port of the Service", annotation.OpenStackTLSPorts, n)
			case ports[i].Protocol != v1.ProtocolTCP:
				e.add("%s: port %d is %s; TLS is terminated on TCP ports only", annotation.OpenStackTLSPorts, n, ports[i].Protocol)
			}
			t.ports[n] = true
		}
	}
	if t.ref == "" && t.secret == nil {
		return nil
	}
	return t
}

// readTLSSecret reads the Service's TLS Secret: a kubernetes.io/tls Secret
// whose certificate and key match. What a user can fix is Invalid (a Warning,
// nothing changed); the message never holds the key.
func (st *steps) readTLSSecret(ctx context.Context, svc *v1.Service, t *tlsSpec) error {
	if t == nil || t.secret == nil {
		return nil
	}
	kube := st.kube()
	if kube == nil {
		return errors.New("no Kubernetes client yet to read the TLS Secret")
	}
	name := t.secret.name
	ref := svc.Namespace + "/" + name
	if read, ok := st.tlsCerts.readSecret(ref); ok {
		*t.secret = read
		return nil
	}
	sec, err := kube.CoreV1().Secrets(svc.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return outcome.Refuse(outcome.ReasonInvalidAnnotation, "%s: Secret %s/%s does not exist; nothing was changed", annotation.OpenStackTLSSecret, svc.Namespace, name)
	case apierrors.IsForbidden(err):
		return outcome.Refuse(outcome.ReasonInvalidAnnotation, "%s: this CCM may not read Secret %s/%s: grant it get on secrets (deploy/rbac.yaml); nothing was changed", annotation.OpenStackTLSSecret, svc.Namespace, name)
	case err != nil:
		return fmt.Errorf("reading the TLS Secret %s/%s: %w", svc.Namespace, name, err)
	}
	crt, key := sec.Data[v1.TLSCertKey], sec.Data[v1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return outcome.Refuse(outcome.ReasonInvalidAnnotation, "%s: Secret %s/%s has no %s or no %s (a kubernetes.io/tls Secret has both); nothing was changed", annotation.OpenStackTLSSecret, svc.Namespace, name, v1.TLSCertKey, v1.TLSPrivateKeyKey)
	}
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		// crypto/tls's errors name what is wrong, never the key's bytes.
		return outcome.Refuse(outcome.ReasonInvalidAnnotation, "%s: Secret %s/%s does not hold a certificate and its key (%v); nothing was changed", annotation.OpenStackTLSSecret, svc.Namespace, name, err)
	}
	var leaf, chain []byte
	for rest := crt; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if leaf == nil {
			leaf = pem.EncodeToMemory(b)
		} else {
			chain = append(chain, pem.EncodeToMemory(b)...)
		}
	}
	t.secret.cert, t.secret.chain, t.secret.key, t.secret.hash = leaf, chain, key, certHash(crt)
	st.tlsCerts.keepSecret(ref, *t.secret)
	return nil
}

// certHash names a Secret's certificate (its tls.crt) in Barbican: public
// information only, never the key.
func certHash(crt []byte) string {
	sum := sha256.Sum256(crt)
	return hex.EncodeToString(sum[:8])
}

// secretReadFor is how long a Secret read stands for the syncs of its
// Services.
const secretReadFor = time.Minute

// certParts are the suffixes of a stored certificate's secrets.
var certParts = []string{"certificate", "private_key", "intermediates"}

// tlsRefusal explains Octavia's "Could not retrieve certificate": with its
// default barbican_acl_auth, Octavia sets the certificate's ACL with a token
// made from the caller's, which Keystone refuses for an application
// credential's ("Using a delegated token to create another token is not
// allowed"; measured with Zed's Octavia 11 and Keystone 22).
func (st *steps) tlsRefusal(err error, s lbSpec) error {
	if s.tls == nil || !osapi.CertificateUnreadable(err) {
		return nil
	}
	g := st.globals()
	if g.ApplicationCredentialID != "" || g.ApplicationCredentialName != "" {
		return outcome.Refuse(outcome.ReasonCloudRefused, "Octavia could not read TLS certificate %s: it reads certificates with a token made from this CCM's, which Keystone refuses for an application credential; give the CCM a user and password ([Global] username/password) for TLS termination", s.tls.ref)
	}
	return outcome.Refuse(outcome.ReasonCloudRefused, "Octavia could not read TLS certificate %s in Barbican: check that it exists and that this CCM's user may read it", s.tls.ref)
}

// secretRotated says, for the drift check, whether the Service's TLS Secret
// holds another certificate than the one stored for it: Secrets are not
// watched (the CCM may only get them), so a rotation is seen within a drift
// period. Unknown (nothing stored by this process yet) is not drift: the
// first sync after a start reads the Secret anyway.
func (st *steps) secretRotated(ctx context.Context, svc *v1.Service) string {
	name, err := annotation.OpenStackTLSSecret.NonEmptyString(svc)
	if err != nil {
		return ""
	}
	have, ok := st.tlsCerts.get(svc.UID)
	kube := st.kube()
	if !ok || kube == nil {
		return ""
	}
	sec, err := kube.CoreV1().Secrets(svc.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		// Gone or unreadable: the listeners keep the certificate they have
		// (never taken away on doubt); the Service's next sync says why.
		return ""
	}
	if certHash(sec.Data[v1.TLSCertKey]) != have.hash {
		st.tlsCerts.dropSecret(svc.Namespace + "/" + name) // the sync it causes reads it anew
		return fmt.Sprintf("TLS Secret %s/%s holds a new certificate", svc.Namespace, name)
	}
	return ""
}
