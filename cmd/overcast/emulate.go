package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/kit"
)

// runEmulate runs a cloud's emulator until Ctrl-C and prints a cloud config that
// points at it.
func runEmulate(args []string) error {
	clouds := strings.Join(kit.EmulatedNames(), "|")
	usage := "usage: overcast emulate " + clouds + " [--listen 127.0.0.1:PORT] [--latency 50ms] [--provisioning-delay 2s] [--servers N] [--cloud-conf FILE] [--serve-traffic]"
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New(usage)
	}
	k, err := kit.Emulated(args[0])
	if err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	fs := flag.NewFlagSet("emulate "+k.Name, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on (loopback only)")
	latency := fs.Duration("latency", 0, "added to every API call")
	provisioning := fs.Duration("provisioning-delay", 2*time.Second, "how long load balancers (and asynchronous jobs) take to finish (amphora-like ~60s, OVN-like ~2s)")
	nServers := fs.Int("servers", 0, "machines to create at start (named server-0001, ...)")
	confPath := fs.String("cloud-conf", "", "also write the cloud config to this file")
	serve := fs.Bool("serve-traffic", false, "load balancers carry traffic: machine and internal addresses from 127.0.80.0/24 and public ones from 127.0.81.0/24 forward to their members")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := core.LoopbackOnly(*listen); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	opts := kit.EmulatorOptions{Listen: *listen, Latency: *latency, Provisioning: *provisioning}
	if *serve {
		opts.ServeTraffic, opts.MachineCIDR, opts.PublicCIDR = true, "127.0.80.0/24", "127.0.81.0/24"
	}
	e, err := k.Emulate(opts)
	if err != nil {
		return err
	}
	defer e.Close()
	for i := range *nServers {
		e.AddMachine(fmt.Sprintf("server-%04d", i+1))
	}
	conf := e.CloudConfig()
	if *confPath != "" {
		if err := os.MkdirAll(filepath.Dir(*confPath), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*confPath, []byte(conf), 0o600); err != nil {
			return err
		}
	}
	configFor := "overcast-ccm --cloud-provider=" + k.Name
	if !cloudprovider.IsCloudProvider(k.Name) {
		configFor = "the cloud's own CCM (overcast-ccm has no " + k.Name + " provider yet)"
	}
	fmt.Printf(`%s on %s
Control: GET %[2]s/_emulator/calls, POST %[2]s/_emulator/faults, DELETE %[2]s/_emulator/faults,
         POST %[2]s/_emulator/latency?d=50ms, POST %[2]s/_emulator/provisioning-delay?d=2s

A cloud config for %s:
-----
%s-----
Ctrl-C stops it.
`, k.Emulator, e.URL(), configFor, conf)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
