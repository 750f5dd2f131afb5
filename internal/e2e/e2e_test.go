//go:build e2e && unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/dashboards"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/rules"
)

// The timings of the test. Prometheus scrapes and evaluates every second; the
// alerts' `for` durations are rewritten to forDuration in the copy of the
// rules Prometheus loads (see rewriteFor), and the burn-rate alerts' history
// guards lose their offset (see rewriteHistory), so the fast burn-rate alert
// can fire within seconds of llmprobe's start instead of after 45 minutes,
// and the sweep exclusion windows shrink to the sweep itself (see
// rewriteSweepWindows): the test's target is swept every minute. Nothing
// else in the rules changes.
//
// Every wait is also capped at deadlineMargin before go test's -timeout (see
// until), and the checks stop at the first failure, so a failing run ends
// with its cleanups (which stop the processes) instead of the -timeout
// panic, which runs none.
const (
	scrapeInterval = "1s"
	forDuration    = "2s"
	startTimeout   = 30 * time.Second
	valuesTimeout  = 90 * time.Second
	alertTimeout   = 120 * time.Second
	buildTimeout   = 5 * time.Minute
	stopGrace      = 5 * time.Second
	deadlineMargin = 30 * time.Second
)

// hardDeadline is when every wait must be over: deadlineMargin before the
// test's deadline (go test -timeout). Zero when there is no deadline.
var hardDeadline time.Time

// until returns when a wait of d starting now must end: now + d, or
// hardDeadline when that comes first. capped says it did.
func until(d time.Duration) (end time.Time, capped bool) {
	end = time.Now().Add(d)
	if !hardDeadline.IsZero() && hardDeadline.Before(end) {
		return hardDeadline, true
	}
	return end, false
}

// cappedNote explains a wait that ended early because of the test deadline.
func cappedNote(capped bool) string {
	if capped {
		return fmt.Sprintf(" (cut short %s before go test's -timeout)", deadlineMargin)
	}
	return ""
}

// setUp is every end-to-end test's start: hardDeadline from go test's
// -timeout, the repository's root, a temporary directory (kept, and
// logged, with LLMPROBE_E2E_KEEP set when keep names its prefix) and
// llmprobe built into it.
func setUp(t *testing.T, keep string) (root, dir, bin string) {
	t.Helper()
	if dl, ok := t.Deadline(); ok {
		hardDeadline = dl.Add(-deadlineMargin)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if keep != "" && os.Getenv("LLMPROBE_E2E_KEEP") != "" {
		if dir, err = os.MkdirTemp("", keep); err != nil {
			t.Fatal(err)
		}
		t.Logf("keeping %s", dir)
	}
	bin = filepath.Join(dir, "llmprobe")
	buildEnd, capped := until(buildTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), buildEnd)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/llmprobe")
	build.Dir = root
	out, err := build.CombinedOutput()
	cancel()
	if err != nil {
		t.Fatalf("go build ./cmd/llmprobe: %v%s\n%s", err, cappedNote(capped), out)
	}
	return root, dir, bin
}

// lookPath finds one of names in PATH, or fails naming the script that
// installs it.
func lookPath(t *testing.T, script, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatalf("%s not found in PATH: run %s (it installs Debian's %s package)", names[len(names)-1], script, pkg)
	return ""
}

// TestPrometheusEndToEnd runs llmprobe against the simulator under a real
// Prometheus with the project's rules. See the package comment. Each step is
// a subtest; the first that fails ends the test (later steps would only wait
// for what cannot come).
func TestPrometheusEndToEnd(t *testing.T) {
	promBin := lookPath(t, ".ci/e2e.sh", "prometheus", "prometheus")
	root, dir, bin := setUp(t, "llmprobe-e2e-")
	promMajor := prometheusMajor(t, promBin)

	simAddr := testutil.FreeAddr(t)
	serveAddr := testutil.FreeAddr(t)
	promAddr := testutil.FreeAddr(t)

	// 1. The simulator, healthy (vLLM persona), and one simulator per other
	// engine with /metrics (their personas serve each engine's metric names).
	sim := startUp(t, dir, "simulate", bin, "http://"+simAddr+"/health", "simulate", "--web.listen-address", simAddr)
	engineAddrs := map[string]string{}
	for _, e := range otherEngines {
		engineAddrs[e] = startSim(t, dir, "simulate-"+e, bin, "--engine", e)
	}

	// The two sides of a continuous canary: servers of their own, as real
	// sides are (the server-correlation join wants one target per server).
	canaryAddrs := map[string]string{}
	for _, role := range []string{"baseline", "candidate"} {
		canaryAddrs[role] = startSim(t, dir, "simulate-canary-"+role, bin)
	}

	// Three replicas of one service and the answer checks' server, each a
	// server of its own (the server join wants one target per server).
	var replicaAddrs []string
	for i := range 4 {
		replicaAddrs = append(replicaAddrs, startSim(t, dir, fmt.Sprintf("simulate-extra-%d", i), bin))
	}

	// 2. llmprobe serve probing it.
	cfgPath := filepath.Join(dir, "llmprobe.yml")
	writeFile(t, cfgPath, fmt.Sprintf(`targets:
  - name: sim
    base_url: http://%[1]s
    api: completions
    slo: {ttft: 800ms, tpot: 100ms, e2el: 10s}
    goodput_objective: 0.98
    probes:
%[3]s    # A capacity sweep at once and every minute: the knee gauge and the
    # capacity rules (docs/sweep-api.md).
    sweeps:
      - name: quick
        every: 1m
        # 100 requests per step: the sweep inherits the target's SLO, and
        # the knee rules decide an SLO p99 on 100 samples or more.
        rates: [40, 80]
        num_prompts: 100
        input_len: 32
        output_len: 4
        max_send_lag: 250ms
        max_sched_latency: 250ms
  # An answer-check probe for the Answer checks row, and (replicaTargets)
  # three replicas of one service (the labels discovery would give them)
  # for the per-replica rules and the Replicas row.
  - name: answers
    base_url: http://%[2]s
    api: completions
    probes:
      - name: answers
        answer_checks: {set: builtin, every: 10s}
`, simAddr, replicaAddrs[3], probeYAML("small", 4, 8))+replicaTargets(replicaAddrs[:3])+canaryTargets(canaryAddrs)+engineTargets(engineAddrs))
	serve := startUp(t, dir, "serve", bin, "http://"+serveAddr+"/-/ready", "serve", "--config.file", cfgPath,
		"--web.listen-address", serveAddr, "--sweeps.dir", filepath.Join(dir, "sweeps"))

	// 3. Prometheus with the rules (for: rewritten), scraping llmprobe and
	// every simulator. The vLLM job stands for a server scraped under another
	// address than the one llmprobe uses (its instance is relabelled to a
	// pod-like name), so only the shipped relabelling snippet
	// (deploy/compose/prometheus/server-target-relabel.yml, target="sim")
	// attributes its series. The other engines' job lists the addresses
	// llmprobe uses and adds nothing: the rules and dashboards join them
	// through llmprobe_target_info's server_instance.
	rulesDir := filepath.Join(dir, "rules")
	copyRules(t, filepath.Join(root, "rules"), rulesDir)
	relabel := relabelSnippet(t, filepath.Join(root, "deploy", "compose", "prometheus", "server-target-relabel.yml"), "sim")
	var engineTargetList []string
	for _, e := range otherEngines {
		engineTargetList = append(engineTargetList, strconv.Quote(engineAddrs[e]))
	}
	api := startPrometheus(t, dir, "prometheus", promBin, promAddr, promHead(scrapeInterval, rulesDir)+fmt.Sprintf(`scrape_configs:
  - job_name: llmprobe
    static_configs:
      - targets: [%[1]q]
  - job_name: vllm
    static_configs:
      - targets: [%[2]q]
%[3]s      - target_label: instance
        replacement: %[4]s
  - job_name: engines
    static_configs:
      - targets: [%[5]s]
`, serveAddr, simAddr, relabel, vllmPodInstance, strings.Join(engineTargetList, ", ")))

	// 3b. A second Prometheus ingesting native histograms only (Prometheus
	// 2.x with the feature flag drops the classic buckets of a histogram that
	// has native ones): the quantile rules must still give the TTFT p99.
	var native *promAPI
	if promMajor == 2 {
		native = startPrometheus(t, dir, "prometheus-native", promBin, testutil.FreeAddr(t), promHead(scrapeInterval, rulesDir)+
			fmt.Sprintf("scrape_configs:\n  - job_name: llmprobe\n    static_configs:\n      - targets: [%q]\n", serveAddr),
			"--enable-feature=native-histograms")
	} else {
		t.Logf("prometheus %d.x: the native-histogram check is written for 2.x's --enable-feature=native-histograms; skipped", promMajor)
	}

	const sel = `{target="sim",probe="small"}`
	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("recording rules", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			query string
			check func(v float64) error
		}{
			{name: "llmprobe scraped", query: `up{job="llmprobe"}`, check: equals(1)},
			{name: "simulator scraped", query: `up{job="vllm"}`, check: equals(1)},
			{name: "target info (dashboard variables)", query: `llmprobe_target_info{target="sim",model!=""}`, check: equals(1)},
			{name: "request rate", query: `target_probe:llmprobe_requests:rate5m` + sel, check: positive},
			{name: "goodput ratio", query: `target_probe:llmprobe_goodput:ratio_rate5m` + sel, check: between(0, 1)},
			{name: "TTFT p99", query: `target_probe:llmprobe_time_to_first_token_seconds:p99_5m` + sel, check: positive},
			{name: "TPOT p99", query: `target_probe:llmprobe_time_per_output_token_seconds:p99_5m` + sel, check: positive},
			{name: "sends in 10m", query: `target_probe:llmprobe_requests_sent:increase10m` + sel, check: positive},
			{name: "late-send share", query: `target_probe:llmprobe_requests_sent_late:ratio_rate10m` + sel, check: between(0, 1)},
			{name: "TTFT attainment", query: `target_probe_slo:llmprobe_slo_attainment:ratio_rate5m{target="sim",slo="ttft"}`, check: between(0, 1)},
			{name: "configured rate", query: `llmprobe_probe_arrival_rate` + sel, check: equals(4)},
			{name: "last arrival is recent", query: `time() - llmprobe_probe_last_arrival_timestamp_seconds` + sel, check: between(0, 10)},
			{name: "configured objective", query: `target_probe:llmprobe_goodput_objective:ratio` + sel, check: equals(0.98)},
			{name: "burn rate", query: `target_probe:llmprobe_goodput_budget_burn:ratio_rate5m` + sel, check: between(0, 1/(1-0.98))},
			{name: "vLLM scraped under another instance", query: `up{job="vllm",instance="` + vllmPodInstance + `"}`, check: equals(1)},
			{name: "server TTFT p99 (scrape job's target label)", query: `target:vllm_time_to_first_token_seconds:p99_5m{target="sim"}`, check: positive},
			{name: "client-server TTFT gap", query: `target_probe:llmprobe_ttft_client_server_gap_seconds:p50_5m` + sel, check: finite},
			{name: "target info names the engine and server instance", query: `llmprobe_target_info{target="sglang",engine="sglang",server_instance="` + engineAddrs["sglang"] + `"}`, check: equals(1)},
			{name: "server instance map", query: `target_instance:llmprobe_target_info:max{target="sglang",instance="` + engineAddrs["sglang"] + `"}`, check: equals(1)},
			{name: "SGLang server TTFT p99 (no relabelling)", query: `target:sglang_time_to_first_token_seconds:p99_5m{target="sglang"}`, check: positive},
			{name: "SGLang client-server TTFT gap", query: `target_probe:llmprobe_ttft_client_server_gap_seconds:mean_5m{target="sglang",probe="small"}`, check: finite},
			{name: "sweep knee", query: `llmprobe_sweep_knee_requests_per_second{target="sim",sweep="quick"}`, check: positive},
			{name: "knee 7-day max", query: `target_sweep:llmprobe_sweep_knee_requests_per_second:max_7d{target="sim",sweep="quick"}`, check: positive},
			{name: "last knee of the target", query: `target:llmprobe_sweep_knee_requests_per_second:last{target="sim"}`, check: positive},
			{name: "server request rate", query: `target:llmprobe_server_requests:rate5m{target="sim"}`, check: positive},
			// The sweep runs every minute, so the headroom never leaves its
			// exclusion window (a sweep and the 6 minutes after it): its
			// inputs are checked instead.
			{name: "production request rate", query: `target:llmprobe_production_requests:rate5m{target="sim"}`, check: finite},
			{name: "server knee", query: `target:llmprobe_sweep_knee_server_requests_per_second:last{target="sim"}`, check: positive},
			{name: "knee decided", query: `target:llmprobe_sweep_knee_decided:last{target="sim"}`, check: equals(1)},
			{name: "sweep interval", query: `llmprobe_sweep_interval_seconds{target="sim",sweep="quick"}`, check: equals(60)},
			{name: "canary TTFT p99 ratio", query: `canary:llmprobe_time_to_first_token_seconds_p99:ratio_5m{canary="e2e"}`, check: positive},
			// The built-in answer checks against a correct simulator.
			{name: "answer pass ratio", query: `target_probe:llmprobe_answer_checks_pass:ratio30m{target="answers"}`, check: equals(1)},
		} {
			ok := t.Run(tc.name, func(t *testing.T) {
				v := api.waitValue(t, tc.query, valuesTimeout, tc.check)
				t.Logf("%s = %g", tc.query, v)
			})
			if !ok {
				t.FailNow()
			}
		}
	})

	step("every rule evaluates", func(t *testing.T) {
		api.checkRulesHealthy(t)
	})

	// Every dashboard query runs and shows data for the healthy target, except
	// the alert annotations (no alert fires yet) and the native-histogram
	// heatmaps, which this Prometheus does not ingest (checked on the native
	// one below). Runbook queries must run; some filter to nothing when all
	// is well.
	step("dashboard and runbook queries run", func(t *testing.T) {
		for _, q := range dashboardQueries(t) {
			n := len(api.query(t, q.expr))
			// The sweep annotation shows only while a sweep runs; the
			// headroom never outside a sweep's window (every minute here);
			// a replica counts from 200 successful requests in 10 minutes,
			// which this minute-long stack does not reach (promtool's
			// rules/tests/replicas.yml covers the replica rules); the
			// failing answer checks are none while the simulator answers
			// right; the energy panels need a DCGM exporter scraped with the
			// target label, which this stack does not run (promtool's
			// rules/tests/energy.yml covers the energy rules); the
			// per-request server timing panels need a vLLM started with
			// --enable-per-request-metrics and the session panels a
			// multi-turn probe with attribution headers, which this stack
			// does not run either (rules/tests/server.yml and sessions.yml,
			// and the daemon's golden test, cover them).
			if n == 0 && !strings.Contains(q.expr, "ALERTS{") && !nativeQuery.MatchString(q.expr) &&
				!strings.Contains(q.expr, "energy_per_good_token_joules") && !strings.Contains(q.expr, "dcgm_gpu_power_watts") &&
				!strings.Contains(q.expr, "llmprobe_server_queue_seconds") && !strings.Contains(q.expr, "llmprobe_server_ttft_seconds") &&
				!strings.Contains(q.expr, "llmprobe_ttft_overhead_seconds") && !strings.Contains(q.expr, "llmprobe_session_") &&
				!strings.Contains(q.expr, "llmprobe_sweep_running{") && !strings.Contains(q.expr, "llmprobe_capacity_headroom:") &&
				!strings.Contains(q.expr, "service_probe:") && !strings.Contains(q.expr, "service_target_probe:") &&
				!strings.HasSuffix(q.expr, "llmprobe_answer_checks_pass:ratio30m{cluster=~\".*\", target=~\".*\", probe=~\".*\"} < 1") {
				t.Errorf("%s: no data: %s", q.where, q.expr)
			}
		}
		rb := runbookQueries(t, filepath.Join(root, "docs", "runbook.md"))
		for _, q := range rb {
			api.query(t, q.expr)
		}
		t.Logf("%d runbook queries ran", len(rb))
	})

	step("native histograms", func(t *testing.T) {
		if native == nil {
			t.Skip("needs Prometheus 2.x")
		}
		v := native.waitValue(t, `target_probe:llmprobe_time_to_first_token_seconds:p99_5m`+sel, valuesTimeout, positive)
		t.Logf("TTFT p99 from native histograms = %g", v)
		// The late-send share and send count fall back to histogram_fraction
		// and histogram_count (promtool cannot test native histograms).
		sent := native.waitValue(t, `target_probe:llmprobe_requests_sent:increase10m`+sel, valuesTimeout, positive)
		late := native.waitValue(t, `target_probe:llmprobe_requests_sent_late:ratio_rate10m`+sel, valuesTimeout, between(0, 1))
		t.Logf("sends in 10m = %g, late share = %g from native histograms", sent, late)
		if n := native.query(t, `llmprobe_time_to_first_token_seconds_bucket`); len(n) != 0 {
			t.Fatalf("classic buckets were ingested too (%d series): the native path is not what produced the value", len(n))
		}
		native.checkRulesHealthy(t)
		n := 0
		for _, q := range dashboardQueries(t) {
			if nativeQuery.MatchString(q.expr) {
				n++
				if len(native.query(t, q.expr)) == 0 {
					t.Errorf("%s: no data from native histograms: %s", q.where, q.expr)
				}
			}
		}
		if n == 0 {
			t.Error("no dashboard query reads a native histogram")
		}
	})

	step("burn-rate alert fires on HTTP 500s", func(t *testing.T) {
		if got := api.firing(t, "LLMProbeGoodputBudgetBurnFast"); len(got) != 0 {
			t.Fatalf("fast burn alert already firing before any fault: %v", got)
		}
		stop(t, sim)
		sim = startUp(t, dir, "simulate-500", bin, "http://"+simAddr+"/health", "simulate", "--web.listen-address", simAddr,
			"--fault.http-500", "1.0")
		deadline, capped := until(alertTimeout)
		for {
			got := api.firing(t, "LLMProbeGoodputBudgetBurnFast")
			if len(got) > 0 {
				a := got[0]
				if a.Labels["target"] != "sim" || a.Labels["probe"] != "" || a.Labels["severity"] != "critical" { // one alert per target: no probe label
					t.Fatalf("unexpected labels %v", a.Labels)
				}
				if !strings.Contains(a.Annotations["runbook_url"], "#llmprobegoodputbudgetburnfast") {
					t.Fatalf("runbook_url %q", a.Annotations["runbook_url"])
				}
				t.Logf("firing: %v: %s", a.Labels, a.Annotations["description"])
				break
			}
			if time.Now().After(deadline) {
				v := api.query(t, `target_probe:llmprobe_goodput_budget_burn:ratio_rate5m`+sel)
				t.Fatalf("LLMProbeGoodputBudgetBurnFast not firing after %s%s (5m burn now %v)%s", alertTimeout, cappedNote(capped), v, logs(serve, sim, api.proc))
			}
			time.Sleep(time.Second)
		}
		if v := api.waitValue(t, `sum(target_probe_outcome:llmprobe_requests:rate5m{target="sim",outcome="http_5xx"})`, valuesTimeout, positive); v <= 0 {
			t.Fatalf("no http_5xx outcomes recorded")
		}
	})
}

// otherEngines are the simulator personas started beside the vLLM one, each
// probed by an llmprobe target of the same name and scraped without
// relabelling.
var otherEngines = []string{"sglang", "tgi", "llamacpp"}

// vllmPodInstance is the instance the vLLM job's series get (relabelled),
// unlike the address llmprobe uses: the case that needs the target label.
const vllmPodInstance = "vllm-0:8000"

// engineTargets returns the llmprobe targets of the other simulators, one
// slow probe each (their series must exist for every dashboard query).
func engineTargets(addrs map[string]string) string {
	var b strings.Builder
	for _, e := range otherEngines {
		fmt.Fprintf(&b, "  - name: %s\n    base_url: http://%s\n    api: completions\n    probes:\n%s", e, addrs[e], probeYAML("small", 1, 4))
	}
	return b.String()
}

// replicaTargets returns a target per simulator of addrs labelled as the
// replicas of one service (namespace, service, pod, as a kubernetes_sd
// entry's relabelling gives them): at 2 req/s each, every replica passes
// the replica rules' 200 successful requests in 10 minutes.
// probeYAML is a probes: entry of llmprobe.yml: rate requests/s, Poisson
// arrivals, at most maxConcurrency in flight, 64 tokens in and 16 out.
func probeYAML(name string, rate, maxConcurrency int) string {
	return fmt.Sprintf(`      - name: %s
        rate: %d
        arrival: poisson
        max_concurrency: %d
        workload:
          input_tokens: {dist: fixed, value: 64}
          output_tokens: {dist: fixed, value: 16}
`, name, rate, maxConcurrency)
}

func replicaTargets(addrs []string) string {
	var b strings.Builder
	for i, addr := range addrs {
		fmt.Fprintf(&b, `  - name: replica-%[2]d
    base_url: http://%[1]s
    api: completions
    labels: {namespace: e2e, service: vllm, pod: vllm-%[2]d}
    probes:
%[3]s`, addr, i, probeYAML("small", 2, 4))
	}
	return b.String()
}

// canaryTargets returns the two sides of a continuous canary (targets[].labels
// canary and role) on the simulator, so the canary rules and the dashboard's
// Canary row have data.
func canaryTargets(addrs map[string]string) string {
	var b strings.Builder
	for _, role := range []string{"baseline", "candidate"} {
		fmt.Fprintf(&b, `  - name: canary-%[2]s
    base_url: http://%[1]s
    api: completions
    slo: {ttft: 800ms, tpot: 100ms}
    labels: {canary: e2e, role: %[2]s}
    probes:
%[3]s`, addrs[role], role, probeYAML("small", 2, 4))
	}
	return b.String()
}

// relabelSnippet returns the relabel_configs block of the shipped snippet
// with its TARGET placeholder set to target, indented for a scrape job of
// the test's prometheus.yml.
func relabelSnippet(t *testing.T, path, target string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b.WriteString("    " + strings.ReplaceAll(line, "TARGET", target) + "\n")
	}
	if !strings.Contains(b.String(), "relabel_configs:") || !strings.Contains(b.String(), "replacement: "+target) {
		t.Fatalf("%s: no relabel_configs setting target: %q", path, b.String())
	}
	return b.String()
}

// proc is a process the test started; stop ends it by its PID.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs bin with args, its output in <dir>/<name>.log, and registers
// its stop as a cleanup. The process runs in its own process group and, on
// Linux, is killed by the kernel when the test process dies (sysProcAttr),
// and its PID is written to the PID file (pidFile) for .ci/e2e.sh: the
// cleanup does not run when go test's -timeout panics.
func start(t *testing.T, dir, name, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Logf("started %s (pid %d): %s %s", name, cmd.Process.Pid, filepath.Base(bin), strings.Join(args, " "))
	t.Cleanup(func() { stop(t, p) })
	if err := pids.add(cmd.Process.Pid, bin); err != nil {
		t.Fatalf("PID file: %v", err)
	}
	return p
}

// stop sends SIGTERM to p's process group (p's PID; it has no children of
// its own today), waits up to stopGrace, then sends SIGKILL, and takes p off
// the PID file. It is idempotent.
func stop(t *testing.T, p *proc) {
	t.Helper()
	pid := p.cmd.Process.Pid
	signal := func(sig syscall.Signal) {
		if syscall.Kill(-pid, sig) != nil { // not a group leader
			_ = p.cmd.Process.Signal(sig)
		}
	}
	select {
	case <-p.done:
	default:
		signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			t.Logf("%s (pid %d) ignored SIGTERM; killing it", p.name, pid)
			signal(syscall.SIGKILL)
			<-p.done
		}
	}
	if err := pids.remove(pid); err != nil {
		t.Errorf("PID file: %v", err)
	}
}

// pidFile lists the PIDs of the running processes the test started, one
// "<pid> <binary path>" line each, in the file named by
// $LLMPROBE_E2E_PIDFILE (no file when it is unset). .ci/e2e.sh kills what
// is left in it when the test exits, after a -timeout panic too; the binary
// path lets it check that a PID still belongs to the process it started.
type pidFile struct {
	mu    sync.Mutex
	path  string
	lines map[int]string
}

var pids = &pidFile{path: os.Getenv("LLMPROBE_E2E_PIDFILE"), lines: map[int]string{}}

func (f *pidFile) add(pid int, bin string) error {
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines[pid] = fmt.Sprintf("%d %s\n", pid, bin)
	return f.write()
}

func (f *pidFile) remove(pid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.lines, pid)
	return f.write()
}

// write rewrites the file (the caller holds mu): a rename, so a reader never
// sees half of it.
func (f *pidFile) write() error {
	if f.path == "" {
		return nil
	}
	var b strings.Builder
	for _, l := range f.lines {
		b.WriteString(l)
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logs returns the last lines of the processes' logs, for failure messages.
func logs(ps ...*proc) string {
	var b strings.Builder
	for _, p := range ps {
		data, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "\n--- %s (last lines of %s) ---\n%s", p.name, p.log, strings.Join(lines, "\n"))
	}
	return b.String()
}

// waitHTTP waits until url answers 200, failing early when p exits.
func waitHTTP(t *testing.T, p *proc, url string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline, capped := until(startTimeout)
	for {
		if p.exited() {
			t.Fatalf("%s exited: %v%s", p.name, p.err, logs(p))
		}
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready at %s after %s%s: %v%s", p.name, url, startTimeout, cappedNote(capped), err, logs(p))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startUp is start, then waitHTTP on url.
func startUp(t *testing.T, dir, name, bin, url string, args ...string) *proc {
	t.Helper()
	p := start(t, dir, name, bin, args...)
	waitHTTP(t, p, url)
	return p
}

// startSim starts `bin simulate --web.listen-address ADDR args...` on a free
// address, waits for its /health and returns the address.
func startSim(t *testing.T, dir, name, bin string, args ...string) string {
	t.Helper()
	addr := testutil.FreeAddr(t)
	startUp(t, dir, name, bin, "http://"+addr+"/health", append([]string{"simulate", "--web.listen-address", addr}, args...)...)
	return addr
}

// startPrometheus writes cfg to <dir>/<name>.yml and runs Prometheus on addr
// with it (its TSDB in <dir>/<name>-tsdb, flags added), ready.
func startPrometheus(t *testing.T, dir, name, bin, addr, cfg string, flags ...string) *promAPI {
	t.Helper()
	cfgPath := filepath.Join(dir, name+".yml")
	writeFile(t, cfgPath, cfg)
	args := append([]string{"--config.file=" + cfgPath, "--storage.tsdb.path=" + filepath.Join(dir, name+"-tsdb"),
		"--web.listen-address=" + addr}, flags...)
	return &promAPI{base: "http://" + addr, proc: startUp(t, dir, name, bin, "http://"+addr+"/-/ready", args...)}
}

// promHead is a Prometheus configuration's global section (scrape and
// evaluation every interval) and its rule files, rulesDir/*.yml.
func promHead(interval, rulesDir string) string {
	return fmt.Sprintf("global:\n  scrape_interval: %[1]s\n  scrape_timeout: %[1]s\n  evaluation_interval: %[1]s\n"+
		"rule_files:\n  - %[2]s/*.yml\n", interval, rulesDir)
}

// startAlertmanager writes cfg to <dir>/alertmanager.yml and runs
// Alertmanager with it on a free address (no cluster), ready; it returns the
// address and the process.
func startAlertmanager(t *testing.T, dir, bin, cfg string) (string, *proc) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	writeFile(t, filepath.Join(dir, "alertmanager.yml"), cfg)
	return addr, startUp(t, dir, "alertmanager", bin, "http://"+addr+"/-/ready", "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "am-data"), "--web.listen-address="+addr, "--cluster.listen-address=")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var forLine = regexp.MustCompile(`(?m)^(\s+for:\s*)\S+\s*$`)

// rewriteFor sets every alert's `for` to forDuration. With rewriteHistory and
// rewriteSweepWindows it is the only change made to the rules for the
// end-to-end test.
func rewriteFor(data []byte) []byte {
	return forLine.ReplaceAll(data, []byte("${1}"+forDuration))
}

// historyGuard matches the history guard of a burn-rate alert:
// present_over_time(llmprobe_requests_total[R] offset O).
var historyGuard = regexp.MustCompile(`(present_over_time\(llmprobe_requests_total\[[0-9a-z]+\]) offset [0-9a-z]+\)`)

// leftGuard matches a history guard on llmprobe's own requests that still
// has an offset.
var leftGuard = regexp.MustCompile(`present_over_time\(llmprobe_requests_total\[[0-9a-z]+\] offset `)

// rewriteHistory drops the offset of the burn-rate alerts' history guards,
// which then only need the probe's series to exist: the test's llmprobe is
// seconds old, not the 45 minutes the fast burn needs. The guards are
// covered by the promtool tests (rules/tests/alerts.yml).
func rewriteHistory(data []byte) []byte {
	return historyGuard.ReplaceAll(data, []byte("${1})"))
}

// sweepWindow matches an alert's sweep exclusion window:
// max_over_time(llmprobe_sweep_running[W]).
var sweepWindow = regexp.MustCompile(`max_over_time\(llmprobe_sweep_running\[[0-9a-z]+\]\)`)

// rewriteSweepWindows makes the alerts' sweep exclusions cover the sweep
// itself, not the window after it: the test sweeps its target every minute,
// so a 15-minute exclusion would mute the fast burn for the whole test. The
// windows are covered by the promtool tests (rules/tests/sweep-periods.yml).
func rewriteSweepWindows(data []byte) []byte {
	return sweepWindow.ReplaceAll(data, []byte("llmprobe_sweep_running"))
}

// copyRules copies the rule files of src (not the promtool tests, nor the
// opt-in files of src/optional) to dst with rewriteFor, rewriteHistory and
// rewriteSweepWindows applied.
func copyRules(t *testing.T, src, dst string) {
	t.Helper()
	copyRuleFiles(t, src, dst, func(p string, data []byte) []byte {
		out := rewriteFor(data)
		if bytes.Contains(data, []byte("for:")) && bytes.Equal(out, data) {
			t.Fatalf("%s: rewriting for: changed nothing", p)
		}
		if g := historyGuard.FindAll(out, -1); bytes.Contains(data, []byte("present_over_time(")) && len(g) == 0 {
			t.Fatalf("%s: no history guard to rewrite", p)
		}
		out = rewriteSweepWindows(rewriteHistory(out))
		// Other offsets stay: LLMProbeServerMetricMissing compares a server
		// job's last 6 hours with its last 15 minutes, and on a healthy
		// stack it is silent either way (promtool covers it).
		if leftGuard.Match(out) {
			t.Fatalf("%s: an offset is left after rewriting the history guards", p)
		}
		return out
	})
}

// copyRuleFiles writes src/*.yml (not the opt-in files of src/optional), each
// through rewrite (given the file's path), to dst.
func copyRuleFiles(t *testing.T, src, dst string, rewrite func(path string, data []byte) []byte) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(src, "*.yml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no rule files in %s: %v", src, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, filepath.Base(p)), string(rewrite(p, data)))
	}
}

// prometheusMajor returns the major version of the prometheus binary.
func prometheusMajor(t *testing.T, bin string) int {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("prometheus --version: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`version (\d+)\.`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("cannot read the version of %s: %s", bin, out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	t.Logf("%s", bytes.SplitN(out, []byte("\n"), 2)[0])
	return n
}

// promAPI queries one Prometheus over its HTTP API.
type promAPI struct {
	base string
	proc *proc
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) float() float64 {
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func (a *promAPI) get(t *testing.T, path string, params url.Values, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path+"?"+params.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	if env.Status != "success" {
		t.Fatalf("GET %s %v: %s", path, params, env.Error)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("GET %s: data: %v", path, err)
	}
}

// query runs an instant query and returns its vector.
func (a *promAPI) query(t *testing.T, q string) []sample {
	t.Helper()
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []sample `json:"result"`
	}
	a.get(t, "/api/v1/query", url.Values{"query": {q}}, &data)
	if data.ResultType != "vector" {
		t.Fatalf("query %s: result type %s, want vector", q, data.ResultType)
	}
	return data.Result
}

// waitValue polls q until it returns exactly one sample that passes check,
// and returns its value.
func (a *promAPI) waitValue(t *testing.T, q string, timeout time.Duration, check func(float64) error) float64 {
	t.Helper()
	deadline, capped := until(timeout)
	for {
		res := a.query(t, q)
		var err error
		switch {
		case len(res) == 0:
			err = errors.New("no result")
		case len(res) > 1:
			err = fmt.Errorf("%d series, want 1: %v", len(res), res)
		default:
			if err = check(res[0].float()); err == nil {
				return res[0].float()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after %s%s: %v%s", q, timeout, cappedNote(capped), err, logs(a.proc))
		}
		time.Sleep(time.Second)
	}
}

type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// firing returns the firing alerts named name.
func (a *promAPI) firing(t *testing.T, name string) []alert {
	t.Helper()
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	a.get(t, "/api/v1/alerts", nil, &data)
	var out []alert
	for _, al := range data.Alerts {
		if al.Labels["alertname"] == name && al.State == "firing" {
			out = append(out, al)
		}
	}
	return out
}

// checkRulesHealthy fails when any loaded rule's last evaluation failed
// (e.g. a many-to-many match on real data) or a rule file did not load.
func (a *promAPI) checkRulesHealthy(t *testing.T) {
	t.Helper()
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	a.get(t, "/api/v1/rules", nil, &data)
	n := 0
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health == "err" || r.LastError != "" {
				t.Errorf("group %s rule %s: health %s: %s", g.Name, r.Name, r.Health, r.LastError)
			}
		}
	}
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	wantGroups, wantRules := 0, 0
	for _, f := range files {
		wantGroups += len(f.Groups)
		for _, g := range f.Groups {
			wantRules += len(g.Rules)
		}
	}
	if len(data.Groups) != wantGroups || n != wantRules {
		t.Fatalf("Prometheus loaded %d groups with %d rules; rules/ has %d groups with %d rules", len(data.Groups), n, wantGroups, wantRules)
	}
	t.Logf("%d groups, %d rules, none failing", len(data.Groups), n)
}

func equals(want float64) func(float64) error {
	return func(v float64) error {
		if v != want {
			return fmt.Errorf("value %g, want %g", v, want)
		}
		return nil
	}
}

func between(lo, hi float64) func(float64) error {
	return func(v float64) error {
		if math.IsNaN(v) || v < lo || v > hi {
			return fmt.Errorf("value %g, want in [%g, %g]", v, lo, hi)
		}
		return nil
	}
}

func positive(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("value %g, want a positive finite number", v)
	}
	return nil
}

func finite(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("value %g, want a finite number", v)
	}
	return nil
}

// query is a PromQL expression from a dashboard or the runbook.
type query struct{ where, expr string }

// nativeQuery matches a query that reads a latency histogram as a native
// histogram (its name without _bucket, _sum or _count).
var nativeQuery = regexp.MustCompile(`\(llmprobe_\w+_seconds\{`)

// grafanaVar matches $name, ${name} and ${name:format}.
var grafanaVar = regexp.MustCompile(`\$\{?(\w+)(?::\w+)?\}?`)

// dashboardQueries returns every panel and annotation query of the
// committed dashboards, Grafana variables replaced as Grafana would with
// "All" selected.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	names, err := fs.Glob(dashboards.FS, "*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	expand := func(e string) string {
		return grafanaVar.ReplaceAllStringFunc(e, func(m string) string {
			switch grafanaVar.FindStringSubmatch(m)[1] {
			case "__rate_interval":
				return "1m"
			case "__interval":
				return "15s"
			case "__range":
				return "5m"
			}
			return ".*"
		})
	}
	var out []query
	for _, n := range names {
		data, err := fs.ReadFile(dashboards.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Annotations struct {
				List []struct {
					Name string `json:"name"`
					Expr string `json:"expr"`
				} `json:"list"`
			} `json:"annotations"`
			Panels []panelJSON `json:"panels"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for _, a := range d.Annotations.List {
			if a.Expr != "" {
				out = append(out, query{n + " annotation " + a.Name, expand(a.Expr)})
			}
		}
		var walk func(ps []panelJSON)
		walk = func(ps []panelJSON) {
			for _, p := range ps {
				walk(p.Panels)
				for _, tg := range p.Targets {
					out = append(out, query{fmt.Sprintf("%s %q %s", n, p.Title, tg.RefID), expand(tg.Expr)})
				}
			}
		}
		walk(d.Panels)
	}
	return out
}

type panelJSON struct {
	Title   string      `json:"title"`
	Panels  []panelJSON `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// runbookQueries returns the PromQL lines of the runbook with the
// placeholders TARGET and PROBE set to the test's target and probe.
func runbookQueries(t *testing.T, path string) []query {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []query
	r := strings.NewReplacer("TARGET", "sim", "PROBE", "small")
	for _, block := range strings.Split(string(data), "```promql\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, query{"runbook: " + line, r.Replace(line)})
			}
		}
	}
	return out
}
