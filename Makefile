# llmprobe Makefile. `make test` is the README's test command's equivalent.
GO        ?= go
BIN       ?= llmprobe
PKG       := github.com/llmprobe/llmprobe
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
BUILD_DATE := $(shell date -u +%Y%m%d-%H:%M:%S)
IMAGE     ?= llmprobe:dev
LDFLAGS   := -X github.com/prometheus/common/version.Version=$(VERSION) \
             -X github.com/prometheus/common/version.Revision=$(REVISION) \
             -X github.com/prometheus/common/version.Branch=$(BRANCH) \
             -X github.com/prometheus/common/version.BuildUser=$(shell whoami)@$(shell hostname) \
             -X github.com/prometheus/common/version.BuildDate=$(BUILD_DATE)

.PHONY: all build docker image-test test test-race test-slow test-short lint vet fmt bench bench-quick bench-go compare-oc test-rules mixin e2e e2e-live clean browser

all: lint test build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/llmprobe

# The container image, stamped with the same version, revision, branch and
# date as `make build` (the build context leaves .git out, so the image's Go
# build cannot read them itself: without these arguments it says unknown).
#
# The base images are the Dockerfile's digest-pinned GO_IMAGE and
# RUNTIME_IMAGE; name a mirror or a local tag instead with
#   make docker GO_IMAGE=mirror.local/golang:1.26.8 RUNTIME_IMAGE=mirror.local/distroless-static:nonroot
GO_IMAGE ?=
RUNTIME_IMAGE ?=
docker:
	docker build -t $(IMAGE) \
	  $(if $(GO_IMAGE),--build-arg GO_IMAGE=$(GO_IMAGE)) \
	  $(if $(RUNTIME_IMAGE),--build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE)) \
	  --build-arg VERSION=$(VERSION) \
	  --build-arg REVISION=$(REVISION) \
	  --build-arg BRANCH=$(BRANCH) \
	  --build-arg BUILD_DATE=$(BUILD_DATE) . || { \
	  echo "make docker: the build failed. If a base image could not be pulled (no registry, a rate limit, a digest the" >&2; \
	  echo "mirror lacks), name reachable ones: make docker GO_IMAGE=<golang 1.26 image> RUNTIME_IMAGE=<distroless static nonroot>" >&2; \
	  echo "(a mirror, or a tag loaded with docker load; deploy/README.md, \"Base images\")." >&2; exit 1; }

# The Dockerfile built in a real container engine (classic builder and
# BuildKit) and the image run read-only with all capabilities dropped
# (deploy/test-image.sh; deploy/README.md). Needs root where no engine runs:
# it installs and starts Debian's docker.io. IMAGE_TEST_FLAGS=--clean starts
# from an empty engine data root, as CI does.
image-test:
	bash deploy/test-image.sh $(IMAGE_TEST_FLAGS)

test:
	$(GO) test ./...

test-race:
	$(GO) test -race -tags slow ./...

# The slow tests the README's `go test ./...` skips (testutil.Slow).
test-slow:
	bash .ci/slow.sh

test-short:
	$(GO) test -short ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if command -v golangci-lint >/dev/null; then golangci-lint run; else echo "golangci-lint not installed; ran go vet + gofmt only"; fi

# llmprobe's own accuracy and capacity on loopback, one table (docs/performance.md):
# about 9 minutes; `make bench-quick` about 2. BENCH_FLAGS adds flags (e.g. --json=bench.json).
bench: build
	nice ./$(BIN) bench $(BENCH_FLAGS)

bench-quick: build
	nice ./$(BIN) bench --quick $(BENCH_FLAGS)

# Sequential compare's operating characteristics on the simulator, the table of docs/compare.md:
# OC_RUNS comparisons per case (about 2 hours at 20; OC_CASES picks cases by name prefix, comma
# separated; OC_BUDGET replaces the default --budget). Each round is OC_PROMPTS requests at OC_RATE
# req/s against the default simulator (10 ms steps), with the sweep's default client limits
# (OC_LAG=default; empty: 250 ms, for a host too busy for them).
OC_RUNS ?= 20
OC_RATE ?= 100
OC_PROMPTS ?= 200
OC_LAG ?= default
# OC_SIM=process: each simulator in a process of its own (as a server runs apart from
# its client); empty: in the benchmark's process.
OC_SIM ?=
compare-oc:
	LLMPROBE_OC_RUNS=$(OC_RUNS) LLMPROBE_OC_CASES=$(OC_CASES) LLMPROBE_OC_BUDGET=$(OC_BUDGET) LLMPROBE_OC_RATE=$(OC_RATE) LLMPROBE_OC_PROMPTS=$(OC_PROMPTS) LLMPROBE_OC_LAG=$(OC_LAG) LLMPROBE_OC_SIM=$(OC_SIM) $(GO) test -run '^$$' -bench BenchmarkCompareOC -benchtime 1x -timeout 0 ./prober/compare

# The Go micro-benchmarks of the hot paths.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

test-rules:
	bash .ci/test-rules.sh

# The monitoring mixin's rules and alerts (mixin/), rendered as YAML with the
# go-jsonnet CLI (a go.mod tool). MIXIN_CONFIG (jsonnet) overrides _config
# knobs: make mixin MIXIN_CONFIG='{llmprobeSelector: "job=\"x\""}'.
MIXIN_CONFIG ?= {}
export MIXIN_CONFIG
mixin:
	@$(GO) tool jsonnet -S -J mixin --ext-code MIXIN_CONFIG -e "local m = (import 'mixin.libsonnet') + {_config+:: std.extVar('MIXIN_CONFIG')}; std.manifestYamlDoc(m.prometheusRules, quote_keys=false) + '\n---\n' + std.manifestYamlDoc(m.prometheusAlerts, quote_keys=false)"

e2e:
	bash .ci/e2e.sh

# The live one-page-per-incident test (internal/e2e TestAlertmanagerLive):
# simulators with faults, llmprobe serve, Prometheus and Alertmanager, about
# 15 minutes; LLMPROBE_E2E_HEALTHY=30m for docs/runbook.md's figure.
e2e-live:
	bash .ci/e2e-live.sh

browser:
	bash .ci/browser.sh

clean:
	rm -f $(BIN)
