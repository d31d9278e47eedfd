package devenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CCMBinaryAt returns overcast-ccm built from the commit rev of the
// repository (e.g. HEAD~1, a tag), to test an upgrade from it. Builds are
// kept in the cache directory (OVERCAST_CACHE, else ~/.cache/overcast),
// keyed by the commit, outside the repository. It returns the commit too.
func (e *Env) CCMBinaryAt(ctx context.Context, rev string) (bin, commit string, err error) {
	out, err := exec.CommandContext(ctx, "git", "-C", e.RepoRoot, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("no commit %q in %s (a shallow clone?)", rev, e.RepoRoot)
	}
	commit = strings.TrimSpace(string(out))
	root := os.Getenv("OVERCAST_CACHE")
	if root == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", "", err
		}
		root = filepath.Join(dir, "overcast")
	}
	bin = filepath.Join(root, "ccm-at", commit, "overcast-ccm")
	if _, err := os.Stat(bin); err == nil {
		return bin, commit, nil
	}
	src, err := os.MkdirTemp("", "overcast-at-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(src)
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", e.RepoRoot, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("git archive %s: %w\n%s", commit, err, out)
	}
	tmp := bin + ".tmp"
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", "", err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", tmp, "./cmd/overcast-ccm")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building overcast-ccm at %s: %w\n%s", commit, err, out)
	}
	return bin, commit, os.Rename(tmp, bin)
}
