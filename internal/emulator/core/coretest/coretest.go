// Package coretest has what tests of emulators' data planes share: a backend
// that names itself, and a request through a load balancer.
package coretest

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// Answerer accepts TCP connections on addr (loopback) until the test ends and
// writes name and a newline to each.
func Answerer(t testing.TB, addr, name string) {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(name + "\n"))
			_ = c.Close()
		}
	}()
}

// Ask connects to addr and returns the line it answers.
func Ask(addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	return bufio.NewReader(c).ReadString('\n')
}

// Start makes an emulator with newEmulator(opts) and serves it as Serve
// does: the started helper of every emulator's tests.
func Start[O any, E interface {
	Start(addr string) error
	Close() error
}](t testing.TB, newEmulator func(O) (E, error), opts O) E {
	t.Helper()
	e, err := newEmulator(opts)
	return Serve(t, e, err)
}

// Serve starts emulator e (made with err) on a free loopback port and closes
// it when the test ends; any error fails the test.
func Serve[E interface {
	Start(addr string) error
	Close() error
}](t testing.TB, e E, err error) E {
	t.Helper()
	if err != nil {
		t.Fatalf("making the emulator: %v", err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("starting the emulator: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}
