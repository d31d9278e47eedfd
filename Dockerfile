# syntax=docker/dockerfile:1
# The image `make image` builds, for those who build with Docker (buildx for both
# platforms: docker buildx build --platform linux/amd64,linux/arm64 ...). Both use
# hack/build.sh, so the binaries get the same flags; the user, entrypoint, paths
# and labels here are checked against make image's by hack/image's tests.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t overcast-ccm:dev .
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS TARGETARCH VERSION REVISION
RUN test -n "$VERSION" || { echo "pass --build-arg VERSION=\$(git describe --tags --always --dirty)"; exit 1; }
RUN TAGS=nodev VERSION="$VERSION" REVISION="$REVISION" hack/build.sh /out "$TARGETOS/$TARGETARCH"

# distroless static: CA roots, /etc/passwd with nonroot (65532), /tmp, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION REVISION CREATED
LABEL org.opencontainers.image.title="overcast-ccm" \
      org.opencontainers.image.description="Kubernetes cloud-controller-manager for OpenStack, CloudStack, OCI and the local cloud" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.source="https://github.com/overcast-ccm/overcast" \
      org.opencontainers.image.documentation="https://github.com/overcast-ccm/overcast#readme"
COPY --from=build /out/overcast-ccm /out/overcast /usr/local/bin/
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/overcast-ccm"]
