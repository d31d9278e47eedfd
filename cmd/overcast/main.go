// Command overcast is the operator's CLI. `overcast dev` runs a whole cluster on
// this machine: etcd, kube-apiserver, overcast-ccm on the local cloud (or on a
// cloud's emulator), three simulated nodes and a demo LoadBalancer Service (this
// is `make run`). `overcast emulate <cloud>` runs a cloud's emulator alone.
// `overcast doctor` checks a cluster and a cloud for what overcast-ccm needs;
// `overcast sweep` lists (and removes) what gone Services left in the cloud;
// `overcast explain` says what the cloud holds for a Service or a Node.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/overcast-ccm/overcast/internal/kit"
)

// usage is the CLI's help; the clouds it names come from the kits.
func usage() string {
	return `usage: overcast <command> [flags]

commands:
  dev      run etcd + kube-apiserver + overcast-ccm + 3 simulated nodes and a demo
           LoadBalancer Service on this machine, until Ctrl-C
           (--cloud local, the default, or on an emulator: --cloud ` + strings.Join(without(kit.DevNames(), "local"), "|") + `)
  emulate  ` + strings.Join(kit.EmulatedNames(), "|") + `: run a cloud's emulator and print a cloud config
           for it
  doctor   check that overcast-ccm can work here: cloud config, cloud API and
           credentials, RBAC, kubelets, Nodes to instances, leader Lease
           (overcast doctor --cloud-provider=openstack --cloud-config=cloud.conf
           [--kubeconfig FILE]; exit status 1 when a check fails)
  sweep    list the cloud objects this cluster made for Services that are gone;
           --delete removes them (never another cluster's, nor what no
           overcast-ccm made): overcast sweep --cloud-provider=openstack
           --cloud-config=cloud.conf [--kubeconfig FILE] [--delete]
  explain  what the cloud holds for a Service or a Node, read-only: the load
           balancer, its listeners, pools, members, addresses and security
           rules, what differs from what the Service asks, its last outcome;
           a Node's machine and what the CCM would set: overcast explain
           service NAMESPACE/NAME (or node NAME) --cloud-provider=openstack
           --cloud-config=cloud.conf [--kubeconfig FILE] [-o json]; exit
           status 1 when the cloud holds nothing for it
  clouds   the clouds this build knows, one a line (--dev: those make run
           runs on; --emulated: those with an emulator)
`
}

func without(names []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == drop })
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage())
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "dev":
		err = runDev(os.Args[2:])
	case "emulate":
		err = runEmulate(os.Args[2:])
	case "doctor":
		err = runDoctor(os.Args[2:], os.Stdout)
		if errors.Is(err, errChecksFailed) {
			os.Exit(1)
		}
	case "clouds":
		err = runClouds(os.Args[2:], os.Stdout)
	case "sweep":
		err = runSweep(os.Args[2:], os.Stdout)
		if errors.Is(err, errLeftoversRemain) {
			os.Exit(1)
		}
	case "explain":
		err = runExplain(os.Args[2:], os.Stdout)
		if code := explainExit(err); code != 1 || errors.Is(err, errNothing) {
			if code == 2 {
				fmt.Fprintf(os.Stderr, "overcast explain: %v\n", err)
			}
			os.Exit(code)
		}
	case "-h", "--help", "help":
		fmt.Print(usage())
		return
	default:
		fmt.Fprintf(os.Stderr, "overcast: unknown command %q\n\n%s", os.Args[1], usage())
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // the flag set printed the command's usage
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "overcast %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
