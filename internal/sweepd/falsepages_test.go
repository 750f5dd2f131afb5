package sweepd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// falsePageSweeps is how many sweeps TestCapacityRegressionFalsePages runs.
const falsePageSweeps = 20

// TestCapacityRegressionFalsePages measures LLMProbeCapacityRegression's
// false pages on an unchanged server (issue 39 point 2: goal 0): 20 sweeps
// of one unchanged simulator through the daemon's sweep service, with a
// TTFT SLO near the simulator's own service time so the knee jitters from
// run to run, each knee reported as the daemon's gauges hold it (an
// undecided sweep leaves the knee and the previous knee as they were);
// the knee series, one sweep every 10 minutes, is then evaluated with
// promtool against rules/llmprobe.capacity.yml, expecting no alert at any
// sweep. A measurement, not a unit test: it runs only with
// LLMPROBE_FALSE_PAGES=1 (about 3 minutes) and needs promtool
// (.ci/test-rules.sh installs it). Its outcome depends on how steady the
// machine is: on a 2-core machine shared with other builds the knee swung
// between 50 and 800 req/s and two low sweeps in a row paged once in 20
// sweeps (docs/runbook.md, LLMProbeCapacityRegression).
func TestCapacityRegressionFalsePages(t *testing.T) {
	if os.Getenv("LLMPROBE_FALSE_PAGES") != "1" {
		t.Skip("a 3-minute measurement: set LLMPROBE_FALSE_PAGES=1")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("no promtool (bash .ci/install-prometheus.sh)")
	}
	url, _ := simtest.Start(t, fastSim())
	dir := t.TempDir()
	s := newService(t, dir, nil)
	s.Apply(targetsConfig(t, "", "sim", url))
	spec := config.SweepSpec{Name: "quick", Rates: config.Rates{Values: []float64{25, 50, 100, 200, 400, 800}}, NumPrompts: 100,
		InputLen: 32, OutputLen: 4, Warmups: -1, MaxSendLag: lag, MaxSchedLatency: lag,
		Goodput: slo.SLO{TTFT: 8 * time.Millisecond}}
	var knees, prevs []float64 // as the gauges hold them after each sweep; -1: absent
	knee, prev := -1.0, -1.0
	states := map[string]int{}
	for i := range falsePageSweeps {
		st, err := s.Start("sim", spec)
		if err != nil {
			t.Fatal(err)
		}
		done := wait(t, s, st.ID)
		if done.Status == StatusDone && done.Result != nil {
			states[done.Result.KneeState]++
			if done.Result.KneeState != capacity.StateUndecided {
				if knee >= 0 {
					prev = knee
				}
				knee = done.Result.Knee
			}
			t.Logf("sweep %d: %s knee %v (%s)", i+1, done.Result.KneeState, done.Result.Knee, done.Result.Reason)
		} else {
			states[done.Status]++
			t.Logf("sweep %d: %s %s", i+1, done.Status, done.Error)
		}
		knees, prevs = append(knees, knee), append(prevs, prev)
	}
	t.Logf("states: %v; knees as the gauge held them: %v", states, knees)
	if states[capacity.StateDecided]+states[capacity.StateBound] < falsePageSweeps/2 {
		t.Fatalf("only %v decided of %d sweeps: the series says nothing of the alert", states, falsePageSweeps)
	}
	positive := 0
	for _, k := range knees {
		if k > 0 {
			positive++
		}
	}
	if positive <= falsePageSweeps/2 {
		// A median of 0 leaves the alert nothing to compare with: no page,
		// but no evidence either (a machine too busy for the SLO).
		t.Skipf("the knee was 0 in %d of %d sweeps (this machine is too busy for the 8 ms TTFT SLO): no baseline to judge the alert against", falsePageSweeps-positive, falsePageSweeps)
	}

	// The series, one sweep every 10 minutes, a sample a minute.
	series := func(vals []float64) string {
		var parts []string
		for _, v := range vals {
			if v < 0 {
				parts = append(parts, "_x10")
				continue
			}
			parts = append(parts, fmt.Sprintf("%gx9", v))
		}
		return strings.Join(parts, " ")
	}
	var b strings.Builder
	rules, err := filepath.Abs(filepath.Join("..", "..", "rules", "llmprobe.capacity.yml"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n", rules)
	fmt.Fprintf(&b, "      - series: 'llmprobe_sweep_knee_requests_per_second{target=\"sim\",sweep=\"quick\"}'\n        values: '%s'\n", series(knees))
	fmt.Fprintf(&b, "      - series: 'llmprobe_sweep_knee_previous_requests_per_second{target=\"sim\",sweep=\"quick\"}'\n        values: '%s'\n", series(prevs))
	fmt.Fprintf(&b, "      - series: 'llmprobe_sweep_last_success_timestamp_seconds{target=\"sim\",sweep=\"quick\"}'\n        values: '600+600x%d'\n", 10*falsePageSweeps-1)
	b.WriteString("    alert_rule_test:\n")
	for i := range falsePageSweeps {
		fmt.Fprintf(&b, "      - alertname: LLMProbeCapacityRegression\n        eval_time: %dm\n        exp_alerts: []\n", 10*i+9)
	}
	p := filepath.Join(t.TempDir(), "falsepages.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", p).CombinedOutput()
	if err != nil {
		t.Errorf("LLMProbeCapacityRegression paged an unchanged server: %v\n%s\nknee series %v, previous %v", err, out, knees, prevs)
	}
}
