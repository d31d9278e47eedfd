package core

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The emulator as an HTTPS proxy: a client that sends its requests for a
// cloud's real host names through the emulator (HTTPS_PROXY) opens a CONNECT
// tunnel; the emulator answers it itself, with a certificate for the host
// from its own CA, and serves the API inside. So a client that cannot be
// given another endpoint (an unmodified peer CCM) reaches the emulator with
// its signatures covering the real host names, and nothing leaves the
// machine: the emulator connects nowhere.

// CA is an emulator's certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
	serial int64
}

// NewCA makes a CA named name, valid for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[string]*tls.Certificate{}}, nil
}

// PEM is the CA's certificate, for a client to trust (SSL_CERT_FILE).
func (ca *CA) PEM() []byte { return ca.pem }

// Pool is a pool of the CA's certificate alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// leaf is a certificate for host, minted once.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	c, err := ca.issue(host)
	if err != nil {
		return nil, err
	}
	ca.leaves[host] = c
	return c, nil
}

// issue mints a new server certificate for host. Call with mu held.
func (ca *CA) issue(host string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial + 1), Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}, nil
}

// Sign makes a certificate of tmpl for the public key pub, signed by the CA
// (DER), valid for a day from an hour ago: an identity certificate an
// emulator gives out.
func (ca *CA) Sign(tmpl *x509.Certificate, pub any) ([]byte, error) {
	ca.mu.Lock()
	ca.serial++
	tmpl.SerialNumber = big.NewInt(ca.serial + 1)
	ca.mu.Unlock()
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
	return x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
}

// Verify says whether cert was signed by the CA.
func (ca *CA) Verify(cert *x509.Certificate) error { return cert.CheckSignatureFrom(ca.cert) }

// IssuePEM mints a new server certificate for host, in PEM with its key, as
// a kubernetes.io/tls Secret holds them (tests: each call a new one, as a
// renewal makes).
func (ca *CA) IssuePEM(host string) (certPEM, keyPEM []byte, err error) {
	ca.mu.Lock()
	c, err := ca.issue(host)
	ca.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

// ServeTunnels makes s answer CONNECT requests for hosts ending in one of
// suffixes (".oraclecloud.com") itself, with certificates from ca; a
// CONNECT to any other host is refused (403).
func (s *Server) ServeTunnels(ca *CA, suffixes ...string) {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	s.ca, s.tunnelHosts = ca, suffixes
}

// tunnel answers a CONNECT: the client's TLS is terminated here and the
// requests inside are served by s, as any other.
func (s *Server) tunnel(w http.ResponseWriter, r *http.Request) {
	s.srvMu.Lock()
	ca, suffixes := s.ca, s.tunnelHosts
	s.srvMu.Unlock()
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	ok := false
	for _, suf := range suffixes {
		ok = ok || strings.HasSuffix(host, suf)
	}
	if ca == nil || !ok {
		http.Error(w, fmt.Sprintf("%s: no tunnel to %s: it serves %s only", s.opts.Name, r.Host, strings.Join(suffixes, ", ")), http.StatusForbidden)
		return
	}
	hj, isHijacker := w.(http.Hijacker)
	if !isHijacker {
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n"); err != nil || rw.Flush() != nil {
		_ = conn.Close()
		return
	}
	tlsConn := tls.Server(&bufferedConn{Conn: conn, r: rw.Reader}, &tls.Config{MinVersion: tls.VersionTLS12,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := hello.ServerName
			if name == "" {
				name = host
			}
			return ca.leaf(name)
		}})
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.srvMu.Lock()
	if s.tunnels == nil {
		s.tunnels = map[*http.Server]bool{}
	}
	s.tunnels[srv] = true
	s.srvMu.Unlock()
	go func() {
		_ = srv.Serve(&oneConn{conn: tlsConn, done: make(chan struct{})})
		s.srvMu.Lock()
		delete(s.tunnels, srv)
		s.srvMu.Unlock()
	}()
}

// bufferedConn is a hijacked connection whose first bytes may be buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// oneConn is a listener of one connection, for an http.Server to serve it:
// Accept gives the connection once, then waits until it or the listener is
// closed.
type oneConn struct {
	conn    net.Conn
	once    sync.Once
	done    chan struct{}
	closing sync.Once
}

var errServed = errors.New("the tunnel's one connection is served")

func (l *oneConn) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = &closeNotify{Conn: l.conn, closed: l.close} })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, errServed
}

func (l *oneConn) close() { l.closing.Do(func() { close(l.done) }) }

func (l *oneConn) Close() error   { l.close(); return nil }
func (l *oneConn) Addr() net.Addr { return l.conn.LocalAddr() }

// closeNotify ends the listener when its connection closes.
type closeNotify struct {
	net.Conn
	closed func()
}

func (c *closeNotify) Close() error {
	c.closed()
	return c.Conn.Close()
}
