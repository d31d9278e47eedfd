// Package providertest has what every cloud provider's tests share: the
// hostile cloud, a cloud answering garbage, run against a provider on its
// emulator (issue 21's case 5, in its short form).
package providertest

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// Hostile is a provider on its emulator, for RunHostile.
type Hostile struct {
	Cloud provider.Cloud
	// Emulator is the provider's emulator, where the faults go.
	Emulator *core.Server
	// Node is a Node of a machine that exists; Nodes the Services' members.
	Node  *v1.Node
	Nodes []*v1.Node
	// Service is a new LoadBalancer Service (a UID of its own) named name.
	Service func(name string) *v1.Service
	// Fresh drops what the provider keeps from earlier answers, so that the
	// next calls go to the cloud.
	Fresh func()
	// Held counts what the cloud holds for the Service (load balancers,
	// addresses): 1 once converged, never more.
	Held func(t *testing.T, svc *v1.Service) int
	// ClusterName is the name the provider's load balancers are made with.
	ClusterName string
}

// heapLimit is the most the heap in use may grow at its peak while the cloud
// answers 1 GiB: the response limit (cloudapi.DefaultMaxResponseBytes, 16 MiB) read
// into a buffer that doubles as it grows, with room for the collector's lag.
const heapLimit = 256 << 20

// RunHostile answers every call of the provider with each broken answer of
// core.Fault.Mangle in turn: a truncated body, a body of the wrong types, a
// body of 1 GiB, a connection reset, lists whose next page never ends, and
// a call never answered. Each is an
// error, never a panic, never a machine gone (so never a Node deleted) and
// never a removal; memory stays bounded; and once the cloud answers well
// again the Service converges with one load balancer, however many of its
// creations were made while the answers were garbage.
func RunHostile(t *testing.T, h Hostile) {
	ctx := t.Context()
	faults := []core.Fault{{Hang: true}}
	for _, m := range core.Mangles {
		faults = append(faults, core.Fault{Mangle: m})
	}
	for _, f := range faults {
		name := f.Mangle
		if f.Hang {
			name = "never-answers"
		}
		t.Run(name, func(t *testing.T) {
			svc := h.Service("hostile-" + name)
			h.Emulator.ClearFaults()
			if f.Mangle == core.MangleEndlessPages {
				// Something to list: an empty list ends at its first page.
				converge(t, h, svc)
			}
			h.Emulator.InjectFault(f)
			h.Fresh()
			peak := heapPeak(t)
			calls0 := h.Emulator.CallCount()
			began := time.Now()

			// A call never answered ends with the caller's deadline, as the
			// controllers' calls do.
			callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			exists, err := h.Cloud.InstanceExists(callCtx, h.Node)
			if err == nil && !exists {
				t.Errorf("InstanceExists: a machine that exists is gone (its Node would be deleted) on a %s answer", name)
			}
			down, err := h.Cloud.InstanceShutdown(callCtx, h.Node)
			if err == nil && down {
				t.Errorf("InstanceShutdown: a running machine is shut down on a %s answer", name)
			}
			for range 3 {
				_, err = h.Cloud.EnsureLoadBalancer(callCtx, h.ClusterName, svc, h.Nodes)
				// Endless pages break only listings: a pass that needs none
				// may well succeed.
				if err == nil && f.Mangle != core.MangleEndlessPages {
					t.Fatalf("EnsureLoadBalancer succeeded on %s answers", name)
				}
			}
			if sw, ok := h.Cloud.(provider.Sweeper); ok {
				if _, err := sw.Leftovers(callCtx, h.ClusterName, provider.NewLive(nil)); err == nil {
					t.Errorf("Leftovers listed from %s answers", name)
				}
			}
			if slices.Contains(core.NotAPI, f.Mangle) {
				saysNotAPI(t, h)
			}
			grown, made := peak(), h.Emulator.CallCount()-calls0
			// Every call above shares one 5 s deadline: a call that outlived
			// it (held until an attempt's timeout, 30 s) would show here.
			if took := time.Since(began); f.Hang && took > 15*time.Second {
				t.Errorf("the calls to a cloud that never answers took %s: the caller's deadline (5 s) did not end them", took.Round(time.Second))
			}
			t.Logf("%d calls in %s; the heap in use grew by %d MiB at its peak", made, time.Since(began).Round(time.Millisecond), grown>>20)
			if f.Mangle == core.MangleEndlessPages && made < 100 {
				t.Errorf("only %d calls: the listings did not follow the endless pages (is the emulator's Pager set?)", made)
			}
			if grown > heapLimit {
				t.Errorf("the heap grew by %d MiB at its peak on %s answers", grown>>20, name)
			}

			h.Emulator.ClearFaults()
			h.Fresh()
			converge(t, h, svc)
			if n := h.Held(t, svc); n != 1 {
				t.Errorf("the cloud holds %d load balancers for the Service after %s answers, want 1", n, name)
			}
			exists, err = h.Cloud.InstanceExists(ctx, h.Node)
			if err != nil || !exists {
				t.Errorf("after the faults: InstanceExists = %v, %v", exists, err)
			}
		})
	}
}

// saysNotAPI checks that the errors of a Node's lookup and of a Service's
// load balancer, answered by something that is not the cloud's API (a
// wrong path, a portal, a proxy), say so with the host, as a person needs to
// act on them. Each call has time for its retries.
func saysNotAPI(t *testing.T, h Hostile) {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimPrefix(h.Emulator.URL(), "http://"), "https://")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, exists := h.Cloud.InstanceExists(ctx, h.Node)
	_, ensure := h.Cloud.EnsureLoadBalancer(ctx, h.ClusterName, h.Service("not-api"), h.Nodes)
	for call, err := range map[string]error{"InstanceExists": exists, "EnsureLoadBalancer": ensure} {
		if err == nil {
			t.Errorf("%s: no error on an answer that is not the API's", call)
			continue
		}
		for _, want := range []string{host, "which is not an answer of the", "check "} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error of an answer that is not the API's does not say %q: %v", call, want, err)
			}
		}
	}
}

// heapPeak samples the heap in use from now until the returned function is
// called, which says how far above the start it went at most.
func heapPeak(t *testing.T) func() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := int64(ms.HeapInuse)
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		var top int64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			top = max(top, int64(ms.HeapInuse)-base)
			select {
			case <-stop:
				done <- top
				return
			case <-tick.C:
			}
		}
	}()
	var once bool
	var top int64
	t.Cleanup(func() {
		if !once {
			close(stop)
			<-done
		}
	})
	return func() int64 {
		if !once {
			once = true
			close(stop)
			top = <-done
		}
		return top
	}
}

// converge runs EnsureLoadBalancer until it answers (bounded).
func converge(t *testing.T, h Hostile, svc *v1.Service) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := h.Cloud.EnsureLoadBalancer(t.Context(), h.ClusterName, svc, h.Nodes)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Service has not converged after 2 minutes: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
