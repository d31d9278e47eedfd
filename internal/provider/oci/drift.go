package oci

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// Drift finds a renewed TLS Secret: a certificate its SSL listeners or
// backend sets present that is no longer the Secret's (cert-manager renews
// them in place). One read of each TLS Secret per drift period; a Service
// without SSL costs nothing.
func (st *steps) Drift(ctx context.Context, svc *v1.Service, _ lbcycle.Record, lb ociLB) (string, error) {
	spec, err := st.parseSpec(svc)
	if err != nil || len(spec.tls) == 0 {
		return "", nil //nolint:nilerr // an invalid Service is the sync's to report
	}
	if err := st.readCerts(ctx, &spec); err != nil {
		return "", nil //nolint:nilerr // as above: the sync reports it
	}
	inUse := map[string]bool{}
	for _, l := range lb.Obj.Listeners {
		if l.SSLConfiguration != nil {
			inUse[l.SSLConfiguration.CertificateName] = true
		}
	}
	for _, bs := range lb.Obj.BackendSets {
		if bs.SSLConfiguration != nil {
			inUse[bs.SSLConfiguration.CertificateName] = true
		}
	}
	for secret, c := range spec.certs {
		name := certNames(lb.Obj, spec)[secret]
		if got, ok := lb.Obj.Certificates[name]; !ok || !sameCertificate(got, c) || !inUse[name] {
			return fmt.Sprintf("the TLS Secret %s was renewed", spec.tls[secret]), nil
		}
	}
	return "", nil
}
