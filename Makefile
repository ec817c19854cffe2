# events-apiserver: `make help` lists the targets.
SHELL := /usr/bin/env bash
DATA_DIR ?= .cache/run
PORT ?= 8443
GO ?= go

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*?## "} /^[a-zA-Z_-]+:.*?## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## Run the server on the embedded default (embedded etcd, generated certs, kubeconfig in DATA_DIR=.cache/run).
	$(GO) run ./cmd/events-apiserver --data-dir $(DATA_DIR) --secure-port $(PORT)

.PHONY: build
build: plugin ## Build bin/events-apiserver, stamped with its version (--version, /version), and the kubectl plugin.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$$(hack/ldflags.sh)" -o bin/events-apiserver ./cmd/events-apiserver

.PHONY: plugin
plugin: ## Build bin/kubectl-eventtree, the kubectl plugin that draws an object's event tree (docs/eventtree.md).
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$$(hack/ldflags.sh)" -o bin/kubectl-eventtree ./cmd/kubectl-eventtree

IMAGE_ARCHIVE ?= _output/events-apiserver-image.tar
.PHONY: image
image: ## Build the container image without a container engine into IMAGE_ARCHIVE (OCI layout + docker manifest; IMAGE=name:tag).
	hack/build-image.sh $(IMAGE_ARCHIVE)

.PHONY: release
release: ## Build a release into _output/release (VERSION=vX.Y.Z required; IMAGE_REPOSITORY): the image, one install manifest and the chart pinned to its digest, the kubectl plugin's archives and krew manifest, release notes from CHANGELOG.md, SBOMs of the binary and the image, SHA256SUMS; SIGNING_KEY=KEY signs the image, the manifest and the checksums (cosign blob signatures).
	VERSION=$(VERSION) hack/release.sh

.PHONY: lint
lint: ## Run golangci-lint (.golangci.yml) and logcheck (structured, contextual klog).
	hack/verify-lint.sh

.PHONY: test
test: ## Run everything CI runs: make verify (static checks, linters, unit tests -race), integration, image and fault suites, fuzzing, benchmark smokes, the end-to-end suite (as root).
	hack/test.sh

.PHONY: test-unit
test-unit: ## Run the unit tests only, with -race (builds the etcd binary pkg/mirror's store tests need on first use).
	hack/test-unit.sh

.PHONY: test-faults
test-faults: ## Run the fault suite (etcd and server killed, paused, out of space; 1,000 watchers) and print its table.
	assets="$$(hack/envtest-assets.sh)" && KUBEBUILDER_ASSETS="$$assets" PATH="$$assets:$$PATH" $(GO) test -count=1 -timeout 15m -v ./test/faults

# Per store cache: the two runs take ROBUSTNESS_DURATION each, plus the
# server's build and the validation.
ROBUSTNESS_DURATION ?= 10m
.PHONY: test-robustness
test-robustness: ## Run the robustness harness (docs/robustness.md): random traffic and etcd faults for ROBUSTNESS_DURATION (10m) per store cache, every list and watch checked against etcd's history; ROBUSTNESS_SEED repeats a run.
	assets="$$(hack/envtest-assets.sh)" && KUBEBUILDER_ASSETS="$$assets" PATH="$$assets:$$PATH" $(GO) test -count=1 -timeout 60m -v ./test/robustness \
	  -robustness.duration=$(ROBUSTNESS_DURATION) -robustness.store-cache=compact,watch-cache $(if $(ROBUSTNESS_SEED),-robustness.seed=$(ROBUSTNESS_SEED))

# A count of executions (about a minute each here), not a duration: Go 1.26's
# fuzzing coordinator can fail a target at the end of a -fuzztime duration
# (go.dev/issue/75804). FUZZ_TIME=10m works too.
FUZZ_TIME ?= 100000x
.PHONY: fuzz
fuzz: ## Fuzz request decoding and field selectors, FUZZ_TIME (100000x, about a minute) per target; new crashers land in pkg/apiserver/testdata/fuzz.
	for target in FuzzDecodeJSON FuzzDecodeProtobuf FuzzFieldSelector; do $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZ_TIME) ./pkg/apiserver || exit 1; done

.PHONY: test-integration
test-integration: ## Run the integration tests as CI does, the history tests on a victoria-logs service too (builds envtest and VictoriaLogs assets on first use).
	assets="$$(hack/envtest-assets.sh)" && vlogs="$$(hack/victorialogs-assets.sh)" && \
	  KUBEBUILDER_ASSETS="$$assets" VICTORIALOGS_ASSETS="$$vlogs" PATH="$$assets:$$PATH" $(GO) test -count=1 -timeout 45m ./test/integration/...

.PHONY: test-compat
test-compat: ## Run the aggregator's integration tests against the oldest supported kube-apiserver (KUBE_VERSION=v1.36.3, built from its Go module; COMPAT_RUN narrows them). Not in CI: a few minutes once built.
	KUBE_VERSION=$(or $(KUBE_VERSION),v1.36.3) hack/test-compat.sh

.PHONY: test-e2e
test-e2e: ## Run the end-to-end suite as root: a one-node cluster from binaries (hack/cluster-assets.sh) in its own network, mount and PID namespaces runs the images and the manifests.
	$(GO) test -count=1 -timeout 40m -v ./test/e2e

.PHONY: generate
generate: ## Regenerate deepcopy, conversion, defaults, openapi, protobuf and clients.
	hack/update-codegen.sh

.PHONY: docs
docs: ## Regenerate the reference pages in docs/reference (flags, metrics, field selectors) from the code.
	hack/update-reference.sh

.PHONY: verify
verify: ## Every static check and the unit tests (-race): codegen, license headers, reference pages, gofmt, go vet, golangci-lint, logcheck, go mod tidy, protoc version.
	hack/verify.sh

.PHONY: envtest-assets
envtest-assets: ## Build and cache kube-apiserver, kubectl and etcd for the tests.
	hack/envtest-assets.sh

.PHONY: bench-storm
bench-storm: ## Storm benchmark: hot-looping reporter vs 20 quiet reporters and a reader, 60s per run (STORM_DURATION).
	$(GO) test -count=1 -timeout 30m ./test/integration/storm -run '^$$' -bench BenchmarkStorm -benchtime 1x -storm.duration $(or $(STORM_DURATION),60s)

.PHONY: bench
bench: ## Side-by-side benchmark against kube-apiserver, to 100,000 then 1,000,000 events (about 35 minutes; by hand, on a quiet machine). ARGS=... passes flags.
	hack/bench.sh $(ARGS)

.PHONY: bench-history
bench-history: ## Archive benchmark, built as shipped (CGO_ENABLED=0): HISTORY_EVENTS (10,000,000) events over 30 days, HISTORY_OBJECTS (100,000) objects, embedded VictoriaLogs: ingest, merges settled, HISTORY_SAMPLES (1,000) pages per query kind (p50/p99/max, CPU, engine stats per phase), bytes per event.
	@echo "bench-history: CGO_ENABLED=0, as the server ships (pure-Go zstd)"
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 180m -v ./test/archivebench -run '^TestHistory$$' -history.full -history.events=$(or $(HISTORY_EVENTS),10000000) -history.objects=$(or $(HISTORY_OBJECTS),100000) -history.samples=$(or $(HISTORY_SAMPLES),1000)

.PHONY: bench-archive-lag
bench-archive-lag: ## Archive lag under API load, the server built as shipped (CGO_ENABLED=0): LAG_RATE (1000) creates/s for LAG_DURATION (60s), lag from each acknowledgement to the archive's checkpoint (LAG_RATES=500,1000,1500 sweeps; LAG_ARCHIVE=service runs victoria-logs).
	@echo "bench-archive-lag: CGO_ENABLED=0, as the server ships (pure-Go zstd)"
	assets="$$(hack/envtest-assets.sh)" && KUBEBUILDER_ASSETS="$$assets" CGO_ENABLED=0 \
	  $(if $(filter service,$(LAG_ARCHIVE)),VICTORIALOGS_ASSETS="$$(hack/victorialogs-assets.sh)") \
	  $(GO) test -count=1 -timeout 60m -v ./test/archivebench -run '^TestArchiveLag$$' -lag.full \
	  -lag.rate $(or $(LAG_RATE),1000) -lag.rates '$(LAG_RATES)' -lag.duration $(or $(LAG_DURATION),60s) -lag.archive $(or $(LAG_ARCHIVE),embedded)

.PHONY: bench-mirror
bench-mirror: ## Mirror benchmark: 100,000 events seeded in kube-apiserver, then 500 changes/s for 60s (hack/bench-mirror.sh).
	hack/bench-mirror.sh
