package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
)

// runEmulate runs a cloud's emulator until Ctrl-C and prints a cloud config that
// points at it.
func runEmulate(args []string) error {
	if len(args) == 0 || args[0] != "openstack" {
		return errors.New("usage: overcast emulate openstack [--listen 127.0.0.1:PORT] [--latency 50ms] [--provisioning-delay 2s] [--servers N] [--cloud-conf FILE] [--serve-traffic]")
	}
	fs := flag.NewFlagSet("emulate openstack", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on (loopback only)")
	latency := fs.Duration("latency", 0, "added to every API call")
	provisioning := fs.Duration("provisioning-delay", 2*time.Second, "how long Octavia objects stay PENDING_* (amphora-like ~60s, OVN-like ~2s)")
	nServers := fs.Int("servers", 0, "servers to create at start (named server-0001, ...)")
	confPath := fs.String("cloud-conf", "", "also write the cloud.conf to this file")
	serve := fs.Bool("serve-traffic", false, "load balancers carry traffic: VIPs from 127.0.80.0/24 and floating IPs from 127.0.81.0/24 forward to their members")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := loopbackOnly(*listen); err != nil {
		return err
	}
	opts := emulator.Options{Latency: *latency, ProvisioningDelay: *provisioning}
	if *serve {
		opts.ServeTraffic, opts.PrivateCIDR, opts.PublicCIDR = true, "127.0.80.0/24", "127.0.81.0/24"
	}
	e := emulator.New(opts)
	if err := e.Start(*listen); err != nil {
		return err
	}
	defer e.Close()
	for i := range *nServers {
		e.AddServer(emulator.ServerSpec{Name: fmt.Sprintf("server-%04d", i+1)})
	}
	conf := e.CloudConf()
	if *confPath != "" {
		if err := os.MkdirAll(filepath.Dir(*confPath), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*confPath, []byte(conf), 0o600); err != nil {
			return err
		}
	}
	fmt.Printf(`OpenStack emulator (Keystone, Nova, Neutron, Octavia) on %s
Control: GET %[1]s/_emulator/calls, POST %[1]s/_emulator/faults, DELETE %[1]s/_emulator/faults,
         POST %[1]s/_emulator/latency?d=50ms, POST %[1]s/_emulator/provisioning-delay?d=2s

A cloud.conf for overcast-ccm --cloud-provider=openstack:
-----
%s-----
Ctrl-C stops it.
`, e.URL(), conf)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// loopbackOnly refuses to serve on anything but a loopback address.
func loopbackOnly(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: want IP:PORT on loopback: %w", addr, err)
	}
	if !ap.Addr().IsLoopback() {
		return fmt.Errorf("--listen %s: only loopback addresses (127.0.0.0/8, ::1)", addr)
	}
	return nil
}
