package framework

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// Proxy forwards TCP connections from a loopback port to a target, and can
// be cut: the port refuses connections and the open ones are closed, as when
// the process behind it is gone. Tests put it between overcast-ccm and the
// apiserver.
type Proxy struct {
	target string
	mu     sync.Mutex
	addr   string
	ln     net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewProxy forwards 127.0.0.1:<a free port> to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

func (p *Proxy) forward(c net.Conn) {
	up, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(context.Background(), "tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Cut closes the port and every open connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore opens the port again (the same one).
func (p *Proxy) Restore() error {
	var err error
	for range 50 { // the port was just closed: a moment may pass before it is free
		var ln net.Listener
		if ln, err = new(net.ListenConfig).Listen(context.Background(), "tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// KubeconfigVia writes a copy of the CCM's kubeconfig whose server is
// reached through addr (host:port) and returns its path.
func (e *Env) KubeconfigVia(t testing.TB, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(e.CCMKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) == 0 {
		t.Fatal(errors.New("the CCM's kubeconfig has no cluster"))
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = addr
		c.Server = u.String()
	}
	path := filepath.Join(t.TempDir(), "via.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// APIServerAddr is the apiserver's host:port.
func (e *Env) APIServerAddr() string {
	u, err := url.Parse(e.Admin.Host)
	if err != nil || u.Host == "" {
		return e.Admin.Host
	}
	return u.Host
}
