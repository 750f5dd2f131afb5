// Package e2e holds the end-to-end test of llmprobe with a real Prometheus
// (build tags e2e and unix; run it with .ci/e2e.sh or `make e2e`). It
// builds the llmprobe binary, starts the built-in simulator, `llmprobe serve`
// probing it and Prometheus (Debian's package) on loopback with the rules of
// rules/, and checks through Prometheus' HTTP API that the recording rules
// produce the target's goodput ratio, objective and burn rate, TTFT p99, the
// late-send share and send count (also from native histograms) and the
// probe's rate and last-arrival gauges, that the client-server TTFT join
// works, that every rule evaluates without error, and that the fast goodput
// burn-rate alert fires once the simulator answers every request with HTTP
// 500.
//
// TestAlertmanagerOnePagePerIncident (alertmanager_test.go) checks that one
// incident pages once: it evaluates the unchanged rule files with promtool
// over simulated series of five incidents (a hang, HTTP 5xx, a slow canary
// candidate, llmprobe killed, a capacity drop; an hour of history each, 30s
// steps), replays the alerts Prometheus would send into a real Alertmanager
// (Debian's prometheus-alertmanager) running deploy/alertmanager/alertmanager.yml
// with its inhibition rules and a webhook receiver, time compressed 100
// times, and counts one notification per incident from the expected alert,
// none resolved while llmprobe is down. It logs each incident's detection
// time (docs/runbook.md quotes them).
//
// TestAlertmanagerLive (live_test.go; opt-in, LLMPROBE_E2E_LIVE=1, run by
// .ci/e2e-live.sh or `make e2e-live`) is the same count live: three
// simulators probed by `llmprobe serve`, a real Prometheus evaluating the
// shipped rules (every `for` capped at 2m, keep_firing_for 1m, nothing else
// changed) and a real Alertmanager with deploy/alertmanager/alertmanager.yml
// (group_wait 10s, group_interval 1m) and a webhook receiver. A healthy
// stretch (LLMPROBE_E2E_HEALTHY, default 4m) gives no notification; each
// fault (slow TTFT, a killed target, HTTP 500s on two probes of a target
// with llmprobe restarted while the burn fires) exactly one firing and one
// resolved, and nothing else notifies (docs/runbook.md quotes the figures).
//
// TestProbeEndpointEndToEnd (probe_test.go) has a real Prometheus scrape
// llmprobe's GET /probe for a simulator listed in a file_sd file, through
// the relabelling of deploy/examples/probe/prometheus.yml, and checks
// probe_success, the status code, the output tokens, TTFT and the backend
// the simulator names (--served-by) through the query API.
//
// It stops every process it started by PID: its cleanups do on success and
// on failure (every wait ends 30 s before go test's -timeout, and the first
// failing step ends the test); the processes are also killed by the kernel
// when the test process dies (Linux Pdeathsig), and .ci/e2e.sh kills
// what is left in the PID file the test keeps ($LLMPROBE_E2E_PIDFILE).
// Without the tags the package is empty.
package e2e
