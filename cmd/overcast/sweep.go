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
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/sweep"
)

// errLeftoversRemain makes the exit status 1 when --delete left some.
var errLeftoversRemain = errors.New("leftovers remain")

func runSweep(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	cloud := fs.String("cloud-provider", "", "the cloud, as overcast-ccm's --cloud-provider ("+strings.Join(provider.Names(), ", ")+")")
	cloudConfig := fs.String("cloud-config", "", "the cloud config file, as overcast-ccm's --cloud-config")
	kubeconfig := fs.String("kubeconfig", "", "the cluster; default: in-cluster when run in a pod, else $KUBECONFIG or ~/.kube/config")
	clusterName := fs.String("cluster-name", "kubernetes", "overcast-ccm's --cluster-name (it is in the load balancers' names)")
	del := fs.Bool("delete", false, "remove the removable leftovers (default: list them, change nothing)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cloud == "" || *cloudConfig == "" {
		return errors.New("--cloud-provider and --cloud-config are required (e.g. --cloud-provider=openstack --cloud-config=/etc/overcast/cloud.conf)")
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	c, err := cloudprovider.InitCloudProvider(*cloud, *cloudConfig)
	if err != nil {
		return fmt.Errorf("--cloud-provider=%s --cloud-config=%s: %w", *cloud, *cloudConfig, err)
	}
	if c == nil {
		return fmt.Errorf("unknown --cloud-provider %q", *cloud)
	}
	cfg, _, err := kubeConfig(*kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "overcast-sweep"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	res, err := sweep.Run(ctx, sweep.Options{Cloud: c, Kube: kube, ClusterName: *clusterName, Delete: *del, Progress: os.Stderr})
	if err != nil {
		return err
	}
	if err := sweep.Print(stdout, res, *del); err != nil {
		return err
	}
	if *del && (len(res.Failed) > 0 || len(sweep.Removable(res.Left)) > 0) {
		return errLeftoversRemain
	}
	return nil
}
