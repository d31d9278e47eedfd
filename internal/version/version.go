// Package version is the version of this build of Overcast: what `--version`
// prints and what the overcast_build_info metric reports, from the same string.
//
// The string comes from `git describe --tags --always --dirty` through the linker
// (hack/build.sh sets it):
//
//	-X github.com/overcast-ccm/overcast/internal/version.version=<describe>
//	-X github.com/overcast-ccm/overcast/internal/version.revision=<full commit>
//
// A binary built without those flags (go build, go test) falls back to the VCS
// stamp that the Go toolchain embeds, so it never claims a version it is not.
//
// k8s.io/component-base keeps its own version (the Kubernetes libraries' release,
// shown as kubernetes_build_info): the framework parses it as a Kubernetes
// version to pick API compatibility levels, and a git hash there would panic.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Set by the linker (hack/build.sh).
var (
	version  string
	revision string
)

// Info is the version of this build.
type Info struct {
	Version   string // git describe, e.g. v0.3.0-4-g1514914 or 1514914-dirty
	Revision  string // the full commit, or "" when unknown
	GoVersion string
	Platform  string // GOOS/GOARCH
}

// String is the one line --version prints.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, orUnknown(i.Revision), i.GoVersion, i.Platform)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Get returns the version of this binary.
func Get() Info {
	i := Info{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if i.Version != "" {
		return i
	}
	// Not stamped by hack/build.sh: say what the toolchain knows, marked as such.
	i.Version = "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(i.Revision) >= 7 {
			i.Version = "devel-" + i.Revision[:7]
			if dirty {
				i.Version += "-dirty"
			}
		}
	}
	return i
}

var buildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Name:           "overcast_build_info",
	Help:           "Always 1; the labels say which build of Overcast this is (version is what --version prints).",
	StabilityLevel: metrics.ALPHA,
}, []string{"version", "revision", "go_version", "platform"})

var registerOnce sync.Once

// RegisterMetric registers overcast_build_info on the legacy registry, which
// the controller manager serves at /metrics. Safe to call more than once.
func RegisterMetric() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(buildInfo)
		i := Get()
		buildInfo.WithLabelValues(i.Version, i.Revision, i.GoVersion, i.Platform).Set(1)
	})
}
