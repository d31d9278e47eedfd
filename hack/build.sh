#!/usr/bin/env bash
# Builds overcast-ccm and overcast the one way every artefact is built: `make build`,
# `make image` and the Dockerfile all call this script, so their binaries cannot
# differ. Static (CGO_ENABLED=0), -trimpath, stripped, version stamped.
#
#   hack/build.sh OUTDIR [GOOS/GOARCH]     default: this machine's platform
#
#   VERSION   the version string; default `git describe --tags --always --dirty`
#   REVISION  the full commit;    default `git rev-parse HEAD`
#   TAGS      build tags; the image uses nodev (overcast without `dev`, which links
#             envtest: it needs a writable /tmp and the repository anyway)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: hack/build.sh OUTDIR [GOOS/GOARCH]}
platform=${2:-$(go env GOOS)/$(go env GOARCH)}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || true)}
# component-base keeps the Kubernetes libraries' release (kubernetes_build_info):
# the framework parses it to choose API compatibility levels.
k8s=$(go list -m -f '{{.Version}}' k8s.io/component-base) # v0.37.1
k8s="v1.${k8s#v0.}"
minor=${k8s#v1.}
minor=${minor%%.*}
ldflags="-s -w
 -X github.com/overcast-ccm/overcast/internal/version.version=$version
 -X github.com/overcast-ccm/overcast/internal/version.revision=$revision
 -X k8s.io/component-base/version.gitVersion=$k8s
 -X k8s.io/component-base/version.gitMajor=1
 -X k8s.io/component-base/version.gitMinor=$minor
 -X k8s.io/component-base/version.gitCommit=$revision"
mkdir -p "$out"
for cmd in overcast-ccm overcast; do
	CGO_ENABLED=0 GOOS=${platform%/*} GOARCH=${platform#*/} \
		go build -trimpath -tags "${TAGS:-}" -ldflags "$ldflags" -o "$out/$cmd" "./cmd/$cmd"
done
