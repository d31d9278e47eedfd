package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The beds open, closed by an interrupt (SIGINT, SIGTERM) before the bench
// exits: without it the CCM, kube-apiserver and etcd of a stopped run
// would keep running.
var open struct {
	sync.Mutex
	beds map[*bed]bool
}

// opened records b as open until closed.
func opened(b *bed) {
	open.Lock()
	defer open.Unlock()
	if open.beds == nil {
		open.beds = map[*bed]bool{}
	}
	open.beds[b] = true
}

// closed records b as closed.
func closed(b *bed) {
	open.Lock()
	defer open.Unlock()
	delete(open.beds, b)
}

// closeOnInterrupt closes every open bed on SIGINT or SIGTERM, then exits.
func closeOnInterrupt() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-ch
		fmt.Fprintf(os.Stderr, "bench: %s: stopping the CCM, the emulator and the apiserver\n", sig)
		open.Lock()
		beds := make([]*bed, 0, len(open.beds))
		for b := range open.beds {
			beds = append(beds, b)
		}
		open.Unlock()
		for _, b := range beds {
			b.close()
		}
		os.Exit(130)
	}()
}
