package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// WriteLayout writes idx as an OCI image layout in dir (replaced), with the
// reference recorded the way docker load (25+), containerd and skopeo read it.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	annotations := map[string]string{"io.containerd.image.name": ref}
	if r, err := name.ParseReference(ref); err == nil {
		annotations["org.opencontainers.image.ref.name"] = r.Identifier()
	}
	return p.AppendIndex(idx, layout.WithAnnotations(annotations))
}

// TarDir writes the files of dir into a tar archive (an OCI archive when dir is an
// OCI layout), paths relative to dir, in a stable order.
func TarDir(dir, archive string) (err error) {
	tmp := archive + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, archive)
		} else {
			_ = os.Remove(tmp)
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.ModTime = h.ModTime.Truncate(0).UTC()
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// OpenIndex opens an OCI layout directory or an OCI archive (unpacked into a
// temporary directory, removed by cleanup).
func OpenIndex(p string) (idx v1.ImageIndex, cleanup func(), err error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, func() {}, fmt.Errorf("%w (make image builds it)", err)
	}
	if st.IsDir() {
		idx, err := layoutIndex(p)
		return idx, func() {}, err
	}
	tmp, err := os.MkdirTemp("", "overcast-oci-")
	if err != nil {
		return nil, func() {}, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	if err := untar(p, tmp); err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("unpacking %s: %w", p, err)
	}
	if idx, err = layoutIndex(tmp); err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("%s: %w", p, err)
	}
	return idx, cleanup, nil
}

// layoutIndex is the image index that an OCI layout's index.json points at.
func layoutIndex(dir string) (v1.ImageIndex, error) {
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("want one image index in the layout, found %d entries", len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}

// untar unpacks an OCI archive (regular files and directories) into dir.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	return extract(tar.NewReader(f), dir, false)
}

// within joins an archive's entry name to dir. Cleaning it as an absolute path
// first keeps "../x" and "/x" inside dir.
func within(dir, name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("bad entry name %q", name)
	}
	return filepath.Join(dir, filepath.FromSlash(path.Clean("/"+name))), nil
}

func writeFile(target string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// PlatformImage picks the image of os/arch from idx.
func PlatformImage(idx v1.ImageIndex, goos, arch string) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		if d.Platform.OS == goos && d.Platform.Architecture == arch {
			return idx.Image(d.Digest)
		}
		have = append(have, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	return nil, fmt.Errorf("no %s/%s image in the index (it has %v)", goos, arch, have)
}

// Unpack writes the flattened file system of img into dir, as a container
// runtime would: modes kept, owners kept where this process may set them.
func Unpack(img v1.Image, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if entries, err := os.ReadDir(dir); err != nil {
		return err
	} else if len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	return extract(tar.NewReader(rc), dir, os.Geteuid() == 0)
}

// extract writes the entries of tr under dir (never outside it) with their
// modes, and their owners when owners is set.
func extract(tr *tar.Reader, dir string, owners bool) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target, err := within(dir, h.Name)
		if err != nil {
			return err
		}
		mode := os.FileMode(h.Mode).Perm()
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("%s: entry type %q is not unpacked", h.Name, h.Typeflag)
		}
		if owners {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
}

// Push writes the whole index to ref and returns its digest.
func Push(idx v1.ImageIndex, ref string, insecure bool) (v1.Hash, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.WriteIndex(r, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}
