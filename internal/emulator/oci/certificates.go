package oci

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"slices"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Certificates of a load balancer and the SSL configuration of its
// listeners and backend sets (loadbalancer.Certificate,
// CreateCertificateDetails, SSLConfiguration; the defaults are those the
// SDK's SSLConfigurationDetails documents: TLSv1.2 and the cipher suite
// oci-default-ssl-cipher-suite-v1). A certificate is created whole with its
// private key, which no GET ever shows; it cannot be changed, only
// deleted, and not while a listener or a backend set uses it. Not emulated:
// TLS in the data plane (an SSL listener carries its bytes as TCP).

type certificate struct {
	CertificateName   string `json:"certificateName"`
	PublicCertificate string `json:"publicCertificate"`
	CaCertificate     string `json:"caCertificate,omitempty"`
	// privateKey and passphrase are kept, never shown.
	privateKey, passphrase string
}

// certificateDetails is CreateCertificateDetails (and CertificateDetails, in
// a create's certificates).
type certificateDetails struct {
	CertificateName   string `json:"certificateName"`
	PublicCertificate string `json:"publicCertificate"`
	PrivateKey        string `json:"privateKey"`
	Passphrase        string `json:"passphrase"`
	CaCertificate     string `json:"caCertificate"`
}

type sslConfiguration struct {
	CertificateName       string   `json:"certificateName"`
	VerifyDepth           int      `json:"verifyDepth"`
	VerifyPeerCertificate bool     `json:"verifyPeerCertificate"`
	CipherSuiteName       string   `json:"cipherSuiteName"`
	Protocols             []string `json:"protocols"`
	ServerOrderPreference string   `json:"serverOrderPreference,omitempty"`
}

// asCertificate checks d and makes the certificate.
func (d certificateDetails) asCertificate() (*certificate, error) {
	if d.CertificateName == "" {
		return nil, invalid("certificateName is required.")
	}
	if d.PublicCertificate != "" {
		if b, _ := pem.Decode([]byte(d.PublicCertificate)); b == nil || b.Type != "CERTIFICATE" {
			return nil, invalid("Certificate %s: publicCertificate is not a PEM certificate.", d.CertificateName)
		} else if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return nil, invalid("Certificate %s: publicCertificate cannot be parsed: %v", d.CertificateName, err)
		}
		if b, _ := pem.Decode([]byte(d.PrivateKey)); b == nil {
			return nil, invalid("Certificate %s: privateKey is not a PEM key.", d.CertificateName)
		}
	} else if d.CaCertificate == "" {
		return nil, invalid("Certificate %s: give publicCertificate and privateKey, or caCertificate.", d.CertificateName)
	}
	return &certificate{CertificateName: d.CertificateName, PublicCertificate: d.PublicCertificate, CaCertificate: d.CaCertificate,
		privateKey: d.PrivateKey, passphrase: d.Passphrase}, nil
}

// checkSSL fills c's defaults and checks that its certificate is one of
// certs.
func checkSSL(c *sslConfiguration, certs map[string]*certificate, what string) error {
	if c == nil {
		return nil
	}
	if certs[c.CertificateName] == nil {
		return invalid("%s: certificate %q does not exist.", what, c.CertificateName)
	}
	if c.CipherSuiteName == "" {
		c.CipherSuiteName = "oci-default-ssl-cipher-suite-v1"
	}
	if len(c.Protocols) == 0 {
		c.Protocols = []string{"TLSv1.2"}
	}
	return nil
}

// certificateInUse says what uses a load balancer's certificate ("" for
// nothing).
func certificateInUse(lb *loadBalancer, name string) string {
	for _, l := range lb.Listeners {
		if l.SSLConfiguration != nil && l.SSLConfiguration.CertificateName == name {
			return "listener " + l.Name
		}
	}
	for _, bs := range lb.BackendSets {
		if bs.SSLConfiguration != nil && bs.SSLConfiguration.CertificateName == name {
			return "backend set " + bs.Name
		}
	}
	return ""
}

func (e *Emulator) routeCertificates(p string) {
	e.handle("GET "+p+"/{id}/certificates", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		lb, ok := e.lbs.Get(r.PathValue("id"))
		var out []*certificate
		if ok {
			for _, c := range lb.Certificates {
				v := *c
				out = append(out, &v)
			}
		}
		e.mu.Unlock()
		if !ok {
			writeNotFound(w)
			return
		}
		slices.SortFunc(out, func(a, b *certificate) int {
			if a.CertificateName < b.CertificateName {
				return -1
			}
			return 1
		})
		if out == nil {
			out = []*certificate{}
		}
		core.WriteJSON(w, http.StatusOK, out)
	})
	e.handle("POST "+p+"/{id}/certificates", func(w http.ResponseWriter, r *http.Request) {
		var d certificateDetails
		if !decodeBody(w, r, &d) {
			return
		}
		e.change(w, r, "CreateCertificate", func(lb *loadBalancer) (func(), error) {
			c, err := d.asCertificate()
			if err != nil {
				return nil, err
			}
			if lb.Certificates[c.CertificateName] != nil {
				return nil, conflict("Certificate %s already exists.", c.CertificateName)
			}
			return func() { lb.Certificates[c.CertificateName] = c }, nil
		})
	})
	e.handle("DELETE "+p+"/{id}/certificates/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		e.change(w, r, "DeleteCertificate", func(lb *loadBalancer) (func(), error) {
			if lb.Certificates[name] == nil {
				return nil, notFound("Certificate %s not found.", name)
			}
			if by := certificateInUse(lb, name); by != "" {
				return nil, invalid("Certificate %s is used by %s.", name, by)
			}
			return func() { delete(lb.Certificates, name) }, nil
		})
	})
}
