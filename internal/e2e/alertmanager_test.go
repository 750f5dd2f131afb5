//go:build e2e && unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/rules"
)

// The timeline of TestAlertmanagerOnePagePerIncident, in simulated time.
// Every incident starts at incidentStart after an hour of healthy history
// (the fast burn's history guard holds), and is watched until simEnd.
const (
	simStep       = 30 * time.Second // scrape and rule evaluation interval
	incidentStart = 60 * time.Minute
	simEnd        = 150 * time.Minute
	// speed compresses simulated time for the replay into Alertmanager: 100
	// simulated seconds per real second (150 minutes in 90 seconds), and
	// Alertmanager's group_wait, group_interval and repeat_interval are
	// divided by it too.
	speed = 100
)

// incident is one injected fault: its own llmprobe (its own series and, as a
// Prometheus of its own, external label cluster=name), the series of the
// whole timeline in promqltest's load notation, and the one alert that must
// page for it.
type incident struct {
	name   string
	series []string
	pages  string
}

// steps is the number of evaluation steps of the timeline (its last index).
const steps = int(simEnd / simStep)

// at returns the step index of simulated time d.
func at(d time.Duration) int { return int(d / simStep) }

// counter returns the values of a counter for every step: it grows by
// perStep(i) between step i-1 and step i. A counter that vanishes from step
// `gone` on (llmprobe killed) is marked stale there and missing after.
func counter(perStep func(i int) float64, gone int) string {
	return gapped(cumulative(perStep, 0), gone, steps+1)
}

// values returns a gauge's values: value(i) at step i, stale at gone.
func values(value func(i int) float64, gone int) string { return gapped(value, gone, steps+1) }

// gapped returns a series' values at every step: value(i), but stale at
// step from and missing after it until step to (from 0: no gap).
func gapped(value func(i int) float64, from, to int) string {
	var b strings.Builder
	for i := 0; i <= steps; i++ {
		switch {
		case from > 0 && i == from:
			b.WriteString(" stale")
		case from > 0 && i > from && i < to:
			b.WriteString(" _")
		default:
			fmt.Fprintf(&b, " %g", value(i))
		}
	}
	return b.String()
}

// cumulative returns a counter's value at each step: the sum of perStep
// from step 1, back to 0 at step reset (0: never).
func cumulative(perStep func(i int) float64, reset int) func(i int) float64 {
	sums := make([]float64, steps+1)
	for i := 1; i <= steps; i++ {
		if i != reset {
			sums[i] = sums[i-1] + perStep(i)
		}
	}
	return func(i int) float64 { return sums[i] }
}

// during returns a when step i lies after from and up to to, else b: a
// change at from shows from the next step on.
func during(i int, from, to time.Duration, a, b float64) float64 {
	if i > at(from) && i <= at(to) {
		return a
	}
	return b
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

// llmprobeSeries are the series every incident's llmprobe exports about
// itself and one healthy probe p of target sim (1 request/s, goodput
// objective 0.99), unless the incident replaces them.
func llmprobeSeries(gone int, sim bool) []string {
	out := []string{
		`up{job="llmprobe",instance="llmprobe:9741"}` + values(func(i int) float64 {
			if gone > 0 && i >= gone {
				return 0
			}
			return 1
		}, 0),
		`llmprobe_build_info{job="llmprobe",instance="llmprobe:9741",version="e2e"}` + values(constant(1), gone),
	}
	if sim {
		out = append(out, healthyProbe("sim", gone)...)
	}
	return out
}

// healthyProbe is probe p of target: 30 good requests per step.
func healthyProbe(target string, gone int) []string {
	return []string{
		fmt.Sprintf(`llmprobe_requests_total{target=%q,probe="p",outcome="success"}`, target) + counter(constant(30), gone),
		fmt.Sprintf(`llmprobe_good_requests_total{target=%q,probe="p"}`, target) + counter(constant(30), gone),
		fmt.Sprintf(`llmprobe_goodput_objective_ratio{target=%q,probe="p"}`, target) + values(constant(0.99), gone),
	}
}

// failingProbe is probe p of target sim failing every request with outcome
// from incidentStart for 20 minutes (skipped: arrivals skipped at the
// max_concurrency cap per step meanwhile, for a hang), healthy before and
// after.
func failingProbe(outcome string, finished, skipped float64) []string {
	bad := func(i int) bool { return during(i, incidentStart, incidentStart+20*time.Minute, 1, 0) == 1 }
	ok := func(i int) float64 {
		if bad(i) {
			return 0
		}
		return 30
	}
	return []string{
		`llmprobe_requests_total{target="sim",probe="p",outcome="success"}` + counter(ok, 0),
		`llmprobe_good_requests_total{target="sim",probe="p"}` + counter(ok, 0),
		fmt.Sprintf(`llmprobe_requests_total{target="sim",probe="p",outcome=%q}`, outcome) + counter(func(i int) float64 {
			if bad(i) {
				return finished
			}
			return 0
		}, 0),
		`llmprobe_requests_skipped_total{target="sim",probe="p",reason="max_concurrency"}` + counter(func(i int) float64 {
			if bad(i) {
				return skipped
			}
			return 0
		}, 0),
		`llmprobe_goodput_objective_ratio{target="sim",probe="p"}` + values(constant(0.99), 0),
	}
}

// slowCandidate is a canary group: baseline base and candidate cand, probe
// p at 1 request/s each, TPOT SLO 50 ms; every TPOT is 10 ms until
// incidentStart, then the candidate's are 60 ms (every request misses the
// SLO: not good).
func slowCandidate() []string {
	return canaryGroup(func(candidate bool, sel func(name, extra string) string) (func(int) float64, []string) {
		tpot := func(i int) float64 {
			if candidate && i > at(incidentStart) {
				return 0.06
			}
			return 0.01
		}
		lt := func(le float64) func(int) float64 {
			return func(i int) float64 {
				if tpot(i) <= le {
					return 30
				}
				return 0
			}
		}
		return lt(0.05), []string{
			sel("llmprobe_slo_threshold_seconds", `,slo="tpot"`) + values(constant(0.05), 0),
			sel("llmprobe_slo_violations_total", `,slo="tpot"`) + counter(func(i int) float64 { return 30 - lt(0.05)(i) }, 0),
			sel("llmprobe_time_per_output_token_seconds_sum", "") + counter(func(i int) float64 { return 30 * tpot(i) }, 0),
			sel("llmprobe_time_per_output_token_seconds_count", "") + counter(constant(30), 0),
			sel("llmprobe_time_per_output_token_seconds_bucket", `,le="0.0125"`) + counter(lt(0.0125), 0),
			sel("llmprobe_time_per_output_token_seconds_bucket", `,le="0.05"`) + counter(lt(0.05), 0),
			sel("llmprobe_time_per_output_token_seconds_bucket", `,le="0.075"`) + counter(lt(0.075), 0),
			sel("llmprobe_time_per_output_token_seconds_bucket", `,le="+Inf"`) + counter(constant(30), 0),
		}
	})
}

// canaryGroup is a canary group, baseline base and candidate cand, probe p
// at 30 requests a step each, goodput objective 0.99: each side's target
// labels and request counters, then what side gives for it (sel names a
// series of the side's probe; good is its good requests a step).
func canaryGroup(side func(candidate bool, sel func(name, extra string) string) (good func(int) float64, more []string)) []string {
	var out []string
	for _, s := range []struct{ target, role string }{{"base", "baseline"}, {"cand", "candidate"}} {
		sel := func(name, extra string) string {
			return fmt.Sprintf(`%s{target=%q,probe="p"%s}`, name, s.target, extra)
		}
		good, more := side(s.role == "candidate", sel)
		out = append(out,
			fmt.Sprintf(`llmprobe_target_labels{target=%q,canary="rollout",role=%q}`, s.target, s.role)+values(constant(1), 0),
			sel("llmprobe_requests_total", `,outcome="success"`)+counter(constant(30), 0),
			sel("llmprobe_good_requests_total", "")+counter(good, 0),
			sel("llmprobe_goodput_objective_ratio", "")+values(constant(0.99), 0))
		out = append(out, more...)
	}
	return out
}

// capacityDrop is a target whose scheduled sweep succeeds every 10 minutes
// with a knee of 100 requests/s, and with 60 from incidentStart on; the
// previous decided knee follows one sweep later (LLMProbeCapacityRegression
// wants two low sweeps in a row). With restart, llmprobe restarts at
// restartAt for a minute (its gauges stale, then read back from its sweeps
// directory: the same values).
func capacityDrop(restart bool) []string {
	lastSuccess := func(i int) float64 {
		t := time.Duration(i) * simStep
		return float64((t / (10 * time.Minute)) * 600)
	}
	g := func(v func(int) float64) string { return values(v, 0) }
	if restart {
		g = func(v func(int) float64) string { return restartValues(v, at(restartAt), at(restartAt+time.Minute)) }
	}
	return []string{
		`llmprobe_sweep_knee_requests_per_second{target="sim",sweep="nightly"}` + g(func(i int) float64 {
			return during(i, incidentStart, simEnd+time.Minute, 60, 100)
		}),
		`llmprobe_sweep_knee_previous_requests_per_second{target="sim",sweep="nightly"}` + g(func(i int) float64 {
			return during(i, incidentStart+10*time.Minute, simEnd+time.Minute, 60, 100)
		}),
		`llmprobe_sweep_knee_decided{target="sim",sweep="nightly"}` + g(constant(1)),
		`llmprobe_sweep_last_success_timestamp_seconds{target="sim",sweep="nightly"}` + g(lastSuccess),
		`llmprobe_sweep_interval_seconds{target="sim",sweep="nightly"}` + g(constant(600)),
		`llmprobe_sweep_running{target="sim",sweep="nightly"}` + g(constant(0)),
	}
}

// restartAt is when the restart incidents restart llmprobe, for a minute:
// 40 minutes into the fault, while its alert fires.
const restartAt = incidentStart + 40*time.Minute

// restartValues is values with llmprobe restarted at step from: stale
// there, missing until step to, then value(i) again.
func restartValues(value func(i int) float64, from, to int) string { return gapped(value, from, to) }

// restartedLLMProbe is llmprobeSeries(0, true) with llmprobe restarted at
// restartAt for a minute: not scraped (up 0), its series stale, then its
// counters from 0.
func restartedLLMProbe() []string {
	from, to := at(restartAt), at(restartAt+time.Minute)
	c := func(f func(int) float64) string { return restartCounter(f, from, to) }
	return []string{
		`up{job="llmprobe",instance="llmprobe:9741"}` + values(func(i int) float64 {
			if i >= from && i < to {
				return 0
			}
			return 1
		}, 0),
		`llmprobe_build_info{job="llmprobe",instance="llmprobe:9741",version="e2e"}` + restartValues(constant(1), from, to),
		`llmprobe_requests_total{target="sim",probe="p",outcome="success"}` + c(constant(30)),
		`llmprobe_good_requests_total{target="sim",probe="p"}` + c(constant(30)),
		`llmprobe_goodput_objective_ratio{target="sim",probe="p"}` + restartValues(constant(0.99), from, to),
	}
}

// restartCounter is counter with llmprobe restarted at step from: stale
// there, missing until step to, then counting again from 0.
func restartCounter(perStep func(i int) float64, from, to int) string {
	return gapped(cumulative(perStep, to), from, to)
}

// halfFailing is probe of target sim (30 requests per step) failing half
// its requests from incidentStart + after on; restart, when set, restarts
// llmprobe at restartAt for a minute.
func halfFailing(probe string, after time.Duration, restart bool) []string {
	bad := func(i int) bool { return during(i, incidentStart+after, simEnd, 1, 0) == 1 }
	ok := func(i int) float64 {
		if bad(i) {
			return 15
		}
		return 30
	}
	fail := func(i int) float64 { return 30 - ok(i) }
	c := func(f func(int) float64) string { return counter(f, 0) }
	g := func(v float64) string { return values(constant(v), 0) }
	if restart {
		from, to := at(restartAt), at(restartAt+time.Minute)
		c = func(f func(int) float64) string { return restartCounter(f, from, to) }
		g = func(v float64) string { return restartValues(constant(v), from, to) }
	}
	sel := func(name, extra string) string {
		return fmt.Sprintf(`%s{job="llmprobe",instance="llmprobe:9741",target="sim",probe=%q%s}`, name, probe, extra)
	}
	return []string{
		sel("llmprobe_requests_total", `,outcome="success"`) + c(ok),
		sel("llmprobe_requests_total", `,outcome="http_5xx"`) + c(fail),
		sel("llmprobe_good_requests_total", "") + c(ok),
		sel("llmprobe_goodput_objective_ratio", "") + g(0.99),
	}
}

// canarySpread is a canary group, baseline base and candidate cand, probe
// p at 1 request/s each, no SLO: the candidate's mean TPOT is 1.5 times
// the baseline's from incidentStart, its mean TTFT too from 10 minutes
// later (a second figure joins the regression).
func canarySpread() []string {
	return canaryGroup(func(candidate bool, sel func(name, extra string) string) (func(int) float64, []string) {
		slowFrom := func(d time.Duration) func(int) float64 {
			return func(i int) float64 {
				if candidate && i > at(incidentStart+d) {
					return 1.5
				}
				return 1
			}
		}
		tpot, ttft := slowFrom(0), slowFrom(10*time.Minute)
		return constant(30), []string{
			sel("llmprobe_time_per_output_token_seconds_sum", "") + counter(func(i int) float64 { return 30 * 0.01 * tpot(i) }, 0),
			sel("llmprobe_time_per_output_token_seconds_count", "") + counter(constant(30), 0),
			sel("llmprobe_time_to_first_token_seconds_sum", "") + counter(func(i int) float64 { return 30 * 0.1 * ttft(i) }, 0),
			sel("llmprobe_time_to_first_token_seconds_count", "") + counter(constant(30), 0),
		}
	})
}

// hostSaturated is one llmprobe process with eight targets that answer
// (probe p, 30 requests per step): from incidentStart 10 % of every
// target's sends leave more than 100 ms late (a busy host).
func hostSaturated() []string {
	var out []string
	for n := 1; n <= 8; n++ {
		sel := func(name, extra string) string {
			return fmt.Sprintf(`%s{job="llmprobe",instance="llmprobe:9741",target="t%d",probe="p"%s}`, name, n, extra)
		}
		out = append(out,
			sel("llmprobe_requests_total", `,outcome="success"`)+counter(constant(30), 0),
			sel("llmprobe_good_requests_total", "")+counter(constant(30), 0),
			sel("llmprobe_goodput_objective_ratio", "")+values(constant(0.99), 0),
			sel("llmprobe_request_send_lag_seconds_bucket", `,le="0.1"`)+counter(func(i int) float64 {
				return during(i, incidentStart, simEnd, 27, 30)
			}, 0),
			sel("llmprobe_request_send_lag_seconds_bucket", `,le="+Inf"`)+counter(constant(30), 0),
		)
	}
	return out
}

// incidents are the five faults of issue 21 D4 and the four of issue 39
// Deliver 4, each with the one alert that pages for it.
func incidents() []incident {
	killed := at(incidentStart)
	return []incident{
		{name: "hang", pages: "LLMProbeTargetFailing",
			series: append(llmprobeSeries(0, false), failingProbe("timeout", 4, 26)...)},
		{name: "5xx", pages: "LLMProbeTargetFailing",
			series: append(llmprobeSeries(0, false), failingProbe("http_5xx", 30, 0)...)},
		{name: "slow-candidate", pages: "LLMProbeGoodputBudgetBurnFast",
			series: append(llmprobeSeries(0, false), slowCandidate()...)},
		// A reload failed at 20m (a page before the incident); llmprobe is
		// killed at incidentStart and stays down.
		{name: "llmprobe-killed", pages: "LLMProbeDown",
			series: append(llmprobeSeries(killed, true),
				`llmprobe_config_last_reload_successful{job="llmprobe",instance="llmprobe:9741"}`+values(func(i int) float64 {
					return during(i, 20*time.Minute, simEnd, 0, 1)
				}, killed))},
		{name: "capacity-drop", pages: "LLMProbeCapacityRegression",
			series: append(llmprobeSeries(0, true), capacityDrop(false)...)},
		// Issue 39 Deliver 4: an incident over several probes, figures or
		// targets, and an llmprobe restart during one, page once.
		{name: "two-probes-burn", pages: "LLMProbeGoodputBudgetBurnFast",
			series: slices.Concat(llmprobeSeries(0, false), halfFailing("p", 0, false), halfFailing("answers", 450*time.Second, false))},
		{name: "canary-spreads", pages: "LLMProbeCanaryRegression",
			series: append(llmprobeSeries(0, false), canarySpread()...)},
		{name: "host-saturated", pages: "LLMProbeProberSaturated",
			series: append(llmprobeSeries(0, false), hostSaturated()...)},
		{name: "restart-during-burn", pages: "LLMProbeGoodputBudgetBurnFast",
			series: slices.Concat(restartedLLMProbe()[:2], halfFailing("p", 0, true))},
		{name: "restart-during-capacity-drop", pages: "LLMProbeCapacityRegression",
			series: append(restartedLLMProbe(), capacityDrop(true)...)},
	}
}

// sent is one batch of alerts Prometheus' rule manager hands its notifier
// at one evaluation, as Alertmanager's API takes them, times still
// simulated.
type sent struct {
	at     time.Duration
	alerts []simAlert
}

type simAlert struct {
	labels, annotations map[string]string
	startsAt, endsAt    time.Duration
}

// evaluate runs the real rule files (rules/*.yml and rules/optional/*.yml,
// unchanged) with promtool (Debian's, the Prometheus rule engine of CI's
// rule tests) over the incident's series, every simStep from 0 to simEnd,
// and returns what a Prometheus with external label cluster=<incident>
// would send to Alertmanager. promtool reports the alerts firing at each
// step (as the "got" of a test that expects none); a new firing alert is
// sent at once, a firing one again every minute (Prometheus' resend delay)
// with an end 4 minutes ahead, a resolved one once with its end.
func evaluate(t *testing.T, root, dir string, inc incident) []sent {
	t.Helper()
	files, groups := ruleFilesInOrder(t, root)
	alerts := alertNames(t, files)
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files:\n")
	for _, f := range files {
		fmt.Fprintf(&b, "  - %s\n", f)
	}
	fmt.Fprintf(&b, "evaluation_interval: %s\ngroup_eval_order:\n", simStep)
	for _, g := range groups {
		fmt.Fprintf(&b, "  - %s\n", g)
	}
	fmt.Fprintf(&b, "tests:\n  - interval: %s\n    external_labels: {cluster: %q}\n    input_series:\n", simStep, inc.name)
	for _, s := range inc.series {
		name, vals, _ := strings.Cut(s, " ")
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", name, vals)
	}
	fmt.Fprintf(&b, "    alert_rule_test:\n")
	for i := 0; i <= steps; i++ {
		for _, a := range alerts {
			fmt.Fprintf(&b, "      - {alertname: %s, eval_time: %s, exp_alerts: []}\n", a, time.Duration(i)*simStep)
		}
	}
	path := filepath.Join(dir, inc.name+".promtool.yml")
	writeFile(t, path, b.String())
	out, err := exec.Command("promtool", "test", "rules", path).CombinedOutput()
	if err == nil {
		return nil // nothing fired at all
	}
	firing := parseFiring(t, inc.name, out)
	var (
		timeline []sent
		prev     = map[string]simAlert{}
		lastSent = map[string]time.Duration{}
	)
	for i := 0; i <= steps; i++ {
		ts := time.Duration(i) * simStep
		var batch []simAlert
		now := map[string]simAlert{}
		for k, a := range firing[ts] {
			if p, ok := prev[k]; ok {
				a.startsAt = p.startsAt
			} else {
				a.startsAt = ts
			}
			now[k] = a
			if last, ok := lastSent[k]; !ok || ts-last >= time.Minute || prev[k].labels == nil {
				a.endsAt = ts + 4*time.Minute
				batch = append(batch, a)
				lastSent[k] = ts
			}
		}
		for k, a := range prev {
			if _, ok := now[k]; !ok {
				a.endsAt = ts
				batch = append(batch, a)
				delete(lastSent, k)
			}
		}
		prev = now
		if len(batch) > 0 {
			timeline = append(timeline, sent{at: ts, alerts: batch})
		}
	}
	return timeline
}

var (
	gotAlertLine  = regexp.MustCompile(`^\s*alertname: (\S+), time: (\S+), $`)
	gotLabelsLine = regexp.MustCompile(`^\s*Labels:(\{.*\})$`)
)

// parseFiring reads promtool's failures: for every step, the firing alerts
// (by their label set), with labels alertname and cluster.
func parseFiring(t *testing.T, name string, out []byte) map[time.Duration]map[string]simAlert {
	t.Helper()
	firing := map[time.Duration]map[string]simAlert{}
	var (
		ts    time.Duration
		inGot bool
		n     int
	)
	for _, line := range strings.Split(string(out), "\n") {
		if m := gotAlertLine.FindStringSubmatch(line); m != nil {
			d, err := model.ParseDuration(m[2])
			if err != nil {
				t.Fatalf("%s: promtool time %q: %v", name, m[2], err)
			}
			ts, inGot = time.Duration(d), false
			continue
		}
		if strings.TrimSpace(line) == "got:[" {
			inGot = true
			continue
		}
		m := gotLabelsLine.FindStringSubmatch(line)
		if !inGot || m == nil {
			continue
		}
		ls, err := rules.NewParser().ParseMetric(m[1])
		if err != nil {
			t.Fatalf("%s: promtool labels %q: %v", name, m[1], err)
		}
		a := simAlert{labels: ls.Map()}
		a.labels["cluster"] = name
		if firing[ts] == nil {
			firing[ts] = map[string]simAlert{}
		}
		firing[ts][labels.FromMap(a.labels).String()] = a
		n++
	}
	if n == 0 {
		t.Fatalf("%s: promtool failed without reporting a firing alert:\n%s", name, out)
	}
	return firing
}

// ruleFilesInOrder returns the rule files Prometheus would load and their
// groups in evaluation order: llmprobe.rules.yml first (the recording rules
// the others read), then the other shared files, then the opt-in ones, each
// file's groups in file order, so every recorded series is computed before
// it is read in the same round, as in the promtool tests.
func ruleFilesInOrder(t *testing.T, root string) (files, groups []string) {
	t.Helper()
	shared, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	opt, err := rules.LoadOptional()
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(shared, func(i, j int) bool {
		return shared[i].Name == "llmprobe.rules.yml" && shared[j].Name != "llmprobe.rules.yml"
	})
	for _, f := range append(shared, opt...) {
		files = append(files, filepath.Join(root, "rules", f.Name))
		for _, g := range f.Groups {
			groups = append(groups, g.Name)
		}
	}
	return files, groups
}

// alertNames returns every alert the rule files define.
func alertNames(t *testing.T, files []string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := rules.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			for _, r := range g.Rules {
				if r.Alert != "" {
					out = append(out, r.Alert)
				}
			}
		}
	}
	return out
}

// webhook is the body of one webhook call of Alertmanager.
type webhook struct {
	Status string            `json:"status"`
	Group  map[string]string `json:"groupLabels"`
	Alerts []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

// notification is one webhook call of Alertmanager.
type notification struct {
	sim time.Duration // when it came, in simulated time
	webhook
}

// TestAlertmanagerOnePagePerIncident injects the five incidents of issue 21
// D4 (a hang, HTTP 5xx, a slow canary candidate, llmprobe killed, a
// capacity drop) and the six of issue 39 D4 (two probes of a target
// burning, a canary regression that spreads to a second figure, eight late
// targets of one llmprobe, llmprobe restarted during a burn and during a
// capacity drop), evaluates llmprobe's real rule files over their series
// with Prometheus' own rule manager (simulated time: an hour of history, the
// incident, 90 minutes after), replays the alerts that Prometheus would
// send into a real Alertmanager (Debian's prometheus-alertmanager) running
// deploy/alertmanager/alertmanager.yml with its inhibition rules, and counts
// the notifications its webhook receiver gets per incident after the
// incident started: exactly one each, from the expected alert, and no
// "resolved" while llmprobe is down, and none in the healthy hour before
// each fault. It logs each incident's detection time
// (from the fault to the notification, in simulated time).
func TestAlertmanagerOnePagePerIncident(t *testing.T) {
	if dl, ok := t.Deadline(); ok {
		hardDeadline = dl.Add(-deadlineMargin)
	}
	amBin := lookPath(t, ".ci/e2e.sh", "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	incs := incidents()
	timelines := map[string][]sent{}
	for _, inc := range incs {
		timelines[inc.name] = evaluate(t, root, dir, inc)
	}

	var (
		mu  sync.Mutex
		got []notification
		r0  time.Time
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notification
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("webhook: %v: %s", err, body)
		}
		mu.Lock()
		n.sim = time.Duration(float64(time.Since(r0)) * speed)
		got = append(got, n)
		mu.Unlock()
	}))
	defer hook.Close()

	amAddr, _ := startAlertmanager(t, dir, amBin, alertmanagerConfig(t, filepath.Join(root, "deploy", "alertmanager", "alertmanager.yml"),
		hook.URL, func(_ string, d time.Duration) time.Duration { return d / speed }))

	// Replay: every batch at its simulated time, compressed by speed.
	r0 = time.Now()
	real := func(d time.Duration) time.Time { return r0.Add(d / speed) }
	type post struct {
		at     time.Duration
		alerts []simAlert
	}
	var posts []post
	for _, tl := range timelines {
		for _, b := range tl {
			posts = append(posts, post(b))
		}
	}
	sort.SliceStable(posts, func(i, j int) bool { return posts[i].at < posts[j].at })
	end, capped := until(simEnd/speed + 30*time.Second)
	if capped {
		t.Fatalf("not enough time left for the %s replay%s", simEnd/speed, cappedNote(capped))
	}
	for _, p := range posts {
		time.Sleep(time.Until(real(p.at)))
		postAlerts(t, "http://"+amAddr, p.alerts, real)
	}
	// Let the last group_interval pass.
	time.Sleep(time.Until(real(simEnd + 10*time.Minute)))
	if time.Now().After(end) {
		t.Fatal("replay overran its time")
	}

	mu.Lock()
	defer mu.Unlock()
	for _, inc := range incs {
		var pages, resolved, healthy []string
		for _, n := range got {
			if n.Group["cluster"] == inc.name && n.sim < incidentStart {
				healthy = append(healthy, fmt.Sprintf("%s %s at %s", n.Status, n.Group["alertname"], n.sim.Round(time.Second)))
			}
			// After simEnd the replay stops and the alerts' ends pass: the
			// "resolved" notifications then are the replay's, not the rules'.
			if n.Group["cluster"] != inc.name || n.sim < incidentStart || n.sim > simEnd {
				continue
			}
			line := fmt.Sprintf("%s %s at +%s", n.Status, n.Group["alertname"], (n.sim - incidentStart).Round(time.Second))
			if n.Status == "firing" {
				pages = append(pages, line)
			} else {
				resolved = append(resolved, line)
			}
		}
		t.Logf("%s: %d notification(s) after the fault: %v; resolved: %v", inc.name, len(pages), pages, resolved)
		// The hour before the fault is healthy (llmprobe-killed's failed
		// reload at 20m aside): no notification.
		if inc.name != "llmprobe-killed" && len(healthy) > 0 {
			t.Errorf("%s: notifications during the healthy hour before the fault: %v", inc.name, healthy)
		}
		if len(pages) != 1 || !strings.Contains(pages[0], " "+inc.pages+" ") {
			t.Errorf("%s: want one notification, from %s; got %v", inc.name, inc.pages, pages)
		}
		if inc.name == "llmprobe-killed" && len(resolved) > 0 {
			t.Errorf("%s: resolved notifications while llmprobe is down: %v", inc.name, resolved)
		}
		fired := map[string]bool{}
		for _, b := range timelines[inc.name] {
			for _, a := range b.alerts {
				if b.at >= incidentStart {
					fired[a.labels["alertname"]] = true
				}
				if a.labels["alertname"] == inc.pages && a.startsAt >= incidentStart && b.at == a.startsAt {
					t.Logf("%s: %s fired %s after the fault (promtool's rule evaluation, every %s)", inc.name, inc.pages, a.startsAt-incidentStart, simStep)
				}
			}
		}
		names := slices.Sorted(maps.Keys(fired))
		t.Logf("%s: alerts firing in Prometheus after the fault (the others muted or routed to null): %v", inc.name, names)
	}
}

// alertmanagerConfig returns the Alertmanager configuration of path with
// its receiver "page" sending to a webhook at url and its route's timings
// (group_wait, group_interval, repeat_interval) replaced by timing(key,
// value); the inhibition rules and the routing are unchanged.
func alertmanagerConfig(t *testing.T, path, url string, timing func(key string, d time.Duration) time.Duration) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	route, _ := cfg["route"].(map[string]any)
	for _, k := range []string{"group_wait", "group_interval", "repeat_interval"} {
		s, _ := route[k].(string)
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("route %s %q: %v", k, s, err)
		}
		route[k] = timing(k, d).String()
	}
	found := false
	for _, r := range cfg["receivers"].([]any) {
		r := r.(map[string]any)
		if r["name"] == "page" {
			r["webhook_configs"] = []any{map[string]any{"url": url, "send_resolved": true}}
			found = true
		}
	}
	if !found {
		t.Fatalf("%s has no receiver \"page\"", path)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// postAlerts posts alerts to Alertmanager's v2 API, times mapped to real
// time.
func postAlerts(t *testing.T, base string, alerts []simAlert, real func(time.Duration) time.Time) {
	t.Helper()
	type postable struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
	}
	var body []postable
	for _, a := range alerts {
		body = append(body, postable{Labels: a.labels, Annotations: a.annotations, StartsAt: real(a.startsAt), EndsAt: real(a.endsAt)})
	}
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/api/v2/alerts", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("post alerts: %s: %s", resp.Status, msg)
	}
}
