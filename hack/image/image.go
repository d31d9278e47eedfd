package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's fixed facts. The Dockerfile says the same (a test compares them).
const (
	// User is the numeric non-root user and group the image runs as, the one
	// distroless calls "nonroot".
	User = "65532:65532"
	// BinDir is where the binaries live; Entrypoint runs the CCM.
	BinDir     = "/usr/local/bin"
	Entrypoint = BinDir + "/overcast-ccm"
	// CACertFile is the PEM bundle Go's crypto/x509 reads on Linux.
	CACertFile = "/etc/ssl/certs/ca-certificates.crt"
)

// Binaries are the programs an image carries, in BinDir.
var Binaries = []string{"overcast-ccm", "overcast"}

// Meta is what the labels and annotations say about the build.
type Meta struct {
	Version  string    // git describe
	Revision string    // full commit
	Created  time.Time // the commit's time: the same tree gives the same image
	Source   string    // the repository's URL
}

// Labels are the org.opencontainers.image.* labels of each image's config (and
// the annotations of the index).
func (m Meta) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":         "overcast-ccm",
		"org.opencontainers.image.description":   "Kubernetes cloud-controller-manager for OpenStack, CloudStack, OCI and the local cloud",
		"org.opencontainers.image.version":       m.Version,
		"org.opencontainers.image.revision":      m.Revision,
		"org.opencontainers.image.created":       m.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":        m.Source,
		"org.opencontainers.image.documentation": m.Source + "#readme",
	}
	for k, v := range l {
		if v == "" || v == "#readme" {
			delete(l, k)
		}
	}
	return l
}

// file is one entry of a layer.
type file struct {
	name string // absolute path in the image
	mode int64  // permission bits
	uid  int
	body []byte
	dir  bool
}

// baseFiles is the distroless-style base: users, name service, CA roots, a
// writable /tmp and the nonroot user's home. No shell, no package manager.
func baseFiles() ([]file, error) {
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	return []file{
		{name: "/etc", mode: 0o755, dir: true},
		{name: "/etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "/etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		// Go's resolver honours this order; without the file it guesses.
		{name: "/etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "/etc/ssl", mode: 0o755, dir: true},
		{name: "/etc/ssl/certs", mode: 0o755, dir: true},
		{name: CACertFile, mode: 0o644, body: certs},
		{name: "/home", mode: 0o755, dir: true},
		{name: "/home/nonroot", mode: 0o700, uid: 65532, dir: true},
		{name: "/root", mode: 0o700, dir: true},
		{name: "/tmp", mode: 0o1777, dir: true},
		{name: "/usr", mode: 0o755, dir: true},
		{name: "/usr/local", mode: 0o755, dir: true},
		{name: BinDir, mode: 0o755, dir: true},
	}, nil
}

// caBundle is Mozilla's root store as pinned by golang.org/x/crypto/x509roots/fallback
// (a version in go.sum), so the image's roots depend on this repository alone, not on
// the machine that builds it. Roots with a distrust-after constraint are left out: a
// PEM file cannot carry the constraint, and trusting them without it is wider than
// Mozilla intends.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n < 50 {
		return nil, fmt.Errorf("only %d CA roots in golang.org/x/crypto/x509roots/fallback", n)
	}
	return b.Bytes(), nil
}

// layer makes a deterministic, gzip-compressed OCI layer of files: sorted, owned by
// root (or the given uid), every time the build's time.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    strings.TrimPrefix(f.name, "/"),
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.uid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Platform is one os/arch of the index, with the directory of its binaries.
type Platform struct {
	OS, Arch string
	BinDir   string // holds Binaries, built for OS/Arch by hack/build.sh
}

// ParsePlatform parses "linux/arm64".
func ParsePlatform(s string) (os, arch string, err error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return "", "", fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", s)
	}
	return os, arch, nil
}

// Build makes the image index: one image per platform, each a base layer and a
// layer of binaries, configured to run Entrypoint as User.
func Build(meta Meta, platforms []Platform) (v1.ImageIndex, error) {
	if len(platforms) == 0 {
		return nil, errors.New("no platforms")
	}
	base, err := baseFiles()
	if err != nil {
		return nil, err
	}
	baseLayer, err := layer(base, meta.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := platformImage(meta, p, baseLayer)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", p.OS, p.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return mutate.Annotations(idx, meta.Labels()).(v1.ImageIndex), nil
}

func platformImage(meta Meta, p Platform, base v1.Layer) (v1.Image, error) {
	var bins []file
	for _, name := range Binaries {
		path := filepath.Join(p.BinDir, name)
		body, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w (build it with hack/build.sh %s %s/%s)", err, p.BinDir, p.OS, p.Arch)
		}
		bins = append(bins, file{name: BinDir + "/" + name, mode: 0o755, body: body})
	}
	binLayer, err := layer(bins, meta.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: meta.Created.UTC()}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "overcast make image: base (users, CA roots, /tmp)"}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "overcast make image: " + strings.Join(Binaries, ", ")}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = created
	cf.Author = ""
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Entrypoint},
		Env:        []string{"PATH=" + BinDir, "SSL_CERT_FILE=" + CACertFile},
		WorkingDir: "/",
		Labels:     meta.Labels(),
	}
	return mutate.ConfigFile(img, cf)
}
