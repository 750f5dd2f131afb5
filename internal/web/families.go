package web

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// The landing page evaluates every shipped alert family, not only
// rules/llmprobe.alerts.yml (slostate.go): the answer checks
// (llmprobe.answers.yml), the canary pairs (llmprobe.canary.yml), the
// capacity knees (llmprobe.capacity.yml) and the replicas
// (llmprobe.replicas.yml), each from the daemon's own counts with the
// rule's thresholds. The thresholds below are written as the rules write
// them; TestLandingThresholdsAreTheRules reads them back from the rule
// files (rules.FindThreshold), so they cannot drift.

// The alerts of the other families, named as the shipped alerts.
const (
	AlertAnswerRegression   = "LLMProbeAnswerRegression"
	AlertCanaryRegression   = "LLMProbeCanaryRegression"
	AlertCapacityRegression = "LLMProbeCapacityRegression"
	AlertReplicaOutlier     = "LLMProbeReplicaOutlier"
)

// limit is a rule's comparison with a number: the condition holds for x
// when `x op v`.
type limit struct {
	op string
	v  float64
}

func (l limit) holds(x float64) bool {
	switch l.op {
	case "<":
		return x < l.v
	case "<=":
		return x <= l.v
	case ">":
		return x > l.v
	case ">=":
		return x >= l.v
	}
	return false
}

// String words the comparison, e.g. "< 0.9".
func (l limit) String() string { return l.op + " " + strconv.FormatFloat(l.v, 'g', -1, 64) }

// The windows and thresholds of the other families' alerts.
var (
	// LLMProbeAnswerRegression: the pass share of the judged replies (pass
	// and fail) of a probe over answerWindow, with at least
	// answerMinJudged judged.
	answerWindow    = 30 * time.Minute
	answerPassRatio = limit{"<", 0.9}
	answerMinJudged = limit{">=", 20}

	// LLMProbeCanaryRegression: the candidate/baseline ratios of a canary
	// group over canaryWindow, with at least canaryMinSuccess successful
	// requests on each side. The daemon has no ITL per request: itl_mean
	// is Prometheus' alone.
	canaryWindow     = 10 * time.Minute
	canaryMinSuccess = limit{">=", 200}
	canaryTPOTMean   = limit{">", 1.05}
	canaryTTFTMean   = limit{">", 1.10}
	canaryTTFTP99    = limit{">", 2}
	canaryTPOTP99    = limit{">", 1.25}
	canaryGoodput    = limit{"<", -0.05} // the candidate's goodput ratio minus the baseline's

	// LLMProbeCapacityRegression: the higher of a sweep's last two decided
	// knees against the median of its decided knees over capacityWindow,
	// with at least capacityChanges successes after the first in the
	// window (two low sweeps in a row; an undecided sweep is skipped).
	capacityWindow  = 7 * 24 * time.Hour
	capacityRatio   = limit{"<", 0.8}
	capacityChanges = limit{">=", 2}

	// LLMProbeReplicaOutlier: a replica's TTFT or TPOT p99 over
	// replicaWindow against the median of its service's replicas that
	// finished at least replicaMinSuccess successful requests, while at
	// least replicaMinCount count; not while the replica was swept in the
	// window.
	replicaWindow     = 10 * time.Minute
	replicaMinSuccess = limit{">=", 200}
	replicaMinCount   = limit{">=", 3}
	replicaRatio      = limit{">=", 1.9}
)

// familyAlerts evaluates the answer, canary, capacity and replica alerts
// on the targets ts at the Window's now.
func familyAlerts(o Options, ts []manager.TargetStatus) []Alert {
	w := o.Window
	now := w.now()
	var out []Alert
	for _, t := range ts {
		out = append(out, answerAlerts(w, t.Name, now)...)
	}
	out = append(out, canaryAlerts(w, ts)...)
	if o.Sweeps != nil {
		out = append(out, capacityAlerts(o.Sweeps.List(), now)...)
	}
	out = append(out, replicaAlerts(w, ts, now)...)
	return out
}

func answerAlerts(w *Window, target string, now time.Time) []Alert {
	by := w.judgedSince(target, now.Add(-answerWindow))
	var out []Alert
	for _, p := range slices.Sorted(maps.Keys(by)) {
		n := by[p]
		ratio := float64(n[1]) / float64(n[0])
		if answerMinJudged.holds(float64(n[0])) && answerPassRatio.holds(ratio) {
			out = append(out, Alert{Name: AlertAnswerRegression, Severity: "critical", Target: target, Value: ratio,
				Text: "probe " + p + ": " + pct(ratio) + " of " + itoa(n[0]) + " judged replies passed over 30m (" +
					answerPassRatio.String() + ", at least " + strconv.FormatFloat(answerMinJudged.v, 'g', -1, 64) + " judged)"})
		}
	}
	return out
}

// canaryAlerts compares each canary group's sides over canaryWindow, each
// side's targets pooled (the rules compare per probe; here every probe of
// a side is summed, as in the canary table).
func canaryAlerts(w *Window, ts []manager.TargetStatus) []Alert {
	var out []Alert
	for _, g := range canaryPairs(w, ts) {
		if len(g.Baseline) == 0 || len(g.Candidate) == 0 {
			continue
		}
		b, c := w.sideOver(g.Baseline, canaryWindow), w.sideOver(g.Candidate, canaryWindow)
		bs, cs := b.Requests-b.Failed, c.Requests-c.Failed
		if !canaryMinSuccess.holds(float64(min(bs, cs))) {
			continue
		}
		var held []string
		value := math.NaN()
		for _, f := range []struct {
			metric string
			b, c   time.Duration
			l      limit
		}{
			{"tpot_mean", b.TPOTMean, c.TPOTMean, canaryTPOTMean}, {"ttft_mean", b.TTFTMean, c.TTFTMean, canaryTTFTMean},
			{"ttft_p99", b.TTFTP99, c.TTFTP99, canaryTTFTP99}, {"tpot_p99", b.TPOTP99, c.TPOTP99, canaryTPOTP99},
		} {
			if f.b <= 0 || f.c <= 0 {
				continue
			}
			if r := float64(f.c) / float64(f.b); f.l.holds(r) {
				held = append(held, f.metric+" "+strconv.FormatFloat(r, 'f', 3, 64)+" ("+f.l.String()+")")
				if math.IsNaN(value) {
					value = r
				}
			}
		}
		if d := c.GoodputRatio - b.GoodputRatio; canaryGoodput.holds(d) {
			held = append(held, "goodput "+strconv.FormatFloat(d, 'f', 3, 64)+" ("+canaryGoodput.String()+")")
			if math.IsNaN(value) {
				value = d
			}
		}
		if len(held) == 0 {
			continue
		}
		out = append(out, Alert{Name: AlertCanaryRegression, Severity: "warning", Target: g.Candidate[0], Value: value,
			Text: "canary " + g.Name + ": candidate/baseline over 10m " + strings.Join(held, ", ") + "; " + itoa(cs) + " and " + itoa(bs) + " successes"})
	}
	return out
}

// capacityAlerts is LLMProbeCapacityRegression over the runs the daemon
// holds (newest first; the rule reads the knee gauges over 7 days, which
// survive restarts): per target and sweep, the higher of the last two
// decided knees below capacityRatio of the median of the decided knees of
// capacityWindow, with capacityChanges successful sweeps after the first.
// Undecided sweeps neither count nor break the run, as in the rule.
func capacityAlerts(runs []sweepd.Status, now time.Time) []Alert {
	type key struct{ target, name string }
	type knees struct {
		decided   []float64 // newest first
		successes int
		unit      string
	}
	by := map[key]*knees{}
	var keys []key
	for _, r := range runs { // newest first
		if r.Status != sweepd.StatusDone || r.Finished == nil || r.Result == nil || now.Sub(*r.Finished) > capacityWindow {
			continue
		}
		k := key{r.Target, r.Name}
		kn := by[k]
		if kn == nil {
			kn = &knees{unit: r.Result.KneeUnit}
			by[k] = kn
			keys = append(keys, k)
		}
		kn.successes++
		if summaryState(r.Result) != capacity.StateUndecided {
			kn.decided = append(kn.decided, r.Result.Knee)
		}
	}
	var out []Alert
	for _, k := range keys {
		kn := by[k]
		if len(kn.decided) < 2 || !capacityChanges.holds(float64(kn.successes-1)) {
			continue
		}
		med := stats.Median(kn.decided) // PromQL's quantile(0.5) too: the mean of the two middle values
		if med <= 0 {
			continue
		}
		higher := max(kn.decided[0], kn.decided[1])
		if ratio := higher / med; capacityRatio.holds(ratio) {
			out = append(out, Alert{Name: AlertCapacityRegression, Severity: "warning", Target: k.target, Value: ratio,
				Text: "sweep " + k.name + ": the last two knees (" + kneeText(capacity.StateDecided, kn.decided[0], kn.unit) + ", " +
					kneeText(capacity.StateDecided, kn.decided[1], kn.unit) + ") are at most " + pct(ratio) + " of the 7-day median (" +
					kneeText(capacity.StateDecided, med, kn.unit) + ", " + itoa(len(kn.decided)) + " decided sweeps; " + capacityRatio.String() + ")"})
		}
	}
	return out
}

// replicaAlerts compares each replica (a target with a service label)
// with the median of its service's replicas over replicaWindow, every
// probe of a replica summed.
func replicaAlerts(w *Window, ts []manager.TargetStatus, now time.Time) []Alert {
	type replica struct {
		target     string
		ttft, tpot time.Duration
	}
	by := map[string][]replica{}
	for _, t := range ts {
		ns, svc := w.label(t.Name, "namespace"), w.label(t.Name, "service")
		if svc == "" {
			continue
		}
		s := w.sideOver([]string{t.Name}, replicaWindow)
		if !replicaMinSuccess.holds(float64(s.Requests - s.Failed)) {
			continue
		}
		k := ns + "/" + svc
		by[k] = append(by[k], replica{t.Name, s.TTFTP99, s.TPOTP99})
	}
	var out []Alert
	for _, k := range slices.Sorted(maps.Keys(by)) {
		rs := by[k]
		if !replicaMinCount.holds(float64(len(rs))) {
			continue
		}
		for _, m := range []struct {
			metric string
			of     func(replica) time.Duration
		}{{"ttft_p99", func(r replica) time.Duration { return r.ttft }}, {"tpot_p99", func(r replica) time.Duration { return r.tpot }}} {
			vs := make([]float64, 0, len(rs))
			for _, r := range rs {
				vs = append(vs, float64(m.of(r)))
			}
			med := stats.Median(vs)
			if med <= 0 {
				continue
			}
			for _, r := range rs {
				ratio := float64(m.of(r)) / med
				if !replicaRatio.holds(ratio) || w.sweptWithin(r.target, now, replicaWindow) {
					continue
				}
				out = append(out, Alert{Name: AlertReplicaOutlier, Severity: "warning", Target: r.target, Value: ratio,
					Text: "service " + k + ": " + m.metric + " " + strconv.FormatFloat(ratio, 'f', 2, 64) + "× the median of its " +
						itoa(len(rs)) + " replicas over 10m (" + replicaRatio.String() + ")"})
			}
		}
	}
	return out
}

// label returns target's kept label k ("" when unset).
func (w *Window) label(target, k string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tw := w.targets[target]; tw != nil {
		return tw.labels[k]
	}
	return ""
}

// sweptWithin reports whether target was swept in the last d, or is now.
func (w *Window) sweptWithin(target string, now time.Time, d time.Duration) bool {
	if w.swept(target) {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.targets[target]
	return tw != nil && tw.minutes.sweptSince(now, d)
}

// severityRank orders alerts by urgency: critical, warning, the rest.
func severityRank(s string) int {
	switch s {
	case "critical":
		return 0
	case "warning":
		return 1
	}
	return 2
}

// sortByUrgency orders the alerts critical first (then by target and
// name), and the budgets by their target's most urgent firing alert, then
// by the budget left (least first; none counted last).
func sortByUrgency(alerts []Alert, budgets []budgetRow) {
	sort.SliceStable(alerts, func(i, j int) bool {
		a, b := alerts[i], alerts[j]
		if ra, rb := severityRank(a.Severity), severityRank(b.Severity); ra != rb {
			return ra < rb
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return a.Name < b.Name
	})
	rank := map[string]int{}
	for _, a := range alerts {
		r := severityRank(a.Severity)
		if cur, ok := rank[a.Target]; !ok || r < cur {
			rank[a.Target] = r
		}
	}
	rankOf := func(t string) int {
		if r, ok := rank[t]; ok {
			return r
		}
		return 3
	}
	sort.SliceStable(budgets, func(i, j int) bool {
		a, b := budgets[i], budgets[j]
		if ra, rb := rankOf(a.Target), rankOf(b.Target); ra != rb {
			return ra < rb
		}
		na, nb := math.IsNaN(a.Remaining), math.IsNaN(b.Remaining)
		if na != nb {
			return nb
		}
		if !na && a.Remaining != b.Remaining {
			return a.Remaining < b.Remaining
		}
		return false
	})
}
