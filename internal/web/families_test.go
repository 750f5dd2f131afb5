package web

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/rules"
)

// TestLandingThresholdsAreTheRules reads every threshold the landing page
// evaluates back from the shipped rule files: a rule changed without the
// page (or the page without the rule) fails here.
func TestLandingThresholdsAreTheRules(t *testing.T) {
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, rule, series string
		want               limit
	}{
		{"BurnFastThreshold", AlertBurnFast, "target_probe:llmprobe_goodput_budget_burn:ratio_rate1h", limit{">", BurnFastThreshold}},
		{"BurnFastThreshold 5m", AlertBurnFast, "target_probe:llmprobe_goodput_budget_burn:ratio_rate5m", limit{">", BurnFastThreshold}},
		{"burnEarlyArrivals", AlertBurnFast, "target_probe:llmprobe_arrivals:increase15m", limit{">=", burnEarlyArrivals}},
		{"BurnSlowThreshold", AlertBurnSlow, "target_probe:llmprobe_goodput_budget_burn:ratio_rate6h", limit{">", BurnSlowThreshold}},
		{"LatencyAttainment ttft", AlertTTFTAboveSLO, "target_probe_slo:llmprobe_slo_attainment:ratio_rate5m", limit{"<", LatencyAttainment}},
		{"LatencyAttainment tpot", AlertTPOTAboveSLO, "target_probe_slo:llmprobe_slo_attainment:ratio_rate5m", limit{"<", LatencyAttainment}},
		{"answerPassRatio", AlertAnswerRegression, "target_probe:llmprobe_answer_checks_pass:ratio30m", answerPassRatio},
		{"answerMinJudged", AlertAnswerRegression, "target_probe:llmprobe_answer_checks_judged:increase30m", answerMinJudged},
		{"canaryMinSuccess", AlertCanaryRegression, "canary_probe:llmprobe_requests_success:min_increase10m", canaryMinSuccess},
		{"canaryTPOTMean", AlertCanaryRegression, "canary_probe:llmprobe_time_per_output_token_seconds_mean:ratio_10m", canaryTPOTMean},
		{"canaryTTFTMean", AlertCanaryRegression, "canary_probe:llmprobe_time_to_first_token_seconds_mean:ratio_10m", canaryTTFTMean},
		{"canaryTTFTP99", AlertCanaryRegression, "canary_probe:llmprobe_time_to_first_token_seconds_p99:ratio_10m", canaryTTFTP99},
		{"canaryTPOTP99", AlertCanaryRegression, "canary_probe:llmprobe_time_per_output_token_seconds_p99:ratio_10m", canaryTPOTP99},
		{"canaryGoodput", AlertCanaryRegression, "canary_probe:llmprobe_goodput:ratio_diff_rate10m", canaryGoodput},
		{"capacityRatio", AlertCapacityRegression, "target_sweep:llmprobe_sweep_knee_requests_per_second:ratio_median_7d", capacityRatio},
		{"capacityChanges", AlertCapacityRegression, "target_sweep:llmprobe_sweep_successes:changes_7d", capacityChanges},
		{"replicaRatio ttft", AlertReplicaOutlier, "service_target_probe:llmprobe_time_to_first_token_seconds_p99:ratio_median_10m", replicaRatio},
		{"replicaRatio tpot", AlertReplicaOutlier, "service_target_probe:llmprobe_time_per_output_token_seconds_p99:ratio_median_10m", replicaRatio},
		{"replicaMinSuccess", "service_probe:llmprobe_replicas:count10m", "service_target_probe:llmprobe_requests_success:increase10m", replicaMinSuccess},
		{"replicaMinCount", "service_probe:llmprobe_time_to_first_token_seconds_p99:median_10m", "service_probe:llmprobe_replicas:count10m", replicaMinCount},
	} {
		got, err := rules.FindThreshold(files, c.rule, c.series)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.Op != c.want.op || got.Value != c.want.v {
			t.Errorf("%s: the page has %s, %s has %s", c.name, c.want, c.rule, got)
		}
	}
}

// familiesFixture is a Window at now with 30 minutes of history: target
// "ans" whose answer checks fail (18 of 24 judged replies pass: 75 %), a
// canary pair whose candidate's TPOT is 1.5× the baseline's, a service of
// three replicas one of which is 3× slower, and a target swept for its last
// 10 minutes whose requests in that time all failed the SLO.
func familiesFixture(t *testing.T) (*Window, fixedStatus, time.Time) {
	t.Helper()
	now := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	clock := now.Add(-30 * time.Minute)
	w := NewWindow()
	w.now = func() time.Time { return clock }
	sweeping := false
	w.SetSweeping(func(target string) bool { return sweeping && target == "swept" })
	s := slo.SLO{TTFT: time.Second}
	names := []string{"ans", "base", "cand", "r1", "r2", "r3", "swept"}
	for _, n := range names {
		w.ProbeStarted(n, "p", manager.ProbeSettings{GoodputObjective: 0.99, SLO: s})
	}
	w.SetTargetLabels("base", map[string]string{"canary": "g", "role": "baseline"})
	w.SetTargetLabels("cand", map[string]string{"canary": "g", "role": "candidate"})
	for _, r := range []string{"r1", "r2", "r3"} {
		w.SetTargetLabels(r, map[string]string{"namespace": "ns", "service": "chat", "pod": r})
	}
	obs := func(target string, ttft, tpot time.Duration) {
		r := &prober.Record{Target: target, Probe: "p", TTFT: ttft, E2E: ttft + 9*tpot, CompletionTokens: 10}
		w.Observe(r, s.Verdict(r))
	}
	i := 0
	for ; !clock.After(now); clock = clock.Add(2 * time.Second) {
		i++
		sweeping = now.Sub(clock) < 10*time.Minute
		obs("ans", 20*time.Millisecond, 4*time.Millisecond)
		obs("base", 20*time.Millisecond, 4*time.Millisecond)
		obs("cand", 20*time.Millisecond, 6*time.Millisecond)
		obs("r1", 20*time.Millisecond, 4*time.Millisecond)
		obs("r2", 21*time.Millisecond, 4*time.Millisecond)
		obs("r3", 60*time.Millisecond, 4*time.Millisecond)
		if sweeping {
			obs("swept", 2*time.Second, 4*time.Millisecond) // over the 1s TTFT threshold: not good
		} else {
			obs("swept", 20*time.Millisecond, 4*time.Millisecond)
		}
		if i%30 == 0 && i/30 <= 24 { // one check a minute, the last 24 minutes' worth
			out := answer.Pass
			if i/30 > 18 {
				out = answer.Fail
			}
			w.AnswerChecked("ans", "quality", answer.Result{Check: "capital", Outcome: out, Time: clock})
			w.AnswerChecked("ans", "quality", answer.Result{Check: "broken", Outcome: answer.Error, Time: clock})
		}
	}
	clock = now
	var st fixedStatus
	for _, n := range names {
		st = append(st, manager.TargetStatus{Name: n})
	}
	return w, st, now
}

func alertsOf(d landingData, name string) []Alert {
	var out []Alert
	for _, a := range d.Alerts {
		if a.Name == name {
			out = append(out, a)
		}
	}
	return out
}

func TestLandingEvaluatesEveryFamily(t *testing.T) {
	w, st, now := familiesFixture(t)
	runs := []sweepd.Status{}
	for i, knee := range []float64{4, 5, 10, 9, 10} { // newest first: two low sweeps, the higher 5 of a 7-day median of 9
		fin := now.Add(-time.Duration(i+1) * 6 * time.Hour)
		runs = append(runs, sweepd.Status{ID: "s" + itoa(i), Target: "base", Name: "nightly", Status: sweepd.StatusDone,
			Finished: &fin, Result: &sweepd.ResultSummary{Complete: true, KneeFound: true, Knee: knee, KneeUnit: "req/s"}})
	}
	d := buildLanding(Options{Status: st, Window: w, Sweeps: &fakeSweeps{list: runs}}, now)

	ans := alertsOf(d, AlertAnswerRegression)
	if len(ans) != 1 || ans[0].Target != "ans" || ans[0].Severity != "critical" || math.Abs(ans[0].Value-18.0/24) > 1e-9 {
		t.Errorf("answer alerts: %+v, want one on ans at 18/24 (errors not counted)", ans)
	}
	can := alertsOf(d, AlertCanaryRegression)
	if len(can) != 1 || can[0].Target != "cand" || !strings.Contains(can[0].Text, "tpot_mean 1.500") {
		t.Errorf("canary alerts: %+v, want one on cand with tpot_mean 1.500", can)
	}
	capa := alertsOf(d, AlertCapacityRegression)
	if len(capa) != 1 || capa[0].Target != "base" || math.Abs(capa[0].Value-5.0/9) > 1e-9 {
		t.Errorf("capacity alerts: %+v, want one on base at 5/9", capa)
	}
	// One low sweep is jitter (the rule wants two in a row), and an
	// undecided one between them neither counts nor breaks the run.
	if got := capacityAlerts(runs[1:], now); len(got) != 0 {
		t.Errorf("one low sweep: %+v, want no capacity alert", got)
	}
	undecided := runs[0]
	undecided.Result = &sweepd.ResultSummary{Complete: true, KneeState: "undecided", KneeUnit: "req/s"}
	if got := capacityAlerts(append([]sweepd.Status{undecided}, runs...), now); len(got) != 1 {
		t.Errorf("two low sweeps with an undecided one before them: %+v, want one capacity alert", got)
	}
	rep := alertsOf(d, AlertReplicaOutlier)
	if len(rep) != 1 || rep[0].Target != "r3" || !strings.Contains(rep[0].Text, "ttft_p99") {
		t.Errorf("replica alerts: %+v, want one on r3 for ttft_p99", rep)
	}
	// Critical first.
	for i := 1; i < len(d.Alerts); i++ {
		if severityRank(d.Alerts[i-1].Severity) > severityRank(d.Alerts[i].Severity) {
			t.Errorf("alerts not ordered by urgency: %s before %s", d.Alerts[i-1].Severity, d.Alerts[i].Severity)
		}
	}
	// The swept target's budget leaves the sweep's minutes out: every
	// request it counts was good.
	for _, b := range d.Budgets {
		if b.Target == "swept" && b.SLO == "goodput" {
			if b.Bad != 0 || b.Total == 0 || b.Remaining != 1 {
				t.Errorf("swept target's goodput budget: %d bad of %d, %v left; want the sweep's minutes left out", b.Bad, b.Total, b.Remaining)
			}
		}
	}
	// The budgets of the targets with a firing alert come first, the
	// critical one's (ans) before the warnings'.
	if len(d.Budgets) == 0 || d.Budgets[0].Target != "ans" {
		t.Fatalf("first budget row %+v, want ans (its critical alert fires)", d.Budgets[:1])
	}

	// The rendered page names every family's alert.
	h := NewHandler(Options{Gatherer: prometheus.NewRegistry(), Status: st, Window: w, Sweeps: &fakeSweeps{list: runs}})
	code, page := do(t, h, "GET", "/")
	if code != 200 {
		t.Fatalf("GET /: %d %s", code, page)
	}
	for _, n := range []string{AlertAnswerRegression, AlertCanaryRegression, AlertCapacityRegression, AlertReplicaOutlier} {
		if !strings.Contains(page, `data-alert="`+n+`"`) {
			t.Errorf("the page shows no %s", n)
		}
	}
}

func TestLandingFamiliesQuietWhenHealthy(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	clock := now.Add(-30 * time.Minute)
	w := NewWindow()
	w.now = func() time.Time { return clock }
	var st fixedStatus
	for _, n := range []string{"base", "cand", "r1", "r2", "r3"} {
		st = append(st, manager.TargetStatus{Name: n})
	}
	w.SetTargetLabels("base", map[string]string{"canary": "g", "role": "baseline"})
	w.SetTargetLabels("cand", map[string]string{"canary": "g", "role": "candidate"})
	for _, r := range []string{"r1", "r2", "r3"} {
		w.SetTargetLabels(r, map[string]string{"namespace": "ns", "service": "chat"})
	}
	for i := 0; !clock.After(now); clock = clock.Add(2 * time.Second) {
		i++
		for _, n := range []string{"base", "cand", "r1", "r2", "r3"} {
			w.Observe(&prober.Record{Target: n, Probe: "p", TTFT: 20 * time.Millisecond, E2E: 56 * time.Millisecond, CompletionTokens: 10}, slo.Verdict{Good: true})
		}
		if i%30 == 0 {
			out := answer.Pass
			if i%300 == 0 {
				out = answer.Fail // 1 in 10: the ratio stays at 90 %, not below
			}
			w.AnswerChecked("base", "quality", answer.Result{Check: "c", Outcome: out})
		}
	}
	clock = now
	if as := familyAlerts(Options{Window: w}, st); len(as) != 0 {
		t.Errorf("healthy targets raise %+v", as)
	}
}
