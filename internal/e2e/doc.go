// Package e2e holds the end-to-end test of llmprobe with a real Prometheus
// (build tag e2e; run it with scripts/e2e.sh or `make e2e`). It builds the
// llmprobe binary, starts the built-in simulator, `llmprobe serve` probing it
// and Prometheus (Debian's package) on loopback with the rules of rules/, and
// checks through Prometheus' HTTP API that the recording rules produce the
// target's goodput ratio and TTFT p99, that the client-server TTFT join works,
// that every rule evaluates without error, and that the fast goodput burn-rate
// alert fires once the simulator answers every request with HTTP 500.
// Without the tag the package is empty.
package e2e
