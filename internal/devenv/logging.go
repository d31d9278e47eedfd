package devenv

import (
	"io"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	logsapi "k8s.io/component-base/logs/api/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"k8s.io/klog/v2"
)

// LogVerbosity is the -v of every manager a harness starts.
const LogVerbosity = 2

// applyLogging configures logging for the whole test process, once, before any
// goroutine logs. Every in-process manager then applies the same settings, which
// is a no-op: the global logger is never rewritten while others use it.
func applyLogging() error {
	// envtest logs through controller-runtime's logger: route it to klog, or it
	// prints a stack trace complaining that no logger was set.
	ctrllog.SetLogger(klog.Background())
	// The logging options' feature gates (ContextualLogging…): overcast-ccm's
	// command registers them; a program without it (overcast dev) must too,
	// once: a gate cannot be added after a command put the gates on its flags.
	if _, known := utilfeature.DefaultMutableFeatureGate.GetAll()[logsapi.ContextualLogging]; !known {
		if err := logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate); err != nil {
			return err
		}
	}
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	c := logsapi.NewLoggingConfiguration()
	c.Verbosity = LogVerbosity
	if LogOutput == nil {
		// The managers' own default: an in-process manager applies the same
		// again, and logsapi refuses a change (streams included).
		return logsapi.ValidateAndApply(c, utilfeature.DefaultFeatureGate)
	}
	return logsapi.ValidateAndApplyWithOptions(c, &logsapi.LoggingOptions{ErrorStream: LogOutput, InfoStream: LogOutput}, utilfeature.DefaultFeatureGate)
}

// LogOutput receives, when set before Start, the logs of this process (client-go,
// envtest) instead of stderr: `overcast dev` points it at a file so the terminal
// shows only the demo's steps. Leave it nil where managers run in-process.
var LogOutput io.Writer
