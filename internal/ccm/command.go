// Package ccm builds the overcast-ccm command: the k8s.io/cloud-provider controller
// manager with Overcast's providers registered and defaults sized for large clusters.
// It is shared by cmd/overcast-ccm, the e2e test framework (which runs the manager
// in-process) and the dev environment.
package ccm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/klog/v2"

	_ "github.com/overcast-ccm/overcast/internal/clouds" // every cloud's provider
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/version"
)

// Defaults that differ from the framework's (the chart's values say the same).
// A Node joining costs the node controller's client two writes (its spec: the
// taint, providerID and labels; then its status: the addresses), measured by
// `bench -count-requests`. The framework's client-side limit of 20 a second
// (burst 30) holds 5,000 Nodes joining at once for over 8 minutes, 100 a second
// for 111 s; at 200 they take 56 s. Each controller has a client, and a limit,
// of its own; the apiserver keeps itself from overload with API Priority and
// Fairness whatever a client asks. Service workers never wait on a load
// balancer being provisioned (they requeue), so 20 of them keep 100 new
// Services moving at once.
const (
	DefaultKubeAPIQPS             = 200
	DefaultKubeAPIBurst           = 400
	DefaultConcurrentServiceSyncs = 20
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

	init := &cloudInit{stderr: stderr}
	svc := &serviceOptions{}
	cmd := app.NewCloudControllerManagerCommand(opts, init.get, controllers(svc),
		names.CCMControllerAliases(), svc.flags(), stop)
	cmd.Use = "overcast-ccm"
	cmd.Long = "overcast-ccm is a Kubernetes cloud-controller-manager. Its clouds (--cloud-provider): " + strings.Join(Providers(), ", ") + "."
	// Check the cloud config before anything else (kubeconfig, ports), so that a bad
	// file is reported in full even where the cluster cannot be reached.
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if printVersion(cmd, os.Stdout) {
			return &Exit{Code: 0}
		}
		if g := svc.guard; g.Share < 0 || g.Min < 0 || g.Window < 0 {
			fmt.Fprintf(stderr, "overcast-ccm: --node-deletion-guard-share, -min and -window must not be negative\n")
			return &Exit{Code: ExitCodeConfig, Err: errors.New("invalid node deletion guard")}
		}
		provider.SetDeletionGuard(svc.guard)
		cc := opts.KubeCloudShared.CloudProvider
		if err := init.build(cc.Name, cc.CloudConfigFile); err != nil {
			return err
		}
		if !init.cloud.HasClusterID() && !opts.KubeCloudShared.AllowUntaggedCloud {
			fmt.Fprintf(stderr, "overcast-ccm: cloud provider %q has no cluster ID; set one or pass --allow-untagged-cloud\n", cc.Name)
			return &Exit{Code: ExitCodeConfig, Err: errors.New("the cloud has no cluster ID")}
		}
		return nil
	}
	// Stopped (SIGTERM in cmd/overcast-ccm): the Lease goes to another
	// replica at once, not after the lease duration.
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := run(cmd, args); err != nil {
			return err
		}
		init.releaseLease()
		return nil
	}
	cmd.SilenceUsage = true
	// Errors are written where they happen (every problem of a config, the
	// framework's own); main maps an Exit to its code.
	cmd.SilenceErrors = true
	version.RegisterMetric()
	return cmd, nil
}

// printVersion answers --version (and --version=raw) with Overcast's version, the
// same string overcast_build_info reports, before the cloud config is read: the
// framework's own answer would name the Kubernetes libraries' version instead.
func printVersion(cmd *cobra.Command, stdout io.Writer) bool {
	f := cmd.Flags().Lookup("version")
	if f == nil || !f.Changed || f.Value.String() == "false" {
		return false
	}
	i := version.Get()
	if f.Value.String() == "raw" {
		fmt.Fprintf(stdout, "%#v\n", i)
	} else {
		fmt.Fprintf(stdout, "overcast-ccm %s\n", i)
	}
	return true
}

// ExitCodeConfig is the exit code of an invalid cloud configuration.
const ExitCodeConfig = 2

// Exit is an error that ends the command with Code, its message already
// written (Code 0: --version answered).
type Exit struct {
	Code int
	Err  error
}

func (e *Exit) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Exit) Unwrap() error { return e.Err }

// cloudInit builds the cloud once, in PreRunE, and hands it to the framework.
type cloudInit struct {
	stderr io.Writer
	name   string
	cloud  cloudprovider.Interface
	// What releasing the leader Lease needs, from the completed config.
	client               kubernetes.Interface
	leaseNS, leaseName   string
	leaderElectionActive bool
}

func (i *cloudInit) releaseLease() {
	if i.leaderElectionActive {
		releaseLease(context.Background(), i.client, i.leaseNS, i.leaseName)
	}
}

// build makes the cloud; an invalid configuration is written to stderr, every
// problem on a line, and returned as an Exit with ExitCodeConfig.
func (i *cloudInit) build(name, configFile string) error {
	cloud, err := provider.Init(name, configFile)
	if err != nil {
		fmt.Fprintf(i.stderr, "overcast-ccm: invalid --cloud-provider=%s --cloud-config=%s:\n%v\n", name, configFile, err)
		return &Exit{Code: ExitCodeConfig, Err: err}
	}
	i.name, i.cloud = name, cloud
	return nil
}

// get hands the framework the cloud PreRunE built (from the same flags).
func (i *cloudInit) get(c *config.CompletedConfig) cloudprovider.Interface {
	if cc := c.ComponentConfig.KubeCloudShared.CloudProvider; i.name != cc.Name {
		// Not reached: PreRunE built it from the same flags.
		klog.ErrorS(nil, "The cloud provider changed after the flags were read; keeping the first", "first", i.name, "now", cc.Name)
	}
	le := c.ComponentConfig.Generic.LeaderElection
	i.client, i.leaseNS, i.leaseName, i.leaderElectionActive = c.Client, le.ResourceNamespace, le.ResourceName, le.LeaderElect
	if h, ok := i.cloud.(interface{ SetHome(string) }); ok {
		h.SetHome(le.ResourceNamespace) // its members ledger's
	}
	// Called before any informer starts.
	if err := trimCaches(c.SharedInformers); err != nil {
		klog.ErrorS(err, "Cannot trim the Node and Service caches; they keep whole objects")
	}
	return i.cloud
}

// Providers lists the cloud providers this binary serves, sorted. Each
// registers itself when its package is imported (internal/clouds).
func Providers() []string { return provider.Names() }
