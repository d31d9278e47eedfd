package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBinaries writes stand-ins for the binaries of each platform.
func fakeBinaries(t *testing.T, platforms ...string) []Platform {
	t.Helper()
	dir := t.TempDir()
	var out []Platform
	for _, p := range platforms {
		goos, arch, err := ParsePlatform(p)
		require.NoError(t, err)
		d := filepath.Join(dir, goos+"_"+arch)
		require.NoError(t, os.MkdirAll(d, 0o755))
		for _, b := range Binaries {
			require.NoError(t, os.WriteFile(filepath.Join(d, b), []byte(b+" for "+p), 0o755))
		}
		out = append(out, Platform{OS: goos, Arch: arch, BinDir: d})
	}
	return out
}

var testMeta = Meta{Version: "v1.2.3-4-gabcdef0", Revision: "abcdef0123456789", Created: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Source: "https://example.org/overcast"}

func TestTheSameInputsGiveTheSameImage(t *testing.T) {
	plats := fakeBinaries(t, "linux/amd64", "linux/arm64")
	a, err := Build(testMeta, plats)
	require.NoError(t, err)
	b, err := Build(testMeta, plats)
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db, "a rebuild of the same binaries at the same commit must not change the digest")

	other := testMeta
	other.Version = "v1.2.4"
	c, err := Build(other, plats)
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	assert.NotEqual(t, da, dc)
}

func TestAMissingBinarySaysHowToBuildIt(t *testing.T) {
	plats := fakeBinaries(t, "linux/amd64")
	require.NoError(t, os.Remove(filepath.Join(plats[0].BinDir, "overcast")))
	_, err := Build(testMeta, plats)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hack/build.sh")
	assert.Contains(t, err.Error(), "linux/amd64")
}

func TestLayoutArchiveAndPushRoundTrip(t *testing.T) {
	idx, err := Build(testMeta, fakeBinaries(t, "linux/amd64", "linux/arm64"))
	require.NoError(t, err)
	out := t.TempDir()
	layoutDir, archive := filepath.Join(out, "oci"), filepath.Join(out, "img.oci.tar")
	require.NoError(t, WriteLayout(layoutDir, idx, "registry.example/overcast-ccm:v1.2.3"))
	require.NoError(t, TarDir(layoutDir, archive))

	back, cleanup, err := OpenIndex(archive)
	require.NoError(t, err)
	defer cleanup()
	want, err := idx.Digest()
	require.NoError(t, err)
	got, err := back.Digest()
	require.NoError(t, err)
	require.Equal(t, want, got, "the archive holds the index that was built")

	// A registry on loopback (go-containerregistry's in-memory one, which follows
	// the OCI distribution API), reached over HTTP as a real registry would be.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/overcast/overcast-ccm:v1.2.3"
	pushed, err := Push(back, ref, true)
	require.NoError(t, err)
	assert.Equal(t, want, pushed)

	r, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	remoteIdx, err := remote.Index(r)
	require.NoError(t, err)
	rd, err := remoteIdx.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, rd, "the registry serves the same index digest")
	img, err := PlatformImage(remoteIdx, "linux", "arm64")
	require.NoError(t, err)
	files := flatten(t, img)
	assert.Equal(t, "overcast-ccm for linux/arm64", string(files["/usr/local/bin/overcast-ccm"].body))
}

func TestUnpackKeepsEntriesInsideTheTarget(t *testing.T) {
	for _, name := range []string{"../escape", "/abs/../../escape", "a/../../escape"} {
		p, err := within("/root/fs", name)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(p, "/root/fs/"), "%q unpacks to %q", name, p)
	}
}

// TestBuiltImage checks the image `make image` built (OVERCAST_IMAGE, the OCI
// archive): its index, config, file system, and that the binary of this machine's
// platform runs. make test-image sets OVERCAST_IMAGE.
func TestBuiltImage(t *testing.T) {
	archive := os.Getenv("OVERCAST_IMAGE")
	if archive == "" {
		t.Skip("OVERCAST_IMAGE is not set: run `make test-image`, which builds the image first")
	}
	idx, cleanup, err := OpenIndex(archive)
	require.NoError(t, err)
	defer cleanup()

	im, err := idx.IndexManifest()
	require.NoError(t, err)
	assert.Equal(t, types.OCIImageIndex, im.MediaType)
	var plats []string
	for _, d := range im.Manifests {
		plats = append(plats, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	assert.ElementsMatch(t, []string{"linux/amd64", "linux/arm64"}, plats, "one image index for both platforms")
	version := im.Annotations["org.opencontainers.image.version"]
	require.NotEmpty(t, version, "the index is annotated with the version")

	for _, d := range im.Manifests {
		arch := d.Platform.Architecture
		t.Run(arch, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			require.NoError(t, err)
			cf, err := img.ConfigFile()
			require.NoError(t, err)
			checkTheImageConfig(t, cf, arch, version)

			files := flatten(t, img)
			checkTheFileSystem(t, files)
			checkTheBinaries(t, files, arch)
			if arch != runtime.GOARCH {
				return
			}
			runTheBinaries(t, files, version, cf.Config.Labels["org.opencontainers.image.revision"])
		})
	}
}

// checkTheImageConfig checks an image's config: its platform, a numeric
// non-root user, the entrypoint and the OCI labels, with the index's version.
func checkTheImageConfig(t *testing.T, cf *v1.ConfigFile, arch, version string) {
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, arch, cf.Architecture)
	assert.Equal(t, "65532:65532", cf.Config.User, "a numeric non-root user, so runAsNonRoot can check it")
	assert.Equal(t, []string{"/usr/local/bin/overcast-ccm"}, cf.Config.Entrypoint)
	for _, l := range []string{"title", "description", "version", "revision", "created", "source"} {
		assert.NotEmpty(t, cf.Config.Labels["org.opencontainers.image."+l], "label org.opencontainers.image.%s", l)
	}
	assert.Equal(t, version, cf.Config.Labels["org.opencontainers.image.version"])
}

// checkTheFileSystem checks an image's files: no shell and nothing in /bin
// or /sbin, the non-root user, a writable /tmp, and the CA roots.
func checkTheFileSystem(t *testing.T, files map[string]*entry) {
	for p := range files {
		base := path.Base(p)
		for _, shell := range []string{"sh", "bash", "dash", "ash", "zsh", "busybox"} {
			assert.NotEqual(t, shell, base, "no shell in the image: %s", p)
		}
		assert.False(t, strings.HasPrefix(p, "/bin/") || strings.HasPrefix(p, "/sbin/"), "nothing in /bin or /sbin: %s", p)
	}
	assert.Contains(t, string(files["/etc/passwd"].body), "nonroot:x:65532:65532:")
	assert.Equal(t, int64(0o1777), files["/tmp"].mode&0o7777, "a writable /tmp with the sticky bit")
	assert.Equal(t, 65532, files["/home/nonroot"].uid)
	roots := 0
	for rest := files[CACertFile].body; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		_, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		roots++
	}
	assert.Greater(t, roots, 100, "CA roots in %s", CACertFile)
}

// checkTheBinaries checks that every binary is in the image, executable,
// built for the platform, and static.
func checkTheBinaries(t *testing.T, files map[string]*entry, arch string) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, bin := range Binaries {
		f := files["/usr/local/bin/"+bin]
		require.NotNil(t, f, bin)
		assert.Equal(t, int64(0o755), f.mode&0o777, bin)
		e, err := elf.NewFile(bytes.NewReader(f.body))
		require.NoError(t, err, bin)
		assert.Equal(t, machines[arch], e.Machine, "%s is built for %s", bin, arch)
		for _, p := range e.Progs {
			assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s is static (CGO_ENABLED=0): no interpreter", bin)
		}
	}
}

// runTheBinaries runs this platform's binaries as they come out of the
// layer: they tell the image's version and commit, their flags and commands.
func runTheBinaries(t *testing.T, files map[string]*entry, version, revision string) {
	dir := t.TempDir()
	for _, bin := range Binaries {
		require.NoError(t, os.WriteFile(filepath.Join(dir, bin), files["/usr/local/bin/"+bin].body, 0o755))
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(dir, "overcast-ccm"), "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.True(t, strings.HasPrefix(string(out), "overcast-ccm "+version+" (commit "+revision), "--version says the image's version and commit: %s", out)
	out, err = exec.CommandContext(t.Context(), filepath.Join(dir, "overcast-ccm"), "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--cloud-provider")
	assert.Contains(t, string(out), "--leader-elect")
	out, err = exec.CommandContext(t.Context(), filepath.Join(dir, "overcast"), "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "doctor")
	// No package of the image's overcast may need a writable file system at
	// start (envtest's did: it panicked under readOnlyRootFilesystem).
	out, _ = exec.CommandContext(t.Context(), filepath.Join(dir, "overcast"), "dev").CombinedOutput()
	assert.Contains(t, string(out), "not part of this build")
}

type entry struct {
	mode int64
	uid  int
	body []byte
}

// flatten reads the image's file system as a runtime would see it.
func flatten(t *testing.T, img v1.Image) map[string]*entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]*entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[path.Clean("/"+h.Name)] = &entry{mode: h.Mode, uid: h.Uid, body: body}
	}
}
