package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// certNames are the names in load balancer have of the spec's certificates
// (by Secret name): the Secret's name, as the peer names it, unless have
// holds a certificate of that name with other content (the Secret was
// renewed since: OCI cannot change a certificate), then the name with a
// hash of the content.
func certNames(have ociapi.LB, spec lbSpec) map[string]string {
	out := map[string]string{}
	for secret, c := range spec.certs {
		name := secret
		if got, ok := have.Certificates[secret]; ok && !sameCertificate(got, c) {
			sum := sha256.Sum256([]byte(strings.TrimSpace(c.PublicCertificate) + strings.TrimSpace(c.CaCertificate)))
			name = secret + "-" + hex.EncodeToString(sum[:4])
		}
		out[secret] = name
	}
	return out
}

func sameCertificate(got, want ociapi.Certificate) bool {
	return strings.TrimSpace(got.PublicCertificate) == strings.TrimSpace(want.PublicCertificate) &&
		strings.TrimSpace(got.CaCertificate) == strings.TrimSpace(want.CaCertificate)
}

// withCertNames is spec with its SSL configurations naming the
// certificates as names says.
func withCertNames(spec lbSpec, names map[string]string) lbSpec {
	rename := func(c *ociapi.SSLConfiguration) *ociapi.SSLConfiguration {
		if c == nil || names[c.CertificateName] == "" || names[c.CertificateName] == c.CertificateName {
			return c
		}
		r := *c
		r.CertificateName = names[c.CertificateName]
		return &r
	}
	ls, bss := maps.Clone(spec.listeners), maps.Clone(spec.backendSets)
	for name, l := range ls {
		l.SSLConfiguration = rename(l.SSLConfiguration)
		ls[name] = l
	}
	for name, bs := range bss {
		bs.SSLConfiguration = rename(bs.SSLConfiguration)
		bss[name] = bs
	}
	spec.listeners, spec.backendSets = ls, bss
	return spec
}

// certificatesInUse is the names of the load balancer's certificates a
// listener or a backend set uses.
func certificatesInUse(lb ociapi.LB) map[string]bool {
	used := map[string]bool{}
	for _, l := range lb.Listeners {
		if l.SSLConfiguration != nil {
			used[l.SSLConfiguration.CertificateName] = true
		}
	}
	for _, bs := range lb.BackendSets {
		if bs.SSLConfiguration != nil {
			used[bs.SSLConfiguration.CertificateName] = true
		}
	}
	return used
}

// staleCertificate is a certificate of the load balancer that no listener
// or backend set uses and that was made of one of the spec's Secrets before
// it was renewed (its name is the Secret's, or that with a hash): "" for
// none. Other certificates are not this Service's to remove.
func staleCertificate(have ociapi.LB, spec lbSpec, names map[string]string) string {
	used := certificatesInUse(have)
	for _, name := range slices.Sorted(maps.Keys(have.Certificates)) {
		if used[name] || slices.Contains(slices.Collect(maps.Values(names)), name) {
			continue
		}
		for secret := range spec.tls {
			if name == secret || (strings.HasPrefix(name, secret+"-") && len(name) == len(secret)+9) {
				return name
			}
		}
	}
	return ""
}
