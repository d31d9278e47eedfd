// Command overcast-ccm is the Overcast cloud-controller-manager.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric

	"github.com/overcast-ccm/overcast/internal/ccm"
)

// gcPercent is the collector's target unless GOGC is set: collect when the
// heap has grown by half of what is live, not by all of it. A CCM's live heap
// is small (about 8 MB at 500 Nodes) and it is idle most of the time, so the
// extra collections cost little CPU, while the heap it grows to is most of its
// anonymous memory. Measured on the bench (docs/benchmarks.md, session 10):
// peak RSS at 500 Nodes 70.7 → 67.5 MiB, the same initialisation times, and
// CPU time within noise (Prometheus made the same change in v2.53). The
// operator's GOGC (and GOMEMLIMIT) still rule.
const gcPercent = 50

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	// SIGTERM (a Pod deleted, a rollout) and SIGINT stop the manager: it
	// returns, gives its leader Lease up and exits 0, instead of dying by the
	// signal (143) with the Lease held until it expires. A second signal
	// kills at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	go func() {
		<-ctx.Done()
		stop()
	}()
	cmd, err := ccm.NewCommand(ctx.Done(), os.Stderr)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	// An invalid cloud config (exit 2, every problem already written) and
	// --version (exit 0) end the command before it runs.
	var exit *ccm.Exit
	if err := cli.RunNoErrOutput(cmd); errors.As(err, &exit) {
		os.Exit(exit.Code)
	} else if err != nil {
		os.Stderr.WriteString("overcast-ccm: " + err.Error() + "\n")
		os.Exit(1)
	}
}
