// Command overcast-ccm is the Overcast cloud-controller-manager.
package main

import (
	"errors"
	"os"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric

	"github.com/overcast-ccm/overcast/internal/ccm"
)

func main() {
	cmd, err := ccm.NewCommand(wait.NeverStop, os.Stderr)
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
