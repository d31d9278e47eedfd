# Overcast — the two commands a new user needs are `make run` and `make test`.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
ROOT := $(abspath .)
BIN := $(ROOT)/bin
CACHE ?= $(or $(OVERCAST_CACHE),$(or $(HOME),/tmp)/.cache/overcast)
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(CACHE)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
# One version string for --version, overcast_build_info and the image's tag/labels.
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
# The image: make image writes tmp/image/oci (OCI layout) and
# tmp/image/overcast-ccm.oci.tar; make image-push IMAGE=registry/overcast-ccm pushes it.
IMAGE ?= ghcr.io/overcast-ccm/overcast-ccm
IMAGE_TAG ?= $(VERSION)
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_DIR := $(ROOT)/tmp/image
# Flags of every go test run; -race and -shuffle catch what a quiet run hides.
TEST_FLAGS ?= -race -shuffle=on -count=1
# The e2e suites run the controller manager in-process, so the race detector sees
# k8s.io/cloud-provider's controllers too.
E2E_FLAGS ?= $(TEST_FLAGS)
RUN_ARGS ?=
# make chaos: how long the outage and each fuzz target last, how many times
# the leader is killed while how many Services churn.
CHAOS_OUTAGE ?= 10m
CHAOS_FUZZTIME ?= 3m
CHAOS_KILLS ?= 200
CHAOS_SERVICES ?= 50
CHAOS_PARTS ?= e2e openstack peers fuzz
# make run CLOUD=openstack runs the dev cluster on the OpenStack emulator.
CLOUD ?= local

.PHONY: chaos bench all build image image-push test-image run test test-unit test-e2e test-e2e-suite test-quickstart test-binaries test-openstack test-openstack-contract test-openstack-e2e openstack-up openstack-down lint generate verify clean help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/overcast-ccm and bin/overcast (static, version stamped: hack/build.sh)
	VERSION=$(VERSION) REVISION=$(REVISION) hack/build.sh $(BIN)

image: ## build the OCI image (linux/amd64 + linux/arm64) into tmp/image, offline, no Docker
	for p in $(IMAGE_PLATFORMS); do \
		TAGS=nodev VERSION=$(VERSION) REVISION=$(REVISION) hack/build.sh $(IMAGE_DIR)/bin/$${p/\//_} $$p; \
	done
	cd hack/image && $(GO) run . build --bin-dir $(IMAGE_DIR)/bin --out $(IMAGE_DIR) \
		--platforms "$$(echo $(IMAGE_PLATFORMS) | tr ' ' ,)" --name $(IMAGE):$(IMAGE_TAG) \
		--version $(VERSION) --revision $(REVISION) --created "$$(git log -1 --format=%cI)"

test-image: image ## open the built image, check its config and file system, run its binary
	cd hack/image && OVERCAST_IMAGE=$(IMAGE_DIR)/overcast-ccm.oci.tar $(GO) test $(TEST_FLAGS) .

image-push: image ## push the image to $(IMAGE):$(IMAGE_TAG) (credentials: ~/.docker/config.json)
	cd hack/image && $(GO) run . push --image $(IMAGE_DIR)/oci --to $(IMAGE):$(IMAGE_TAG)

test-binaries: ## build kube-apiserver, etcd, kubectl into the cache (once per hack/tools/go.sum)
	@hack/test-binaries.sh >/dev/null

run: build test-binaries ## a local cluster with overcast-ccm, 3 nodes and a demo LoadBalancer (Ctrl-C stops it; CLOUD=openstack, cloudstack or oci: on its emulator)
	$(BIN)/overcast dev --cloud $(CLOUD) --ccm $(BIN)/overcast-ccm $(RUN_ARGS)

test: test-unit test-image test-e2e ## unit tests, fuzz seeds, the image, and the e2e suites against a real apiserver

test-unit: ## unit tests and the seeds of every fuzz test
	@mkdir -p tmp && rm -f tmp/test-failures.txt
	set -o pipefail; $(GO) test $(TEST_FLAGS) ./internal/... ./hack/... ./cmd/... ./bench/ 2>&1 | tee tmp/unit.log || \
		{ echo "== what failed (whole log: tmp/unit.log)"; hack/test-failures.sh tmp/unit.log | tee tmp/test-failures.txt; exit 1; }

test-e2e: test-e2e-suite test-quickstart ## e2e: real etcd + kube-apiserver, overcast-ccm under deploy/ RBAC; the README's quick starts with the image

# Its output is kept in tmp/e2e.log; on failure what failed is printed last
# (and kept in tmp/test-failures.txt), after the controllers' many log lines.
test-e2e-suite: build test-binaries
	@mkdir -p tmp && rm -f tmp/test-failures.txt
	set -o pipefail; OVERCAST_TEST_BINARIES="$$(hack/test-binaries.sh)" OVERCAST_CCM_BINARY=$(BIN)/overcast-ccm \
		$(GO) test $(E2E_FLAGS) -timeout 30m ./test/e2e/ 2>&1 | tee tmp/e2e.log || \
		{ echo "== what failed (whole log: tmp/e2e.log)"; hack/test-failures.sh tmp/e2e.log | tee tmp/test-failures.txt; exit 1; }

test-quickstart: test-binaries image
	rm -rf $(IMAGE_DIR)/rootfs $(IMAGE_DIR)/rootfs.config.json
	cd hack/image && $(GO) run . rootfs --image $(IMAGE_DIR)/oci --platform linux/$$($(GO) env GOARCH) \
		--to $(IMAGE_DIR)/rootfs --config $(IMAGE_DIR)/rootfs.config.json
	OVERCAST_TEST_BINARIES="$$(hack/test-binaries.sh)" OVERCAST_HELM="$$(hack/helm.sh)" OVERCAST_IMAGE_ROOTFS=$(IMAGE_DIR)/rootfs \
		$(GO) test $(TEST_FLAGS) -timeout 15m ./test/e2e/quickstart/

chaos: build test-binaries ## the chaos suite's long forms, by hand (~3 h): 10-minute outage and throttling and 200 kills of the leader on each emulator, every fuzz target (CHAOS_*; report in tmp/chaos/report.md)
	CHAOS_PARTS="$(CHAOS_PARTS)" CHAOS_OUTAGE=$(CHAOS_OUTAGE) CHAOS_FUZZTIME=$(CHAOS_FUZZTIME) CHAOS_KILLS=$(CHAOS_KILLS) CHAOS_SERVICES=$(CHAOS_SERVICES) hack/chaos.sh

openstack-up: ## install (first time ~6.5 min) and start a real OpenStack on 127.0.0.1 (test/openstack)
	test/openstack/install.sh
	test/openstack/up.sh

openstack-down: ## stop the OpenStack that openstack-up started
	test/openstack/down.sh

test-openstack: build openstack-up ## contract suite and e2e against the real OpenStack (left running; make openstack-down stops it)
	$(MAKE) --no-print-directory test-openstack-contract test-openstack-e2e

# The two suites alone, on an OpenStack already up and a built bin/: .ci/run runs
# them beside the emulator e2e. The contract suite needs no Kubernetes binaries,
# so on a fresh machine it runs while they build (hack/test-binaries.sh waits).
test-openstack-contract:
	test/openstack/reset.sh
	OVERCAST_CONTRACT_OPENSTACK_ENV=$${OVERCAST_OPENSTACK_STATE:-/var/tmp/overcast-openstack}/openstack.env \
		$(GO) test $(TEST_FLAGS) -timeout 25m -run '^TestContract' ./internal/provider/openstack/

test-openstack-e2e:
	OVERCAST_TEST_BINARIES="$$(hack/test-binaries.sh)" OVERCAST_CCM_BINARY=$(BIN)/overcast-ccm \
		$(GO) test $(E2E_FLAGS) -timeout 30m ./test/e2e/openstack/

BENCH_ARGS ?=
bench: build test-binaries ## scale and API-cost benchmark on the OpenStack emulator, into docs/benchmarks.md (hours with the defaults; BENCH_ARGS to narrow)
	OVERCAST_TEST_BINARIES="$$(hack/test-binaries.sh)" $(GO) run ./bench -ccm $(BIN)/overcast-ccm -report docs/benchmarks.md -chart docs/benchmarks-calls.svg $(BENCH_ARGS)

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

lint: $(GOLANGCI_LINT) ## golangci-lint v2 with .golangci.yml (the main module and hack/image)
	$(GOLANGCI_LINT) run ./...
	cd hack/image && $(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml ./...

generate: ## regenerate docs/reference and the chart's admission policies (the go:generate lines of internal/), then deploy/ (rendered from the Helm chart)
	$(GO) generate ./internal/...
	hack/gen-manifests.sh

verify: generate ## generate, then fail if anything changed; hack/tools links what bin/ links at the same versions
	git diff --exit-code -- docs/ deploy/
	hack/check-tools.sh
	hack/check-alerts.sh

clean: ## remove build output (the test-binary cache stays)
	rm -rf $(BIN) tmp
