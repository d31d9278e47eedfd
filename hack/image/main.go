// Command image builds Overcast's OCI image without a Docker engine or a base
// image from a registry (make image), unpacks one platform's root filesystem (the
// quick-start test runs the CCM from it) and pushes the image to a registry.
//
//	image build  --bin-dir DIR --platforms linux/amd64,linux/arm64 --out DIR --name REF [--version V --revision R --created RFC3339]
//	image rootfs --image DIR|TAR --platform linux/amd64 --to DIR
//	image push   --image DIR|TAR --to REGISTRY/REPO:TAG [--insecure]
//
// Why our own builder on go-containerregistry and not ko or crane: both start from
// a base image pulled from a registry (ko's default is a distroless image, crane
// append needs one to append to), and this machine reaches no image registry. The
// base here is a few files written by this program (users, CA roots from a pinned Go
// module, /tmp), so a build needs only the Go module proxy and is reproducible: the
// same commit gives the same digests.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const usage = `usage: image <command> [flags]

commands:
  build   build the OCI image index from hack/build.sh's binaries into an OCI layout and an OCI archive
  rootfs  unpack one platform's root filesystem into a directory
  push    push the image (all platforms) to a registry
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = runBuild(os.Args[2:])
	case "rootfs":
		err = runRootfs(os.Args[2:])
	case "push":
		err = runPush(os.Args[2:])
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	binDir := fs.String("bin-dir", "tmp/image/bin", "binaries per platform: DIR/<os>_<arch>/{overcast-ccm,overcast}")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	out := fs.String("out", "tmp/image", "writes OUT/oci (OCI layout) and OUT/overcast-ccm.oci.tar (OCI archive)")
	ref := fs.String("name", "", "the image reference recorded in the layout, e.g. ghcr.io/overcast-ccm/overcast-ccm:v0.1.0")
	version := fs.String("version", "", "org.opencontainers.image.version (git describe)")
	revision := fs.String("revision", "", "org.opencontainers.image.revision (the full commit)")
	created := fs.String("created", "", "RFC 3339 build time; the commit's time keeps builds reproducible")
	source := fs.String("source", "https://github.com/overcast-ccm/overcast", "org.opencontainers.image.source")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var problems []error
	if *version == "" {
		problems = append(problems, errors.New("--version is required"))
	}
	if *ref == "" {
		problems = append(problems, errors.New("--name is required"))
	}
	when := time.Unix(0, 0).UTC()
	if *created != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			problems = append(problems, fmt.Errorf("--created: %w", err))
		}
		when = t
	}
	var plats []Platform
	for _, p := range strings.Split(*platforms, ",") {
		goos, arch, err := ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			problems = append(problems, err)
			continue
		}
		plats = append(plats, Platform{OS: goos, Arch: arch, BinDir: filepath.Join(*binDir, goos+"_"+arch)})
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	idx, err := Build(Meta{Version: *version, Revision: *revision, Created: when, Source: *source}, plats)
	if err != nil {
		return err
	}
	layoutDir := filepath.Join(*out, "oci")
	archive := filepath.Join(*out, "overcast-ccm.oci.tar")
	if err := WriteLayout(layoutDir, idx, *ref); err != nil {
		return err
	}
	if err := TarDir(layoutDir, archive); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (%s)\n  OCI layout  %s\n  OCI archive %s\n", *ref, d, *platforms, layoutDir, archive)
	return nil
}

func runRootfs(args []string) error {
	fs := flag.NewFlagSet("rootfs", flag.ContinueOnError)
	image := fs.String("image", "tmp/image/oci", "an OCI layout directory or archive")
	platform := fs.String("platform", "linux/amd64", "which image of the index")
	to := fs.String("to", "", "the directory to unpack into (created; must be empty)")
	config := fs.String("config", "", "also write the image's config (entrypoint, user, env) here, as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" {
		return errors.New("--to is required")
	}
	idx, cleanup, err := OpenIndex(*image)
	if err != nil {
		return err
	}
	defer cleanup()
	goos, arch, err := ParsePlatform(*platform)
	if err != nil {
		return err
	}
	img, err := PlatformImage(idx, goos, arch)
	if err != nil {
		return err
	}
	if *config != "" {
		raw, err := img.RawConfigFile()
		if err != nil {
			return err
		}
		if err := os.WriteFile(*config, raw, 0o644); err != nil {
			return err
		}
	}
	return Unpack(img, *to)
}

func runPush(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	image := fs.String("image", "tmp/image/oci", "an OCI layout directory or archive")
	to := fs.String("to", "", "REGISTRY/REPO:TAG; credentials from ~/.docker/config.json (docker login, crane auth login)")
	insecure := fs.Bool("insecure", false, "plain HTTP (a local registry)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" {
		return errors.New("--to is required")
	}
	idx, cleanup, err := OpenIndex(*image)
	if err != nil {
		return err
	}
	defer cleanup()
	d, err := Push(idx, *to, *insecure)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", *to, d)
	return nil
}
