package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/sweep"
)

// errLeftoversRemain makes the exit status 1 when --delete left some.
var errLeftoversRemain = errors.New("leftovers remain")

func runSweep(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	cc := cloudFlags(fs, 10*time.Minute)
	clusterName := fs.String("cluster-name", "kubernetes", "overcast-ccm's --cluster-name (it is in the load balancers' names)")
	del := fs.Bool("delete", false, "remove the removable leftovers (default: list them, change nothing)")
	ctx, cancel, err := cc.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()

	c, err := provider.Init(*cc.cloud, *cc.config)
	if err != nil {
		return fmt.Errorf("--cloud-provider=%s --cloud-config=%s: %w", *cc.cloud, *cc.config, err)
	}
	cfg, _, err := kubeConfig(*cc.kubeconfig)
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
