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
