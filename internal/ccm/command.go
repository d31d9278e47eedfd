// Package ccm builds the overcast-ccm command: the k8s.io/cloud-provider controller
// manager with Overcast's providers registered and defaults sized for large clusters.
// It is shared by cmd/overcast-ccm, the e2e test framework (which runs the manager
// in-process) and the dev environment.
package ccm

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
)

// Defaults that differ from the framework's. The framework's client-side limits
// (20 QPS, burst 30) and single workers make a 5,000-node cluster wait minutes for
// initialisation; these keep it to seconds without overloading the apiserver.
const (
	DefaultKubeAPIQPS             = 100
	DefaultKubeAPIBurst           = 200
	DefaultConcurrentServiceSyncs = 5
	DefaultConcurrentNodeSyncs    = 10
)

// NewCommand returns the cobra command of overcast-ccm. stop ends the manager.
// stderr receives configuration errors before the process exits.
func NewCommand(stop <-chan struct{}, stderr io.Writer) (*cobra.Command, error) {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("initialising controller-manager options: %w", err)
	}
	opts.Generic.ClientConnection.QPS = DefaultKubeAPIQPS
	opts.Generic.ClientConnection.Burst = DefaultKubeAPIBurst
	opts.ServiceController.ConcurrentServiceSyncs = DefaultConcurrentServiceSyncs
	opts.NodeController.ConcurrentNodeSyncs = DefaultConcurrentNodeSyncs

	cmd := app.NewCloudControllerManagerCommand(opts, cloudInitializer(stderr), app.DefaultInitFuncConstructors,
		names.CCMControllerAliases(), cliflag.NamedFlagSets{}, stop)
	cmd.Use = "overcast-ccm"
	cmd.Long = "overcast-ccm is a Kubernetes cloud-controller-manager for OpenStack, CloudStack, OCI and the local cloud."
	return cmd, nil
}

// ExitCodeConfig is the exit code of an invalid cloud configuration.
const ExitCodeConfig = 2

func cloudInitializer(stderr io.Writer) app.InitCloudFunc {
	return func(c *config.CompletedConfig) cloudprovider.Interface {
		cc := c.ComponentConfig.KubeCloudShared.CloudProvider
		cloud, err := cloudprovider.InitCloudProvider(cc.Name, cc.CloudConfigFile)
		if err == nil && cloud == nil {
			err = fmt.Errorf("unknown --cloud-provider %q (known: %v)", cc.Name, Providers())
		}
		if err != nil {
			// Every problem of the configuration is in err, one per line.
			fmt.Fprintf(stderr, "overcast-ccm: cannot start cloud provider %q:\n%v\n", cc.Name, err)
			os.Exit(ExitCodeConfig)
		}
		if !cloud.HasClusterID() && !c.ComponentConfig.KubeCloudShared.AllowUntaggedCloud {
			fmt.Fprintf(stderr, "overcast-ccm: cloud provider %q has no cluster ID; set one or pass --allow-untagged-cloud\n", cc.Name)
			os.Exit(ExitCodeConfig)
		}
		return cloud
	}
}

// Providers lists the registered cloud provider names.
func Providers() []string { return registered }

var registered []string

// Registered records a provider name for error messages; providers call it from
// their Register function.
func Registered(name string) { registered = append(registered, name) }

var _ = wait.NeverStop
