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
	cloud, cloudConfig, kubeconfig := cloudFlags(fs)
	namespace := fs.String("namespace", "kube-system", "namespace of the CCM's ServiceAccount and leader Lease")
	sa := fs.String("service-account", "overcast-ccm", "the CCM's ServiceAccount, whose RBAC is checked")
	lease := fs.String("lease", "cloud-controller-manager", "the leader Lease (--leader-elect-resource-name)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel, err := commandContext(*cloud, *cloudConfig, *timeout)
	if err != nil {
		return err
	}
	defer cancel()

	o := doctor.Options{Cloud: *cloud, CloudConfig: *cloudConfig, Namespace: *namespace, ServiceAccount: *sa, Lease: *lease}
	cfg, inCluster, err := kubeConfig(*kubeconfig)
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

// cloudFlags are the flags of a command that reads the cloud as
// overcast-ccm does, and the cluster.
func cloudFlags(fs *flag.FlagSet) (cloud, cloudConfig, kubeconfig *string) {
	cloud = fs.String("cloud-provider", "", "the cloud, as overcast-ccm's --cloud-provider ("+strings.Join(provider.Names(), ", ")+")")
	cloudConfig = fs.String("cloud-config", "", "the cloud config file, as overcast-ccm's --cloud-config")
	kubeconfig = fs.String("kubeconfig", "", "the cluster; default: in-cluster when run in a pod, else $KUBECONFIG or ~/.kube/config")
	return cloud, cloudConfig, kubeconfig
}

// commandContext checks that the cloud flags are given, sends the
// providers' logs nowhere (the command's output is its table), and is the
// command's context: until Ctrl-C, SIGTERM or timeout.
func commandContext(cloud, cloudConfig string, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	if cloud == "" || cloudConfig == "" {
		return nil, nil, errors.New("--cloud-provider and --cloud-config are required (e.g. --cloud-provider=openstack --cloud-config=/etc/overcast/cloud.conf)")
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
