package l4proxy

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// startProber starts the health prober of b, unless pc probes nothing. Called
// under Manager.mu.
func (l *listener) startProber(b *backend, pc probeConfig) {
	if pc.mode == probeNone {
		return
	}
	ctx, cancel := context.WithCancel(l.ctx)
	done := make(chan struct{})
	b.stopProbe, b.probeDone = cancel, done
	l.wg.Go(func() {
		defer close(done)
		l.probeLoop(ctx, b, pc)
	})
}

// stopProber stops the prober of b, if any, and waits for it. Called under
// Manager.mu.
func (l *listener) stopProber(b *backend) {
	if b.stopProbe == nil {
		return
	}
	b.stopProbe()
	<-b.probeDone
	b.stopProbe, b.probeDone = nil, nil
}

// probeLoop probes b every pc.interval until ctx ends, flipping b.healthy when
// a threshold of consecutive results is reached. The first probe comes after a
// random fraction of half an interval, which spreads the probes of many
// backends.
func (l *listener) probeLoop(ctx context.Context, b *backend, pc probeConfig) {
	log := l.log.WithValues("backend", b.Name, "backendAddress", b.Addr.String())
	timer := time.NewTimer(rand.N(pc.interval/2 + 1))
	defer timer.Stop()
	var successes, failures int
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		err := l.probeOnce(ctx, b, pc)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			successes, failures = successes+1, 0
			if successes >= pc.healthyThreshold && !b.healthy.Load() {
				b.healthy.Store(true)
				log.V(2).Info("Backend became healthy")
			}
		} else {
			successes, failures = 0, failures+1
			if failures >= pc.unhealthyThreshold && b.healthy.Load() {
				b.healthy.Store(false)
				log.V(2).Info("Backend became unhealthy", "reason", err.Error())
			} else {
				log.V(4).Info("Health probe failed", "reason", err.Error(), "consecutiveFailures", failures)
			}
		}
		timer.Reset(pc.interval)
	}
}

// probeOnce runs one probe of b; nil means success.
func (l *listener) probeOnce(ctx context.Context, b *backend, pc probeConfig) error {
	ctx, cancel := context.WithTimeout(ctx, pc.timeout)
	defer cancel()
	switch pc.mode {
	case probeTCP:
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", b.Addr.String())
		if err != nil {
			return err
		}
		return c.Close()
	case probeHTTP:
		url := "http://" + netip.AddrPortFrom(b.Addr.Addr(), pc.port).String() + pc.path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "overcast-l4proxy-healthcheck")
		resp, err := l.m.health.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: HTTP status %d", url, resp.StatusCode)
		}
	}
	return nil
}
