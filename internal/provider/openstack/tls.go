package openstack

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
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
func (c *Cloud) tlsOf(svc *v1.Service, ports []v1.ServicePort, e *specErrors) *tlsSpec {
	cfg := c.cfg.LoadBalancer
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
func (c *Cloud) readTLSSecret(ctx context.Context, svc *v1.Service, t *tlsSpec) error {
	if t == nil || t.secret == nil {
		return nil
	}
	kube := c.Kube()
	if kube == nil {
		return errors.New("no Kubernetes client yet to read the TLS Secret")
	}
	name := t.secret.name
	ref := svc.Namespace + "/" + name
	if read, ok := c.tlsCerts.readSecret(ref); ok {
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
	c.tlsCerts.keepSecret(ref, *t.secret)
	return nil
}

// certHash names a Secret's certificate (its tls.crt) in Barbican: public
// information only, never the key.
func certHash(crt []byte) string {
	sum := sha256.Sum256(crt)
	return hex.EncodeToString(sum[:8])
}

// tlsStore remembers, per Service, the certificate container this process
// stored or found for it, and whether older ones may be left in Barbican.
type tlsStore struct {
	mu sync.Mutex
	// secrets are the TLS Secrets read lately ("<namespace>/<name>"): a
	// Service's every sync (a Node change among them) reads its Secret, which
	// would be an apiserver request per Service per Node change. A rotation is
	// seen by the drift check, which reads the Secret itself (secretRotated).
	secrets map[string]readSecret
	stored  map[types.UID]storedCert
	swept   map[types.UID]string // the hash of the one certificate left of the Service in Barbican
	checked map[types.UID]string // the named reference read in Barbican, per Service
}

type storedCert struct{ hash, ref string }

type readSecret struct {
	secret tlsSecret
	at     time.Time
}

// secretReadFor is how long a Secret read stands for the syncs of its
// Services.
const secretReadFor = time.Minute

func (t *tlsStore) readSecret(ref string) (tlsSecret, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.secrets[ref]
	if !ok || time.Since(r.at) > secretReadFor {
		return tlsSecret{}, false
	}
	return r.secret, true
}

func (t *tlsStore) keepSecret(ref string, s tlsSecret) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, r := range t.secrets {
		if time.Since(r.at) > secretReadFor {
			delete(t.secrets, k)
		}
	}
	t.secrets[ref] = readSecret{secret: s, at: time.Now()}
}

func (t *tlsStore) dropSecret(ref string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.secrets, ref)
}

func newTLSStore() *tlsStore {
	return &tlsStore{secrets: map[string]readSecret{}, stored: map[types.UID]storedCert{}, swept: map[types.UID]string{}, checked: map[types.UID]string{}}
}

func (t *tlsStore) get(uid types.UID) (storedCert, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.stored[uid]
	return s, ok
}

func (t *tlsStore) set(uid types.UID, s storedCert) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stored[uid] = s
	delete(t.swept, uid)
}

// sweptFor says whether only the certificate of hash is left of the Service.
func (t *tlsStore) sweptFor(uid types.UID, hash string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.swept[uid]
	return ok && h == hash
}

func (t *tlsStore) setSwept(uid types.UID, hash string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.swept[uid] = hash
}

// checkedRef is the named reference read in Barbican for the Service.
func (t *tlsStore) checkedRef(uid types.UID) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checked[uid]
}

func (t *tlsStore) setChecked(uid types.UID, ref string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checked[uid] = ref
}

func (t *tlsStore) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.stored, uid)
	delete(t.swept, uid)
	delete(t.checked, uid)
}

// storedPrefix starts the Barbican names of a Service's certificates.
func storedPrefix(uid types.UID) string { return "overcast-tls_" + string(uid) + "_" }

// storedName is the Barbican name of a Service's certificate container:
// overcast-tls_<Service UID>_<hash>_<cluster UID>, its secrets' names that
// and _<part>. The cluster's UID tells `overcast sweep` whose it is once its
// Service is gone (another cluster may store its certificates in the same
// project).
func storedName(uid types.UID, hash, cluster string) string {
	return storedPrefix(uid) + hash + "_" + cluster
}

// certParts are the suffixes of a stored certificate's secrets.
var certParts = []string{"certificate", "private_key", "intermediates"}

// parseStoredName reads a Barbican name storedName (or a secret's) made:
// the Service's UID and the cluster's ("" in names made before it was
// recorded); ok false for a name that is not ours.
func parseStoredName(name string) (uid types.UID, cluster string, ok bool) {
	rest, found := strings.CutPrefix(name, "overcast-tls_")
	if !found {
		return "", "", false
	}
	parts := strings.SplitN(rest, "_", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	uid, cluster = types.UID(parts[0]), ""
	if len(parts) == 3 {
		cluster = parts[2]
		for _, p := range certParts {
			if cluster == p {
				return uid, "", true
			}
			if c, cut := strings.CutSuffix(cluster, "_"+p); cut {
				return uid, c, true
			}
		}
	}
	return uid, cluster, true
}

// prepareTLS makes the spec's certificate ready before a listener is built
// with it: a named reference is read in Barbican (once per reference and
// Service in this process); a Secret's certificate is found in Barbican, or
// stored there.
func (c *Cloud) prepareTLS(ctx context.Context, svc *v1.Service, s *lbSpec) error {
	t := s.tls
	if t == nil || !slices.ContainsFunc(s.ports, s.isTLS) {
		return nil
	}
	if t.secret != nil {
		return c.storeCert(ctx, svc, t)
	}
	if !t.check {
		return nil
	}
	if c.tlsCerts.checkedRef(svc.UID) == t.ref {
		return nil
	}
	if err := c.keyManager(ctx); err != nil {
		return err
	}
	kind, id, err := barbicanRef(t.ref)
	if err != nil {
		return outcome.Invalid(err)
	}
	if kind == "containers" {
		err = c.api.getContainer(ctx, id)
	} else {
		err = c.api.getSecret(ctx, id)
	}
	if hasStatus(err, http.StatusNotFound) || hasStatus(err, http.StatusForbidden) {
		return outcome.Refuse(outcome.ReasonInvalidAnnotation, "TLS certificate %s is not in Barbican, or this CCM's user may not read it; nothing was built with it", t.ref)
	}
	if err != nil {
		return fmt.Errorf("reading TLS certificate %s in Barbican: %w", t.ref, redact(err))
	}
	c.tlsCerts.setChecked(svc.UID, t.ref)
	return nil
}

// keyManager finds Barbican; a catalog without it refuses TLS termination.
func (c *Cloud) keyManager(ctx context.Context) error {
	missing, err := c.api.keyManagerMissing(ctx)
	if missing {
		return outcome.Refuse(outcome.ReasonUnsupportedService, "This cloud's catalog has no key-manager (Barbican): TLS termination needs it; nothing was built")
	}
	return err
}

// storeCert finds the Secret's certificate in Barbican, by the name its
// hash gives, or stores it there: its certificate, key and intermediates as
// secrets, and a certificate container naming them.
func (c *Cloud) storeCert(ctx context.Context, svc *v1.Service, t *tlsSpec) error {
	sec := t.secret
	if have, ok := c.tlsCerts.get(svc.UID); ok && have.hash == sec.hash {
		t.ref = have.ref
		return nil
	}
	if err := c.keyManager(ctx); err != nil {
		return err
	}
	name := storedName(svc.UID, sec.hash, c.Cluster.Get())
	found, err := c.api.listContainers(ctx, containers.ListOpts{Name: name, Limit: 10})
	if err != nil {
		return fmt.Errorf("listing Barbican containers: %w", redact(err))
	}
	if len(found) > 0 {
		// Stored before (by this process before a restart, or another replica).
		t.ref = found[0].ContainerRef
		c.tlsCerts.set(svc.UID, storedCert{hash: sec.hash, ref: t.ref})
		return nil
	}
	ref, err := c.putCertificate(ctx, name, sec.cert, sec.key, sec.chain)
	if err != nil {
		return fmt.Errorf("storing the certificate of Secret %s/%s in Barbican: %w", svc.Namespace, sec.name, err)
	}
	t.ref = ref
	c.tlsCerts.set(svc.UID, storedCert{hash: sec.hash, ref: t.ref})
	klog.FromContext(ctx).Info("Stored the certificate of a TLS Secret in Barbican", "service", klog.KObj(svc), "secret", sec.name, "container", t.ref)
	return nil
}

// putCertificate stores a certificate, its key and intermediates (none:
// left out) as secrets named name_<part>, and a certificate container name
// naming them; it returns the container's reference.
func (c *Cloud) putCertificate(ctx context.Context, name string, cert, key, chain []byte) (string, error) {
	var refs []containers.SecretRef
	for _, part := range []struct {
		name    string
		kind    secrets.SecretType
		payload []byte
	}{
		{certParts[0], secrets.CertificateSecret, cert},
		{certParts[1], secrets.PrivateSecret, key},
		{certParts[2], secrets.CertificateSecret, chain},
	} {
		if len(part.payload) == 0 {
			continue
		}
		ref, err := c.api.createSecret(ctx, secrets.CreateOpts{
			Name: name + "_" + part.name, SecretType: part.kind,
			Payload: base64.StdEncoding.EncodeToString(part.payload), PayloadContentType: "application/octet-stream", PayloadContentEncoding: "base64",
		})
		if err != nil {
			return "", fmt.Errorf("the %s: %w", strings.ReplaceAll(part.name, "_", " "), redact(err))
		}
		refs = append(refs, containers.SecretRef{Name: part.name, SecretRef: ref})
	}
	ref, err := c.api.createContainer(ctx, containers.CreateOpts{Type: containers.CertificateContainer, Name: name, SecretRefs: refs})
	if err != nil {
		return "", fmt.Errorf("the container: %w", redact(err))
	}
	return ref, nil
}

// sweepCerts deletes the Service's certificates in Barbican but the one in
// use (keepHash; "" deletes all): containers first, then the secrets they
// named. Barbican lists by exact name only, so the project's containers and
// secrets are listed and those the Service's prefix names are picked: a
// Service with no Secret of its own, and one swept in this process since its
// last new certificate, costs nothing.
func (c *Cloud) sweepCerts(ctx context.Context, svc *v1.Service, keepHash string) error {
	if keepHash != "" && c.tlsCerts.sweptFor(svc.UID, keepHash) {
		return nil
	}
	if _, stored := c.tlsCerts.get(svc.UID); !stored && !annotation.OpenStackTLSSecret.IsSet(svc) {
		return nil
	}
	missing, err := c.api.keyManagerMissing(ctx)
	if missing {
		return nil // no Barbican: nothing was ever stored in it
	}
	if err != nil {
		return err
	}
	prefix := storedPrefix(svc.UID)
	objs, err := c.storedObjects(ctx)
	if err != nil {
		return err
	}
	deleted := 0
	for _, o := range objs {
		if !strings.HasPrefix(o.name, prefix) || keepHash != "" && strings.HasPrefix(o.name, prefix+keepHash) {
			continue
		}
		var err error
		if o.kind == kindContainer {
			err = c.api.deleteContainer(ctx, lastSegment(o.ref))
		} else {
			err = c.api.deleteSecret(ctx, lastSegment(o.ref))
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s: %w", o.kind, o.ref, redact(err))
		}
		deleted++
	}
	if deleted > 0 {
		klog.FromContext(ctx).Info("Deleted certificates of a Service in Barbican", "service", klog.KObj(svc), "objects", deleted)
	}
	if keepHash == "" {
		c.tlsCerts.forget(svc.UID)
	} else {
		c.tlsCerts.setSwept(svc.UID, keepHash)
	}
	return nil
}

// storedObject is a Barbican container or secret of the project.
type storedObject struct{ kind, name, ref string }

// The kinds of storedObject, as a person reads them.
const (
	kindContainer = "Barbican container"
	kindSecret    = "Barbican secret"
)

// storedObjects lists the project's Barbican containers, then its secrets
// (containers name secrets: they go first). Barbican lists by exact name
// only, so every one is listed.
func (c *Cloud) storedObjects(ctx context.Context) ([]storedObject, error) {
	var objs []storedObject
	cs, err := c.api.listContainers(ctx, containers.ListOpts{Limit: 100})
	if err != nil {
		return nil, fmt.Errorf("listing Barbican containers: %w", redact(err))
	}
	for _, ct := range cs {
		objs = append(objs, storedObject{kindContainer, ct.Name, ct.ContainerRef})
	}
	ss, err := c.api.listSecrets(ctx, secrets.ListOpts{Limit: 100})
	if err != nil {
		return nil, fmt.Errorf("listing Barbican secrets: %w", redact(err))
	}
	for _, sc := range ss {
		objs = append(objs, storedObject{kindSecret, sc.Name, sc.SecretRef})
	}
	return objs, nil
}

func lastSegment(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

// tlsRefusal explains Octavia's "Could not retrieve certificate": with its
// default barbican_acl_auth, Octavia sets the certificate's ACL with a token
// made from the caller's, which Keystone refuses for an application
// credential's ("Using a delegated token to create another token is not
// allowed"; measured with Zed's Octavia 11 and Keystone 22).
func (c *Cloud) tlsRefusal(err error, s lbSpec) error {
	if s.tls == nil || !hasStatus(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "Could not retrieve certificate") {
		return nil
	}
	g := c.clients.global()
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
func (c *Cloud) secretRotated(ctx context.Context, svc *v1.Service) string {
	name, err := annotation.OpenStackTLSSecret.NonEmptyString(svc)
	if err != nil {
		return ""
	}
	have, ok := c.tlsCerts.get(svc.UID)
	kube := c.Kube()
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
		c.tlsCerts.dropSecret(svc.Namespace + "/" + name) // the sync it causes reads it anew
		return fmt.Sprintf("TLS Secret %s/%s holds a new certificate", svc.Namespace, name)
	}
	return ""
}
