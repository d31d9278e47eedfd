package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/overcast-ccm/overcast/internal/kit"
)

// runClouds prints the clouds of the registry, one a line, for scripts (CI's
// smoke runs of make run loop over --dev): every cloud, those with a dev
// cluster, or those with an emulator.
func runClouds(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("clouds", flag.ContinueOnError)
	dev := fs.Bool("dev", false, "only the clouds `overcast dev` (make run) runs on")
	emulated := fs.Bool("emulated", false, "only the clouds with an emulator")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	names := kit.Names()
	switch {
	case *dev && *emulated:
		return fmt.Errorf("--dev and --emulated: give one")
	case *dev:
		names = kit.DevNames()
	case *emulated:
		names = kit.EmulatedNames()
	}
	for _, n := range names {
		fmt.Fprintln(out, n)
	}
	return nil
}
