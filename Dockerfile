# llmprobe: a static binary on distroless, non-root. Build from the repository
# root with `make docker` (IMAGE=llmprobe:dev), which passes the version
# arguments below, or by hand (deploy/README.md):
#   docker build -t llmprobe:dev \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg BRANCH=$(git rev-parse --abbrev-ref HEAD) \
#     --build-arg BUILD_DATE=$(date -u +%Y%m%d-%H:%M:%S) .
# The build context has no .git (.dockerignore), so the Go build cannot stamp
# the revision from version control (-buildvcs=false says so): without
# REVISION the image reports revision=unknown, and the build warns.
# With no arguments the container probes the built-in vLLM simulator (and logs
# so); `docker run llmprobe:dev --target http://vllm:8000` probes a server and
# `--config.file=/etc/llmprobe/llmprobe.yml` a mounted configuration.
#
# It builds with BuildKit and with the classic builder (DOCKER_BUILDKIT=0):
# no `# syntax=` line (BuildKit would pull that frontend from a registry), and
# the build stage's platform has a default for the classic builder, which sets
# no BUILDPLATFORM. deploy/test-image.sh builds it both ways in a real engine
# and runs the image.
#
# Base images, pinned by digest: a tag moves, a digest names the image that
# was built and tested. The pins are build arguments, so that a build can name
# a mirror or a local stand-in without editing this file (deploy/test-image.sh
# makes local ones where no registry answers). To update a pin, resolve the
# tag to the digest of its multi-platform index and replace both lines:
#   docker buildx imagetools inspect golang:1.26.8 --format '{{json .Manifest.Digest}}'
#   crane digest gcr.io/distroless/static-debian12:nonroot
# The golang tag follows go.mod's go line (the image sets GOTOOLCHAIN=local).
# Where these digests come from: the machine this file was last edited on
# reaches no registry, so they were NOT resolved there; they are the ones
# public sources pin. golang:1.26.8: two public Dockerfiles pin it in full,
# and a published scan report quotes Cilium v1.20.2's images/runtime/Dockerfile
# pinning the same one (3c3e25a4...). distroless static-debian12:nonroot:
# three public Dockerfiles pin it, one as "as of 2026-08-26, crane digest".
# Check both with the commands above before a release.
ARG GO_IMAGE=golang:1.26.8@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
# The Go build runs on the builder's platform and cross-compiles for the
# target's: BuildKit sets BUILDPLATFORM, TARGETOS and TARGETARCH
# (docker buildx build --platform linux/arm64). The classic builder sets none
# of them: there the build stage runs on CLASSIC_BUILDPLATFORM (on an arm64
# machine: --build-arg CLASSIC_BUILDPLATFORM=linux/arm64) and Go builds for
# the platform it runs on. Not a global ARG BUILDPLATFORM: that would hide
# BuildKit's own value.
ARG CLASSIC_BUILDPLATFORM=linux/amd64

FROM --platform=${BUILDPLATFORM:-$CLASSIC_BUILDPLATFORM} ${GO_IMAGE} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=0.1.0-dev
ARG REVISION=unknown
ARG BRANCH=unknown
ARG BUILD_DATE=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN if [ "$REVISION" = unknown ]; then \
      echo "warning: no --build-arg REVISION (make docker passes it): the image reports revision=unknown" >&2; fi; \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=docker \
        -X github.com/prometheus/common/version.BuildDate=${BUILD_DATE}" \
      -o /out/llmprobe ./cmd/llmprobe && \
    mkdir -p /out/state/sweeps

FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="llmprobe" \
      org.opencontainers.image.description="Prometheus-native exporter and continuous prober for LLM serving endpoints (vLLM and any OpenAI-compatible server)" \
      org.opencontainers.image.source="https://github.com/llmprobe/llmprobe" \
      org.opencontainers.image.url="https://github.com/llmprobe/llmprobe" \
      org.opencontainers.image.documentation="https://github.com/llmprobe/llmprobe/blob/main/deploy/README.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/llmprobe /bin/llmprobe
# The daemon's state: scheduled and API sweeps write their run directories
# under /var/lib/llmprobe/sweeps (--sweeps.dir from LLMPROBE_SWEEPS_DIR). A
# volume, so it is writable on a read-only root (docker run --read-only
# gives it an anonymous volume; mount a named one to keep results across
# containers), owned by the image's user. --sweeps.retention.size (1GiB)
# bounds it.
COPY --from=build --chown=65532:65532 /out/state /var/lib/llmprobe
ENV LLMPROBE_SWEEPS_DIR=/var/lib/llmprobe/sweeps
VOLUME /var/lib/llmprobe
# distroless' nonroot user, numeric so that Kubernetes' runAsNonRoot can check it.
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 9741
# distroless has no shell or curl: the binary asks the process beside it
# (GET http://127.0.0.1:9741/-/healthy for serve, /health for simulate). On
# another port, set the address in the environment, which serve, simulate
# and the check all read: docker run -e LLMPROBE_WEB_LISTEN_ADDRESS=:8080
# (not --health-cmd: Docker runs that through /bin/sh, which distroless has
# not). Kubernetes ignores it and probes /-/healthy and /-/ready itself.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["/bin/llmprobe", "healthcheck"]
ENTRYPOINT ["/bin/llmprobe"]
CMD ["serve"]
