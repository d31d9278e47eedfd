package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// The certificates of TLS Secrets in Barbican: stored once per certificate
// (named after the Service's UID and the certificate's hash), found again
// after a restart by that name, and swept when no listener uses them.

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
	// swept: the hash of the one certificate left of the Service in Barbican.
	swept lbcycle.Marks
	// checked: the named reference read in Barbican, per Service.
	checked lbcycle.Marks
}

type storedCert struct{ hash, ref string }

type readSecret struct {
	secret tlsSecret
	at     time.Time
}

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
	return &tlsStore{secrets: map[string]readSecret{}, stored: map[types.UID]storedCert{}}
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
	t.swept.Forget(uid)
}

func (t *tlsStore) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.stored, uid)
	t.swept.Forget(uid)
	t.checked.Forget(uid)
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
func (st *steps) prepareTLS(ctx context.Context, svc *v1.Service, s *lbSpec) error {
	t := s.tls
	if t == nil || !slices.ContainsFunc(s.ports, s.isTLS) {
		return nil
	}
	if t.secret != nil {
		return st.storeCert(ctx, svc, t)
	}
	if !t.check {
		return nil
	}
	if st.tlsCerts.checked.Is(svc.UID, t.ref) {
		return nil
	}
	if err := st.keyManager(ctx); err != nil {
		return err
	}
	kind, id, err := barbicanRef(t.ref)
	if err != nil {
		return outcome.Invalid(err)
	}
	if kind == "containers" {
		err = st.api.GetContainer(ctx, id)
	} else {
		err = st.api.GetSecret(ctx, id)
	}
	if errors.Is(err, outcome.ErrNotFound) || osapi.Forbidden(err) {
		return outcome.Refuse(outcome.ReasonInvalidAnnotation, "TLS certificate %s is not in Barbican, or this CCM's user may not read it; nothing was built with it", t.ref)
	}
	if err != nil {
		return fmt.Errorf("reading TLS certificate %s in Barbican: %w", t.ref, err)
	}
	st.tlsCerts.checked.Set(svc.UID, t.ref)
	return nil
}

// keyManager finds Barbican; a catalog without it refuses TLS termination.
func (st *steps) keyManager(ctx context.Context) error {
	missing, err := st.api.KeyManagerMissing(ctx)
	if missing {
		return outcome.Refuse(outcome.ReasonUnsupportedService, "This cloud's catalog has no key-manager (Barbican): TLS termination needs it; nothing was built")
	}
	return err
}

// storeCert finds the Secret's certificate in Barbican, by the name its
// hash gives, or stores it there: its certificate, key and intermediates as
// secrets, and a certificate container naming them.
func (st *steps) storeCert(ctx context.Context, svc *v1.Service, t *tlsSpec) error {
	sec := t.secret
	if have, ok := st.tlsCerts.get(svc.UID); ok && have.hash == sec.hash {
		t.ref = have.ref
		return nil
	}
	if err := st.keyManager(ctx); err != nil {
		return err
	}
	name := storedName(svc.UID, sec.hash, st.cluster.Get())
	found, err := st.api.ListContainers(ctx, name, 10)
	if err != nil {
		return fmt.Errorf("listing Barbican containers: %w", err)
	}
	if len(found) > 0 {
		// Stored before (by this process before a restart, or another replica).
		t.ref = found[0].Ref
		st.tlsCerts.set(svc.UID, storedCert{hash: sec.hash, ref: t.ref})
		return nil
	}
	ref, err := st.putCertificate(ctx, name, sec.cert, sec.key, sec.chain)
	if err != nil {
		return fmt.Errorf("storing the certificate of Secret %s/%s in Barbican: %w", svc.Namespace, sec.name, err)
	}
	t.ref = ref
	st.tlsCerts.set(svc.UID, storedCert{hash: sec.hash, ref: t.ref})
	klog.FromContext(ctx).Info("Stored the certificate of a TLS Secret in Barbican", "service", klog.KObj(svc), "secret", sec.name, "container", t.ref)
	return nil
}

// putCertificate stores a certificate, its key and intermediates (none:
// left out) as secrets named name_<part>, and a certificate container name
// naming them; it returns the container's reference.
func (st *steps) putCertificate(ctx context.Context, name string, cert, key, chain []byte) (string, error) {
	var refs []osapi.BarbicanObject
	for _, part := range []struct {
		name    string
		private bool
		payload []byte
	}{
		{certParts[0], false, cert},
		{certParts[1], true, key},
		{certParts[2], false, chain},
	} {
		if len(part.payload) == 0 {
			continue
		}
		ref, err := st.api.CreateSecret(ctx, name+"_"+part.name, part.private, part.payload)
		if err != nil {
			return "", fmt.Errorf("the %s: %w", strings.ReplaceAll(part.name, "_", " "), err)
		}
		refs = append(refs, osapi.BarbicanObject{Name: part.name, Ref: ref})
	}
	ref, err := st.api.CreateCertificateContainer(ctx, name, refs)
	if err != nil {
		return "", fmt.Errorf("the container: %w", err)
	}
	return ref, nil
}

// sweepCerts deletes the Service's certificates in Barbican but the one in
// use (keepHash; "" deletes all): containers first, then the secrets they
// named. Barbican lists by exact name only, so the project's containers and
// secrets are listed and those the Service's prefix names are picked: a
// Service with no Secret of its own, and one swept in this process since its
// last new certificate, costs nothing.
func (st *steps) sweepCerts(ctx context.Context, svc *v1.Service, keepHash string) error {
	if keepHash != "" && st.tlsCerts.swept.Is(svc.UID, keepHash) {
		return nil
	}
	if _, stored := st.tlsCerts.get(svc.UID); !stored && !annotation.OpenStackTLSSecret.IsSet(svc) {
		return nil
	}
	missing, err := st.api.KeyManagerMissing(ctx)
	if missing {
		return nil // no Barbican: nothing was ever stored in it
	}
	if err != nil {
		return err
	}
	prefix := storedPrefix(svc.UID)
	objs, err := st.storedObjects(ctx)
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
			err = st.api.DeleteContainer(ctx, lastSegment(o.ref))
		} else {
			err = st.api.DeleteSecret(ctx, lastSegment(o.ref))
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s: %w", o.kind, o.ref, err)
		}
		deleted++
	}
	if deleted > 0 {
		klog.FromContext(ctx).Info("Deleted certificates of a Service in Barbican", "service", klog.KObj(svc), "objects", deleted)
	}
	if keepHash == "" {
		st.tlsCerts.forget(svc.UID)
	} else {
		st.tlsCerts.swept.Set(svc.UID, keepHash)
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
func (st *steps) storedObjects(ctx context.Context) ([]storedObject, error) {
	var objs []storedObject
	cs, err := st.api.ListContainers(ctx, "", 100)
	if err != nil {
		return nil, fmt.Errorf("listing Barbican containers: %w", err)
	}
	for _, ct := range cs {
		objs = append(objs, storedObject{kindContainer, ct.Name, ct.Ref})
	}
	ss, err := st.api.ListSecrets(ctx, 100)
	if err != nil {
		return nil, fmt.Errorf("listing Barbican secrets: %w", err)
	}
	for _, sc := range ss {
		objs = append(objs, storedObject{kindSecret, sc.Name, sc.Ref})
	}
	return objs, nil
}

func lastSegment(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }
