package web

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/rules"
)

// TestSLOStateBurnSlow: 10 % bad at a 0.99 objective is a burn of 10: the
// slow-burn condition (> 6 over 6h and 30m) holds once the daemon has 4h30m
// of history, the fast one (> 14.4) never; the budget of the window is
// overspent 9 times over. Hours later with no traffic nothing holds and the
// ring's stale minutes count for nothing.
func TestSLOStateBurnSlow(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f := newSLOFeed(start, 10*time.Second, 10, prober.ClassConnect)
	w, names, feedUntil := f.w, f.names, f.until
	feedUntil(start.Add(4 * time.Hour))
	if n := names(); len(n) != 0 {
		t.Errorf("after 4h (short of the 4h30m history): %v", n)
	}
	feedUntil(start.Add(5 * time.Hour))
	if n := names(); len(n) != 1 || n[0] != AlertBurnSlow {
		t.Errorf("after 5h: %v, want only %s", n, AlertBurnSlow)
	}
	_, b := w.State("t", false)
	if g := b[0]; g.SLO != "goodput" || math.Abs(g.Burn1h-10) > 0.5 || math.Abs(g.Remaining+9) > 0.01 || g.Window != 5*time.Hour {
		t.Errorf("goodput budget %+v, want burn about 10 (to the minute), remaining -9 over 5h", g)
	}
	if a, _ := w.State("t", true); len(a) != 0 {
		t.Errorf("while swept: %v (the burn conditions are muted)", a)
	}
	f.clock = f.clock.Add(7 * time.Hour)
	if n := names(); len(n) != 0 {
		t.Errorf("7h later without traffic: %v", n)
	}
	if _, b := w.State("t", false); b[0].Total != 0 || !math.IsNaN(b[0].Remaining) {
		t.Errorf("7h later: %+v, want nothing counted", b[0])
	}
}

// TestSLOStateFailing: max_concurrency skips alone make a target failing
// (the rules' denominator), too_long skips do not (the config's fault); an
// objective of 1 leaves no budget: one bad request is an infinite burn.
func TestSLOStateFailing(t *testing.T) {
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	w := NewWindow()
	w.now = func() time.Time { return clock }
	w.Skipped("cap", "p", manager.SkipMaxConcurrency)
	w.Skipped("long", "p", manager.SkipTooLong)
	if a, _ := w.State("cap", false); len(a) != 1 || a[0].Name != AlertTargetFailing {
		t.Errorf("max_concurrency skips: %v", a)
	}
	if a, _ := w.State("long", false); len(a) != 0 {
		t.Errorf("too_long skips: %v", a)
	}
	w.ProbeStarted("strict", "p", manager.ProbeSettings{GoodputObjective: 1})
	w.Observe(&prober.Record{Target: "strict"}, slo.Verdict{Good: true})
	w.Observe(&prober.Record{Target: "strict", Error: prober.ClassTimeout}, slo.Verdict{})
	_, b := w.State("strict", false)
	if !math.IsInf(b[0].Burn5m, 1) || !math.IsInf(b[0].Remaining, -1) || budgetPct(b[0].Remaining) != "exhausted" || burnText(b[0].Burn5m) != "∞" {
		t.Errorf("objective 1: %+v", b[0])
	}
}

// TestSLOStateMatchesRules: the daemon's thresholds and history guards are
// those of the shipped alerts it is named after.
func TestSLOStateMatchesRules(t *testing.T) {
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					exprs[r.Alert] = r.Expr
				}
			}
		}
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for alert, want := range map[string][]string{
		AlertBurnFast:      {"ratio_rate1h > " + f(BurnFastThreshold), "ratio_rate5m > " + f(BurnFastThreshold), "offset 45m", "llmprobe_sweep_running"},
		AlertBurnSlow:      {"ratio_rate6h > " + f(BurnSlowThreshold), "ratio_rate30m > " + f(BurnSlowThreshold), "offset 4h30m", "llmprobe_sweep_running"},
		AlertTTFTAboveSLO:  {`{slo="ttft"} < ` + f(LatencyAttainment), "llmprobe_sweep_running"},
		AlertTPOTAboveSLO:  {`{slo="tpot"} < ` + f(LatencyAttainment), "llmprobe_sweep_running"},
		AlertTargetFailing: {"target:llmprobe_target_failing:rate5m"},
	} {
		e, ok := exprs[alert]
		if !ok {
			t.Errorf("no shipped alert %s", alert)
			continue
		}
		for _, w := range want {
			if !strings.Contains(e, w) {
				t.Errorf("%s's expression lacks %q: the daemon's view would differ from it:\n%s", alert, w, e)
			}
		}
	}
	if burnFastHistory != 45*time.Minute || burnSlowHistory != 270*time.Minute || BudgetWindow != 6*time.Hour {
		t.Error("history guards or window changed without the rules")
	}
}

// TestSLOStateBurnFastEarly: a target observed for less than 45 minutes
// pages on the fast burn's early branch (15m and 2m burn rates over 14.4,
// at least 100 arrivals in 15 minutes, a success in the last 2), as
// LLMProbeGoodputBudgetBurnFast's second branch does; a total outage is
// TargetFailing's alone.
func TestSLOStateBurnFastEarly(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		failEach int // every failEach-th request fails (1: all)
		want     []string
	}{
		{"half failing", 2, []string{AlertBurnFast}},
		{"all failing", 1, []string{AlertTargetFailing}},
	} {
		f := newSLOFeed(start, 2*time.Second, tc.failEach, prober.ClassHTTP5xx)
		names, feedUntil := f.names, f.until
		feedUntil(start.Add(150 * time.Second)) // 75 arrivals: fewer than 100
		if n := names(); tc.failEach == 2 && len(n) != 0 {
			t.Errorf("%s, 75 arrivals: %v, want none yet", tc.name, n)
		}
		feedUntil(start.Add(6 * time.Minute))
		if n := names(); !slices.Equal(n, tc.want) {
			t.Errorf("%s after 6m: %v, want %v", tc.name, n, tc.want)
		}
	}
}

// sloFeed feeds a Window with one probe of target "t" (goodput objective
// 0.99) on a test clock: a request every `every`, every failEach-th failing
// with class fail.
type sloFeed struct {
	w        *Window
	clock    time.Time
	every    time.Duration
	failEach int
	fail     prober.ErrorClass
	i        int
}

func newSLOFeed(start time.Time, every time.Duration, failEach int, fail prober.ErrorClass) *sloFeed {
	f := &sloFeed{w: NewWindow(), clock: start, every: every, failEach: failEach, fail: fail}
	f.w.now = func() time.Time { return f.clock }
	f.w.ProbeStarted("t", "p", manager.ProbeSettings{GoodputObjective: 0.99})
	return f
}

// until feeds requests until the clock reaches end.
func (f *sloFeed) until(end time.Time) {
	for ; f.clock.Before(end); f.clock = f.clock.Add(f.every) {
		f.i++
		r := &prober.Record{Target: "t", TTFT: time.Millisecond, E2E: 2 * time.Millisecond, CompletionTokens: 2}
		if f.i%f.failEach == 0 {
			r.Error = f.fail
		}
		f.w.Observe(r, slo.Verdict{Good: r.OK()})
	}
}

// names lists the names of t's alerts.
func (f *sloFeed) names() []string { return alertNames(f.w, "t") }

// alertNames lists the names of target's alerts in w's view.
func alertNames(w *Window, target string) []string {
	a, _ := w.State(target, false)
	var out []string
	for _, x := range a {
		out = append(out, x.Name)
	}
	return out
}
