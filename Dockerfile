# Multi-stage build: static binary on distroless, non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/llmprobe /bin/llmprobe
COPY deploy/examples/llmprobe.yml /etc/llmprobe/llmprobe.yml
USER nonroot
EXPOSE 9741
ENTRYPOINT ["/bin/llmprobe"]
CMD ["serve", "--config.file=/etc/llmprobe/llmprobe.yml"]
