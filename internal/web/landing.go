package web

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/common/version"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// recentSweeps is how many sweeps the landing page lists.
const recentSweeps = 10

// landingData is what the landing page shows, top to bottom: the alerts
// firing in the daemon's view, the error budgets, the per-target summary,
// the canary pairs, the recent sweeps, then every target's probes.
type landingData struct {
	Version string
	Now     time.Time
	// Shard is the replica's shard line ("" when not sharded).
	Shard string
	// HasWindow says the daemon's view (alerts, budgets, summary) is on.
	HasWindow bool
	Alerts    []Alert
	Budgets   []budgetRow
	Summaries []summaryRow
	Canary    []canaryGroup
	// Sweeps are the recent sweeps (newest first); SweepLinks says their
	// files can be linked (the sweep API is on).
	Sweeps     []sweepRow
	SweepLinks bool
	Targets    []targetView
}

// targetView is one target's section.
type targetView struct {
	manager.TargetStatus
	// Engine is the engine discovery found ("" not yet); SweepID the
	// sweep running on the target ("" none).
	Engine, SweepID string
	// Answers are the last results of the target's answer checks.
	Answers []AnswerRow
}

// summaryRow is one target's line of the landing page's summary.
type summaryRow struct {
	TargetSummary
	Engine string
	// Knee is the last successful sweep's knee ("-" when none,
	// "undecided" when it could not decide one), KneeAge how long ago it
	// ended, Sweep the sweep's name; SweepID is the sweep running on the
	// target now ("" none); LastFailed the reason the target's newest
	// sweep failed ("" when it did not).
	Knee, KneeAge, Sweep, SweepID, LastFailed string
}

// budgetRow is one SLO's error budget of one target.
type budgetRow struct {
	Target string
	Budget
}

// sweepRow is one line of the recent sweeps.
type sweepRow struct {
	ID, Target, Name, Origin, Status string
	Created                          time.Time
	Step                             *sweepd.StepProgress
	Files                            []string
	// Knee is the result's knee in words; Reason why the sweep failed or
	// was canceled, or how its knee was decided.
	Knee, Reason string
}

// canaryGroup is one canary pair, side by side: each figure of the
// baseline's and of the candidate's targets pooled over the last
// SummaryWindow, and their ratio.
type canaryGroup struct {
	Name                  string
	Baseline, Candidate   []string
	BaselineN, CandidateN int
	Figures               []canaryFigure
}

type canaryFigure struct {
	Name, Baseline, Candidate, Ratio string
}

// buildLanding gathers the landing page at now.
func buildLanding(o Options, now time.Time) landingData {
	var ts []manager.TargetStatus
	if o.Status != nil {
		ts = o.Status.Status()
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	d := landingData{Version: version.Info(), Now: now, SweepLinks: o.EnableSweeps, HasWindow: o.Window != nil}
	if o.Shard != nil {
		d.Shard = o.Shard()
	}
	var all []sweepd.Status
	if o.Sweeps != nil {
		all = o.Sweeps.List()
		for _, st := range all[:min(len(all), recentSweeps)] {
			d.Sweeps = append(d.Sweeps, sweepRowOf(st))
		}
	}
	for _, t := range ts {
		v := targetView{TargetStatus: t}
		if o.Sweeps != nil {
			v.SweepID, _ = o.Sweeps.Running(t.Name)
		}
		if o.Window != nil {
			v.Engine, _, _ = o.Window.Meta(t.Name)
			v.Answers = o.Window.Answers(t.Name)
			alerts, budgets := o.Window.State(t.Name, v.SweepID != "")
			d.Alerts = append(d.Alerts, alerts...)
			for _, b := range budgets {
				d.Budgets = append(d.Budgets, budgetRow{Target: t.Name, Budget: b})
			}
			d.Summaries = append(d.Summaries, summaryOf(o, t.Name, v, all, now))
		}
		d.Targets = append(d.Targets, v)
	}
	if o.Window != nil {
		d.Alerts = append(d.Alerts, familyAlerts(o, ts)...)
		d.Canary = canaryGroups(o.Window, ts)
	}
	sortByUrgency(d.Alerts, d.Budgets)
	return d
}

// summaryOf is target's summary row: the Window's last 5 minutes and the
// sweeps' last knee.
func summaryOf(o Options, target string, v targetView, all []sweepd.Status, now time.Time) summaryRow {
	r := summaryRow{TargetSummary: o.Window.Summary(target), Engine: v.Engine, Knee: "-", KneeAge: "-", SweepID: v.SweepID}
	if o.Sweeps == nil {
		return r
	}
	if name, last, ok := o.Sweeps.LastOf(target); ok {
		r.Knee = lastKnee(last)
		r.KneeAge, r.Sweep = ago(now, last.Finished), name
	}
	for _, st := range all { // newest first
		if st.Target != target || st.Status == sweepd.StatusRunning {
			continue
		}
		if st.Status == sweepd.StatusFailed {
			r.LastFailed = st.Error
			if r.LastFailed == "" {
				r.LastFailed = "failed (no reason recorded)"
			}
		}
		break
	}
	return r
}

// lastKnee words a target's last knee in the knee states' words
// (capacity.States, as result.json's knee.state and the state label of
// llmprobe_sweep_knee_state): kneeText.
func lastKnee(l capacity.Last) string {
	return kneeText(l.StateOf(), l.Knee, l.KneeUnit)
}

// kneeText words a knee of state (capacity.States): "decided: 12 req/s",
// "decided: 0 req/s (below the lowest level)" (the lowest level run failed
// on valid evidence), "bound: ≥ 8 req/s" (a lower bound), "undecided" (no
// valid evidence: no figure).
func kneeText(state string, knee float64, unit string) string {
	if unit == "" {
		unit = "req/s"
	}
	v := strconv.FormatFloat(knee, 'g', 4, 64) + " " + unit
	switch state {
	case capacity.StateUndecided:
		return capacity.StateUndecided
	case capacity.StateBound:
		return capacity.StateBound + ": ≥ " + v
	case capacity.StateDecided:
		if knee == 0 {
			return capacity.StateDecided + ": " + v + " (below the lowest level)"
		}
		return capacity.StateDecided + ": " + v
	}
	return state + ": " + v
}

// summaryState is the knee state of a sweep's result summary: its
// KneeState, or for a summary written before states existed what its
// other fields give (bracketed: decided; a lower bound above 0: bound;
// a knee of 0: undecided, since such a summary does not tell too few
// samples from no level passing, and its reason, shown, says which).
func summaryState(res *sweepd.ResultSummary) string {
	switch {
	case res.KneeState != "":
		return res.KneeState
	case res.KneeFound:
		return capacity.StateDecided
	case res.Knee > 0:
		return capacity.StateBound
	}
	return capacity.StateUndecided
}

// sweepRowOf words one recent sweep.
func sweepRowOf(st sweepd.Status) sweepRow {
	r := sweepRow{ID: st.ID, Target: st.Target, Name: st.Name, Origin: st.Origin, Status: st.Status, Created: st.Created,
		Step: st.Step, Files: st.Files, Knee: "-", Reason: st.Error}
	if res := st.Result; res != nil {
		r.Knee = kneeText(summaryState(res), res.Knee, res.KneeUnit)
		if r.Reason == "" {
			r.Reason = res.InterruptedReason
		}
		if r.Reason == "" {
			r.Reason = res.Reason
		}
	}
	return r
}

// canaryPairs pairs the targets labelled canary=<group> role=baseline or
// role=candidate (rules/llmprobe.canary.yml), groups by name, without
// figures.
func canaryPairs(w *Window, ts []manager.TargetStatus) []canaryGroup {
	by := map[string]*canaryGroup{}
	for _, t := range ts {
		_, group, role := w.Meta(t.Name)
		if group == "" || (role != "baseline" && role != "candidate") {
			continue
		}
		g := by[group]
		if g == nil {
			g = &canaryGroup{Name: group}
			by[group] = g
		}
		if role == "baseline" {
			g.Baseline = append(g.Baseline, t.Name)
		} else {
			g.Candidate = append(g.Candidate, t.Name)
		}
	}
	out := make([]canaryGroup, 0, len(by))
	for _, n := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[n])
	}
	return out
}

// canaryGroups is canaryPairs with each group's figures over the last
// SummaryWindow.
func canaryGroups(w *Window, ts []manager.TargetStatus) []canaryGroup {
	gs := canaryPairs(w, ts)
	for i := range gs {
		g := &gs[i]
		b, c := w.Side(g.Baseline), w.Side(g.Candidate)
		g.BaselineN, g.CandidateN = b.Requests, c.Requests
		g.Figures = canaryFigures(b, c)
	}
	return gs
}

func canaryFigures(b, c TargetSummary) []canaryFigure {
	count := func(s TargetSummary) string { return strconv.Itoa(s.Requests) }
	rate := func(x float64, n int) string {
		if n == 0 {
			return "-"
		}
		return pct(x)
	}
	f := []canaryFigure{
		{Name: "requests", Baseline: count(b), Candidate: count(c), Ratio: "-"},
		{Name: "error rate", Baseline: rate(b.ErrorRate, b.Requests), Candidate: rate(c.ErrorRate, c.Requests), Ratio: "-"},
		{Name: "goodput", Baseline: rate(b.GoodputRatio, b.Requests+b.SkippedMaxConcurrency), Candidate: rate(c.GoodputRatio, c.Requests+c.SkippedMaxConcurrency), Ratio: "-"},
	}
	for _, l := range []struct {
		name string
		b, c time.Duration
	}{
		{"TTFT p50", b.TTFTP50, c.TTFTP50}, {"TTFT p99", b.TTFTP99, c.TTFTP99},
		{"TPOT mean", b.TPOTMean, c.TPOTMean}, {"TPOT p50", b.TPOTP50, c.TPOTP50}, {"TPOT p99", b.TPOTP99, c.TPOTP99},
	} {
		ratio := "-"
		if l.b > 0 && l.c > 0 {
			ratio = strconv.FormatFloat(float64(l.c)/float64(l.b), 'f', 2, 64) + "×"
		}
		f = append(f, canaryFigure{Name: l.name, Baseline: ms(l.b), Candidate: ms(l.c), Ratio: ratio})
	}
	return f
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + " %" }

// budgetPct words a remaining budget: "-" without requests, "exhausted"
// past -100 % and infinite overspending.
func budgetPct(f float64) string {
	switch {
	case math.IsNaN(f):
		return "-"
	case math.IsInf(f, -1):
		return "exhausted"
	}
	return pct(f)
}

func burnText(b float64) string {
	switch {
	case math.IsNaN(b):
		return "-"
	case math.IsInf(b, 1):
		return "∞"
	}
	return strconv.FormatFloat(b, 'f', 1, 64)
}

func itoa(n int) string { return strconv.Itoa(n) }

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Truncate(100*time.Millisecond).String() + " ago"
}

// window words a budget's window ("6h0m0s", "12m0s").
func window(d time.Duration) string { return d.Truncate(time.Minute).String() }
