package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	_ "github.com/overcast-ccm/overcast/internal/clouds" // every cloud's provider
	"github.com/overcast-ccm/overcast/internal/doctor"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// errChecksFailed makes the exit status 1 after the table is printed.
var errChecksFailed = errors.New("some checks failed")

func runDoctor(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	cc := cloudFlags(fs, time.Minute)
	namespace := fs.String("namespace", "kube-system", "namespace of the CCM's ServiceAccount and leader Lease")
	sa := fs.String("service-account", "overcast-ccm", "the CCM's ServiceAccount, whose RBAC is checked")
	lease := fs.String("lease", "cloud-controller-manager", "the leader Lease (--leader-elect-resource-name)")
	ctx, cancel, err := cc.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()

	o := doctor.Options{Cloud: *cc.cloud, CloudConfig: *cc.config, Namespace: *namespace, ServiceAccount: *sa, Lease: *lease}
	cfg, inCluster, err := kubeConfig(*cc.kubeconfig)
	var results []doctor.Result
	if err != nil {
		results = append(results, doctor.Result{Check: "kubernetes", Status: doctor.Fail, Detail: err.Error(),
			Fix: "pass --kubeconfig, or run doctor inside the CCM's pod"})
	} else {
		cfg.UserAgent = "overcast-doctor"
		if o.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
		o.InCluster = inCluster
	}
	results = append(doctor.Run(ctx, o), results...)
	if err := doctor.Print(stdout, results); err != nil {
		return err
	}
	if doctor.Failed(results) {
		return errChecksFailed
	}
	return nil
}

// cloudCommand is the flags of a command that reads the cloud as
// overcast-ccm does, and the cluster, for so long.
type cloudCommand struct {
	cloud, config, kubeconfig *string
	timeout                   *time.Duration
}

// cloudFlags adds a cloud command's flags to fs (timeout: --timeout's
// default).
func cloudFlags(fs *flag.FlagSet, timeout time.Duration) cloudCommand {
	return cloudCommand{
		cloud:      fs.String("cloud-provider", "", "the cloud, as overcast-ccm's --cloud-provider ("+strings.Join(provider.Names(), ", ")+")"),
		config:     fs.String("cloud-config", "", "the cloud config file, as overcast-ccm's --cloud-config"),
		kubeconfig: fs.String("kubeconfig", "", "the cluster; default: in-cluster when run in a pod, else $KUBECONFIG or ~/.kube/config"),
		timeout:    fs.Duration("timeout", timeout, "give up after this long"),
	}
}

// parse parses args, checks that the cloud flags are given, sends the
// providers' logs nowhere (the command's output is its table), and is the
// command's context: until Ctrl-C, SIGTERM or --timeout.
func (c cloudCommand) parse(fs *flag.FlagSet, args []string) (context.Context, context.CancelFunc, error) {
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if *c.cloud == "" || *c.config == "" {
		return nil, nil, errors.New("--cloud-provider and --cloud-config are required (e.g. --cloud-provider=openstack --cloud-config=/etc/overcast/cloud.conf)")
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, *c.timeout)
	return ctx, func() { cancel(); stop() }, nil
}

// kubeConfig is --kubeconfig, else the pod's own credentials, else the usual
// kubeconfig of kubectl.
func kubeConfig(path string) (*rest.Config, bool, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		return cfg, false, err
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, true, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, false, fmt.Errorf("no cluster to check: %w", err)
	}
	return cfg, false, nil
}
