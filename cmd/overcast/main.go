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

// commands are the CLI's commands, by name.
var commands = map[string]func(args []string) error{
	"dev":     runDev,
	"emulate": runEmulate,
	"doctor":  func(args []string) error { return runDoctor(args, os.Stdout) },
	"clouds":  func(args []string) error { return runClouds(args, os.Stdout) },
	"sweep":   func(args []string) error { return runSweep(args, os.Stdout) },
	"explain": func(args []string) error { return runExplain(args, os.Stdout) },
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage())
		os.Exit(2)
	}
	name := os.Args[1]
	run, ok := commands[name]
	switch {
	case name == "-h" || name == "--help" || name == "help":
		fmt.Print(usage())
		return
	case !ok:
		fmt.Fprintf(os.Stderr, "overcast: unknown command %q\n\n%s", name, usage())
		os.Exit(2)
	}
	err := run(os.Args[2:])
	if name == "explain" {
		if code := explainExit(err); code != 1 || errors.Is(err, errNothing) {
			if code == 2 {
				fmt.Fprintf(os.Stderr, "overcast explain: %v\n", err)
			}
			os.Exit(code)
		}
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return // the flag set printed the command's usage
	case errors.Is(err, errChecksFailed), errors.Is(err, errLeftoversRemain):
		os.Exit(1) // the command said what failed
	case err != nil:
		fmt.Fprintf(os.Stderr, "overcast %s: %v\n", name, err)
		os.Exit(1)
	}
}
