# syntax=docker/dockerfile:1
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
# `--config.file=/etc/llmprobe/llmprobe.yml` a mounted configuration. No
# HEALTHCHECK: orchestrators probe /-/healthy and /-/ready.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
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
      -o /out/llmprobe ./cmd/llmprobe

FROM gcr.io/distroless/static-debian12:nonroot
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
# distroless' nonroot user, numeric so that Kubernetes' runAsNonRoot can check it.
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 9741
ENTRYPOINT ["/bin/llmprobe"]
CMD ["serve"]
