package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
	"github.com/overcast-ccm/overcast/internal/explain"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// usageError is a command line that cannot be run as written: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// errNothing makes the exit status 1 after the explanation is printed: the
// cloud holds nothing for the Service or the Node.
var errNothing = errors.New("the cloud holds nothing for it")

const explainUsage = `usage: overcast explain service NAMESPACE/NAME [flags]
       overcast explain node NAME [flags]
(flags: --cloud-provider --cloud-config [--kubeconfig] [--cluster-name] [-o text|json])`

// explainRequest is what `overcast explain` is asked.
type explainRequest struct {
	what, namespace, name string
	json                  bool
	clusterName, home     string
	guard                 deletionguard.Options
}

// runExplain says what the cloud holds for a Service or a Node, read-only.
func runExplain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cc := cloudFlags(fs, time.Minute)
	req, err := parseExplain(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel, err := cc.parse(fs, nil)
	if err != nil {
		return usageError{err.Error()}
	}
	defer cancel()
	if !slices.Contains(provider.Names(), *cc.cloud) {
		return usageError{fmt.Sprintf("unknown --cloud-provider %q (one of %s)", *cc.cloud, strings.Join(provider.Names(), ", "))}
	}
	cloud, err := provider.Init(*cc.cloud, *cc.config)
	if err != nil {
		return fmt.Errorf("--cloud-provider=%s --cloud-config=%s: %w", *cc.cloud, *cc.config, err)
	}
	cfg, _, err := kubeConfig(*cc.kubeconfig)
	if err != nil {
		return fmt.Errorf("the cluster: %w (pass --kubeconfig FILE, or run inside the CCM's pod)", err)
	}
	cfg.UserAgent = "overcast-explain"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return explainWith(ctx, stdout, req, cloud, kube)
}

// parseExplain reads `explain service|node TARGET` and its flags, which may
// come before or after the target.
func parseExplain(fs *flag.FlagSet, args []string) (explainRequest, error) {
	req := explainRequest{guard: deletionguard.Default}
	output := fs.String("o", "text", "output: text, or json")
	fs.StringVar(&req.clusterName, "cluster-name", "kubernetes", "overcast-ccm's --cluster-name (OpenStack names load balancers with it)")
	fs.StringVar(&req.home, "leader-elect-resource-namespace", "kube-system", "overcast-ccm's --leader-elect-resource-namespace (its members ledger is there)")
	fs.Float64Var(&req.guard.Share, "node-deletion-guard-share", deletionguard.Default.Share, "overcast-ccm's --node-deletion-guard-share")
	fs.IntVar(&req.guard.Min, "node-deletion-guard-min", deletionguard.Default.Min, "overcast-ccm's --node-deletion-guard-min")
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(os.Stderr)
				fmt.Fprintln(os.Stderr, explainUsage)
				fs.PrintDefaults()
				return req, err
			}
			return req, usageError{err.Error() + "\n" + explainUsage}
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	switch *output {
	case "text":
	case "json":
		req.json = true
	default:
		return req, usageError{fmt.Sprintf("-o %s: give text or json", *output)}
	}
	if len(pos) != 2 {
		return req, usageError{"give what to explain and its name\n" + explainUsage}
	}
	req.what, req.name = pos[0], pos[1]
	switch req.what {
	case "service", "svc", "services":
		ns, name, ok := strings.Cut(req.name, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return req, usageError{fmt.Sprintf("service %q: give it as NAMESPACE/NAME, e.g. default/web", req.name)}
		}
		req.what, req.namespace, req.name = "service", ns, name
	case "node", "nodes", "no":
		req.what = "node"
	default:
		return req, usageError{fmt.Sprintf("cannot explain %q: service or node\n%s", req.what, explainUsage)}
	}
	return req, nil
}

// explainWith explains the request's Service or Node on cloud, writing
// text or JSON to w; errNothing when the cloud holds nothing for it.
func explainWith(ctx context.Context, w io.Writer, req explainRequest, cloud cloudprovider.Interface, kube kubernetes.Interface) error {
	provider.SetDeletionGuard(req.guard)
	o := explain.Options{Cloud: cloud, Kube: kube, ClusterName: req.clusterName, Home: req.home}
	var found bool
	var err error
	if req.what == "service" {
		var e provider.ServiceExplanation
		if e, err = explain.Service(ctx, o, req.namespace, req.name); err != nil {
			return err
		}
		found = e.Found
		err = output(w, req.json, e, func() error { return explain.PrintService(w, e, time.Now()) })
	} else {
		var e provider.NodeExplanation
		if e, err = explain.Node(ctx, o, req.name); err != nil {
			return err
		}
		found = e.Found
		err = output(w, req.json, e, func() error { return explain.PrintNode(w, e, time.Now()) })
	}
	if err == nil && !found {
		return errNothing
	}
	return err
}

func output(w io.Writer, asJSON bool, v any, text func() error) error {
	if asJSON {
		return explain.JSON(w, v)
	}
	return text()
}

// explainExit is the exit status of an explanation: 0 found, 1 nothing in
// the cloud or not in the cluster or a failure, 2 a command line that
// cannot be run.
func explainExit(err error) int {
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		return 2
	}
	return 1
}
