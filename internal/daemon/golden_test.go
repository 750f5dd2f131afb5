package daemon

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden from this run")

// goldenFile is the whole daemon's /metrics, normalised (normalise).
const goldenFile = "testdata/metrics.golden"

// enumLabels are the labels whose values are a fixed set the daemon
// exports from the start (zero series made up front), so the golden keeps
// them: a renamed outcome or reason is an interface change.
var enumLabels = map[string]bool{"outcome": true, "result": true, "reason": true, "state": true, "phase": true, "slo": true}

// normalise writes an exposition's shape: per family its name, TYPE and
// HELP, the values of its enumLabels, then each distinct set of label names
// its series carry, sorted. Sample values, timestamps, exemplars and other
// label values (targets, addresses, versions) are dropped. go_ and process_ families keep their name and type
// only (their HELP and labels follow the Go release).
func normalise(mfs map[string]*dto.MetricFamily) string {
	var names []string
	for n := range mfs {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		mf := mfs[n]
		fmt.Fprintf(&b, "%s %s\n", n, strings.ToLower(mf.GetType().String()))
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") {
			continue
		}
		fmt.Fprintf(&b, "  # %s\n", mf.GetHelp())
		sets := map[string]bool{}
		enums := map[string]map[string]bool{}
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName())
				if enumLabels[l.GetName()] {
					if enums[l.GetName()] == nil {
						enums[l.GetName()] = map[string]bool{}
					}
					enums[l.GetName()][l.GetValue()] = true
				}
			}
			slices.Sort(ls)
			sets["{"+strings.Join(ls, ",")+"}"] = true
		}
		for _, k := range slices.Sorted(maps.Keys(enums)) {
			fmt.Fprintf(&b, "  %s: %s\n", k, strings.Join(slices.Sorted(maps.Keys(enums[k])), " "))
		}
		var keys []string
		for k := range sets {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s\n", k)
		}
	}
	return b.String()
}

// parse reads a text exposition.
func parse(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%.2000s", err, body)
	}
	return mfs
}

// hasSeries reports whether family name has a series whose labels include
// match.
func hasSeries(mfs map[string]*dto.MetricFamily, name string, match map[string]string) bool {
	return len(seriesOf(mfs, name, match)) > 0
}

// sweepRuns is llmprobe_sweep_runs_total{result=result}'s value.
func sweepRuns(mfs map[string]*dto.MetricFamily, result string) float64 {
	mf := mfs["llmprobe_sweep_runs_total"]
	if mf == nil {
		return 0
	}
	n := 0.0
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			if l.GetName() == "result" && l.GetValue() == result {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestGoldenMetrics is issue 35 Deliver 5 (node_exporter's e2e-output
// idea): a daemon with a static target (a workload probe and an
// answer-check probe), a multi-turn probe on a simulator of its own, one with an SLO, a cost per hour and labels (apart:
// the sweep would inherit the SLO, and 4 requests are too few for its p99), a discovered target (static_configs), a scheduled
// sweep that has run once (its send-lag, scheduling-latency and CPU checks
// off: a busy host must not fail it, and the simulator shares the process), tracing on (an in-process OTLP receiver) and a
// /probe request answered; its /metrics, normalised, equals
// testdata/metrics.golden (-update rewrites it), and so does /probe's
// answer (its own section). TestMetricsDocumented holds every llmprobe_
// family of the golden to docs/metrics.md.
func TestGoldenMetrics(t *testing.T) {
	simCfg := simtest.Fast()
	simCfg.EnablePerRequestMetrics = true // the per-request server timing families (server_timing)
	sim, _ := simtest.Start(t, simCfg)
	// The multi-turn probe's server of its own: its resent context would
	// hit the sweep's prefix cache (unintended-prefix-cache).
	sessions, _ := simtest.Start(t, simtest.Fast())
	rcv, o, base, logs := tracedOptions(t)
	o.EnableSweeps = true
	yml := fmt.Sprintf(`targets:
  - name: sim
    base_url: %[1]s
    api: chat
    probes:
      - name: p
        rate: 10
      - name: answers
        answer_checks: {set: builtin, every: 10s}
    sweeps:
      - name: golden
        every: 1h
        rates: [4]
        num_prompts: 4
        input_len: 16
        output_len: 4
        max_send_lag: 1h
        max_sched_latency: 1h
        max_client_cpu: 16
  - name: sessions
    base_url: %[3]s
    api: chat
    probes: [{name: mt, rate: 5, workload: {multi_turn: {turns: 2}}}]
  - name: priced
    base_url: %[1]s
    slo: {ttft: 5s, tpot: 1s}
    cost_per_hour: 2
    labels: {team: golden}
    probes: [{name: p, rate: 2}]
discovery:
  - name: found
    static_configs: [{targets: [%[2]q]}]
    target:
      probes: [{name: p, rate: 10}]
`, sim, strings.TrimPrefix(sim, "http://"), sessions)
	setConfig(t, &o, t.TempDir(), yml)
	start(t, o)

	// /probe: one probe of the simulator with the default module.
	probeBody := get(t, base+"/probe?target="+url.QueryEscape(sim), "probe_success", logs)

	// Wait for the observable state every family needs: the static and
	// the discovered target have answered requests, the answer checks have
	// judged, the sweep has finished once and spans reached the receiver.
	var body, state string
	defer func() {
		if t.Failed() {
			t.Logf("last state: %s\nlog:\n%.4000s", state, logs.String())
		}
	}()
	var scraped time.Time
	testutil.EventuallyWithin(t, time.Minute, "requests, answer checks, a finished sweep and spans", func() bool {
		if time.Since(scraped) < 100*time.Millisecond {
			return false // a scrape every 100 ms at most: the host is shared
		}
		scraped = time.Now()
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		mfs := parse(t, body)
		names, _ := rcv.snapshot()
		files, _ := filepath.Glob(filepath.Join(o.SweepsDir, "sim", "*", "result.json"))
		state = fmt.Sprintf("session turns %v, static requests %v, discovered requests %v, answer checks %v, sweep success %v, successful sweeps %v, result.json %d, span names %d",
			hasSeries(mfs, "llmprobe_session_turns_total", map[string]string{"target": "sessions"}),
			hasSeries(mfs, "llmprobe_requests_total", map[string]string{"target": "sim", "probe": "p"}),
			hasSeries(mfs, "llmprobe_requests_total", map[string]string{"target": "found:" + strings.TrimPrefix(sim, "http://")}),
			hasSeries(mfs, "llmprobe_answer_checks_total", map[string]string{"target": "sim"}),
			hasSeries(mfs, "llmprobe_sweep_last_success_timestamp_seconds", nil),
			sweepRuns(mfs, "success"),
			len(files), len(names))
		if sweepRuns(mfs, "failed") > 0 {
			t.Fatalf("the scheduled sweep failed (it runs once an hour):\n%s", logs.String())
		}
		return hasSeries(mfs, "llmprobe_requests_total", map[string]string{"target": "sim", "probe": "p"}) &&
			hasSeries(mfs, "llmprobe_session_turns_total", map[string]string{"target": "sessions", "probe": "mt"}) &&
			hasSeries(mfs, "llmprobe_requests_total", map[string]string{"target": "found:" + strings.TrimPrefix(sim, "http://")}) &&
			hasSeries(mfs, "llmprobe_answer_checks_total", map[string]string{"target": "sim"}) &&
			hasSeries(mfs, "llmprobe_server_queue_seconds", map[string]string{"target": "sim", "probe": "p"}) &&
			hasSeries(mfs, "llmprobe_sweep_last_success_timestamp_seconds", nil) && sweepRuns(mfs, "success") > 0 &&
			len(files) > 0 && len(names) > 0
	})
	got := normalise(parse(t, body)) + "\n# /probe\n" + normalise(parse(t, probeBody))
	if *update {
		writeFile(t, goldenFile, got)
		return
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (go test ./internal/daemon -run TestGoldenMetrics -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("/metrics differs from %s (-update rewrites it after a deliberate change):\n%s", goldenFile, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// TestMetricsDocumented holds docs/metrics.md ("Everything llmprobe
// exports") to the golden: every llmprobe_ family of the daemon's /metrics
// and of /probe's answer is named in it (as `name`, or as a histogram's or
// counter's series `name_bucket`, ...).
func TestMetricsDocumented(t *testing.T) {
	golden, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	fam := regexp.MustCompile(`(?m)^((?:llmprobe_|probe_)[a-zA-Z0-9_]+) `)
	n := 0
	for _, m := range fam.FindAllStringSubmatch(string(golden), -1) {
		n++
		if !regexp.MustCompile("`" + regexp.QuoteMeta(m[1]) + "(_bucket|_sum|_count)?[`{]").Match(doc) {
			t.Errorf("docs/metrics.md does not name %s", m[1])
		}
	}
	if n < 20 {
		t.Errorf("the golden has %d llmprobe_ families; is it the daemon's /metrics?", n)
	}
}
