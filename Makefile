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
build: ## Build bin/events-apiserver.
	$(GO) build -o bin/events-apiserver ./cmd/events-apiserver

.PHONY: test
test: ## Run every check and test: codegen, gofmt, vet, unit and integration tests.
	hack/test.sh

.PHONY: test-unit
test-unit: ## Run the unit tests only (no etcd, no kube-apiserver).
	$(GO) test ./pkg/... ./cmd/...

.PHONY: test-integration
test-integration: ## Run the integration tests (builds envtest assets on first use).
	assets="$$(hack/envtest-assets.sh)" && KUBEBUILDER_ASSETS="$$assets" PATH="$$assets:$$PATH" $(GO) test -count=1 ./test/integration/...

.PHONY: generate
generate: ## Regenerate deepcopy, conversion, defaults, openapi, protobuf and clients.
	hack/update-codegen.sh

.PHONY: verify
verify: ## Check generated code is current, gofmt and go vet are clean.
	hack/verify.sh

.PHONY: envtest-assets
envtest-assets: ## Build and cache kube-apiserver, kubectl and etcd for the tests.
	hack/envtest-assets.sh

.PHONY: bench-mirror
bench-mirror: ## Mirror benchmark: 100,000 events seeded in kube-apiserver, then 500 changes/s for 60s (hack/bench-mirror.sh).
	hack/bench-mirror.sh
