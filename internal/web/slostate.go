package web

import (
	"math"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
)

// The daemon's own view of SLO state: the landing page's "firing alerts"
// and error budgets (docs/daemon.md, "The landing page"). The Window counts
// each target's finished requests and skipped arrivals per minute over the
// last BudgetWindow, and evaluates the conditions of the shipped alerts
// (rules/llmprobe.alerts.yml) on those counts, with the same thresholds and
// windows. It is not Prometheus' view: it is per target (every probe of the
// target summed) where the rules are per probe, to the minute, without the
// alerts' `for:` delays, and it starts empty when the daemon starts.
const (
	// BudgetWindow is how far back the daemon's view of SLO state looks:
	// the longest window of the shipped burn-rate alerts.
	BudgetWindow = 6 * time.Hour
	// minuteBuckets is BudgetWindow in minutes.
	minuteBuckets = int(BudgetWindow / time.Minute)

	// BurnFastThreshold is LLMProbeGoodputBudgetBurnFast's burn rate, over
	// 1h and 5m; BurnSlowThreshold LLMProbeGoodputBudgetBurnSlow's, over
	// 6h and 30m (the SRE workbook's 2 % of a 30-day budget in 1 hour, 5 %
	// in 6 hours).
	BurnFastThreshold = 14.4
	BurnSlowThreshold = 6.0
	// burnFastHistory and burnSlowHistory are the alerts' history guards:
	// the target must have been observed for 3/4 of the long window, or a
	// long window would act like a short one.
	burnFastHistory = 45 * time.Minute
	burnSlowHistory = 4*time.Hour + 30*time.Minute
	// burnEarlyArrivals is the early branch of LLMProbeGoodputBudgetBurnFast
	// (a target observed for less than burnFastHistory): its 15m and 2m
	// burn rates above BurnFastThreshold, at least this many arrivals in
	// 15 minutes and some success in the last 2 minutes (a total outage is
	// TargetFailing's).
	burnEarlyArrivals = 100
	// LatencyAttainment is the share of successful requests that must meet
	// a latency threshold over 5 minutes (LLMProbeTTFTAboveSLO and
	// LLMProbeTPOTAboveSLO fire below it): the threshold is a p99, so its
	// error budget is 1 - LatencyAttainment of the successes.
	LatencyAttainment = 0.99
)

// The alerts the daemon evaluates, named as the shipped alerts whose
// conditions they are.
const (
	AlertTargetFailing = "LLMProbeTargetFailing"
	AlertBurnFast      = "LLMProbeGoodputBudgetBurnFast"
	AlertBurnSlow      = "LLMProbeGoodputBudgetBurnSlow"
	AlertTTFTAboveSLO  = "LLMProbeTTFTAboveSLO"
	AlertTPOTAboveSLO  = "LLMProbeTPOTAboveSLO"
)

// counts are a target's requests over some window. Canceled requests are
// left out, as in the rules.
type counts struct {
	// requests finished; success of them succeeded, good met every SLO,
	// failed did not succeed.
	requests, success, good, failed int
	// skipMax and skipTooLong are the arrivals skipped by reason.
	skipMax, skipTooLong int
	// violated counts the successes that missed each SLO kind's threshold.
	violated [3]int
	// swept is set on a minute in which the target was swept: its counts
	// are left out of the budgets and the burn and latency conditions
	// (add does not carry it).
	swept bool
}

func (c *counts) add(o *counts) {
	c.requests += o.requests
	c.success += o.success
	c.good += o.good
	c.failed += o.failed
	c.skipMax += o.skipMax
	c.skipTooLong += o.skipTooLong
	for i := range c.violated {
		c.violated[i] += o.violated[i]
	}
}

// eligible is the goodput denominator of the rules: the finished requests
// and the arrivals skipped at the max_concurrency cap.
func (c *counts) eligible() int { return c.requests + c.skipMax }

// burn is the error-budget burn rate of the goodput objective: the bad
// share of the eligible requests over the budget 1 - objective (NaN with
// no request; +Inf when the objective leaves no budget and a request was
// bad).
func (c *counts) burn(objective float64) float64 {
	n := c.eligible()
	if n == 0 {
		return math.NaN()
	}
	bad := float64(n - c.good)
	budget := 1 - objective
	if budget <= 0 {
		if bad > 0 {
			return math.Inf(1)
		}
		return 0
	}
	return bad / float64(n) / budget
}

// minutes are a target's counts per minute over BudgetWindow, a ring
// indexed by the minute since the epoch.
type minutes struct {
	b [minuteBuckets]struct {
		minute int64
		counts
	}
}

// at returns the counts of at's minute, reset when the slot held an
// older minute.
func (m *minutes) at(at time.Time) *counts {
	minute := at.Unix() / 60
	s := &m.b[minute%int64(minuteBuckets)]
	if s.minute != minute {
		s.minute, s.counts = minute, counts{}
	}
	return &s.counts
}

// since sums the counts of the last d (whole minutes, the current one
// included) before now.
func (m *minutes) since(now time.Time, d time.Duration) counts { return m.sum(now, d, false) }

// unswept is since without the minutes in which the target was swept: the
// counts the budgets and the burn and latency conditions read, as the
// rules leave the sweeps' load out.
func (m *minutes) unswept(now time.Time, d time.Duration) counts { return m.sum(now, d, true) }

func (m *minutes) sum(now time.Time, d time.Duration, skipSwept bool) counts {
	var c counts
	cur := now.Unix() / 60
	first := cur - int64(d/time.Minute) + 1
	for i := range m.b {
		if s := &m.b[i]; s.minute >= first && s.minute <= cur && !(skipSwept && s.swept) {
			c.add(&s.counts)
		}
	}
	return c
}

// sweptSince reports whether the target was swept in the last d.
func (m *minutes) sweptSince(now time.Time, d time.Duration) bool {
	cur := now.Unix() / 60
	first := cur - int64(d/time.Minute) + 1
	for i := range m.b {
		if s := &m.b[i]; s.minute >= first && s.minute <= cur && s.swept {
			return true
		}
	}
	return false
}

// Alert is one alert condition that holds in the daemon's view.
type Alert struct {
	// Name is the shipped alert's name; Severity its severity label.
	Name, Severity string
	// Target is the target's name.
	Target string
	// Value is the alert's value (a burn rate, an attainment), Text says
	// what holds in words.
	Value float64
	Text  string
}

// Budget is one SLO's error budget of a target over the daemon's window.
type Budget struct {
	// SLO is "goodput" (the goodput objective) or a latency threshold's
	// name (ttft, tpot, e2el; its budget is 1 % of the successes);
	// Objective the share that must be good.
	SLO       string
	Objective float64
	// Window is how much the counts cover: BudgetWindow, or less when the
	// daemon has observed the target for less.
	Window time.Duration
	// Total and Bad are the requests counted and those that spent budget.
	Total, Bad int
	// Remaining is the share of the window's budget not spent: 1 -
	// Bad / ((1 - Objective) * Total); negative when overspent, NaN with
	// no request.
	Remaining float64
	// Burn5m and Burn1h are the burn rates over 5 minutes and 1 hour (NaN
	// with no request).
	Burn5m, Burn1h float64
}

// state is the SLO view of one target at one time.
type state struct {
	Alerts  []Alert
	Budgets []Budget
}

// evaluate computes the alerts and budgets of a target from its minute
// counts at now. seen is when the Window first observed the target;
// sweeping mutes the burn and latency alerts as the rules do
// (`unless llmprobe_sweep_running == 1`).
func evaluate(target string, m *minutes, now, seen time.Time, objective float64, s slo.SLO, sweeping bool) state {
	var st state
	history := now.Sub(seen)
	if c5 := m.since(now, 5*time.Minute); c5.success == 0 && c5.eligible() > 0 {
		st.Alerts = append(st.Alerts, Alert{Name: AlertTargetFailing, Severity: "critical", Target: target, Value: 1,
			Text: "no request succeeded in the last 5 minutes (" + itoa(c5.eligible()) + " finished or skipped)"})
	}
	// The budgets and the burn and latency conditions leave the swept
	// minutes out; TargetFailing (above) does not, as in the rules.
	c5, c30, c1h, c6h := m.unswept(now, 5*time.Minute), m.unswept(now, 30*time.Minute), m.unswept(now, time.Hour), m.unswept(now, BudgetWindow)
	b5, b30, b1h, b6h := c5.burn(objective), c30.burn(objective), c1h.burn(objective), c6h.burn(objective)
	if !sweeping && b1h > BurnFastThreshold && b5 > BurnFastThreshold && history >= burnFastHistory {
		st.Alerts = append(st.Alerts, Alert{Name: AlertBurnFast, Severity: "critical", Target: target, Value: b1h,
			Text: "goodput budget burning " + burnText(b1h) + "× over 1h and " + burnText(b5) + "× over 5m (> 14.4)"})
	} else if a, ok := burnEarly(target, m, now, objective); ok && !sweeping && history < burnFastHistory {
		st.Alerts = append(st.Alerts, a)
	}
	if !sweeping && b6h > BurnSlowThreshold && b30 > BurnSlowThreshold && history >= burnSlowHistory {
		st.Alerts = append(st.Alerts, Alert{Name: AlertBurnSlow, Severity: "critical", Target: target, Value: b6h,
			Text: "goodput budget burning " + burnText(b6h) + "× over 6h and " + burnText(b30) + "× over 30m (> 6)"})
	}
	for _, l := range []struct {
		kind slo.Kind
		name string
		set  time.Duration
	}{{slo.KindTTFT, AlertTTFTAboveSLO, s.TTFT}, {slo.KindTPOT, AlertTPOTAboveSLO, s.TPOT}} {
		if sweeping || l.set == 0 || c5.success == 0 {
			continue
		}
		if att := 1 - float64(c5.violated[l.kind])/float64(c5.success); att < LatencyAttainment {
			st.Alerts = append(st.Alerts, Alert{Name: l.name, Severity: "warning", Target: target, Value: att,
				Text: pct(att) + " of the last 5 minutes' successes met " + l.kind.String() + " ≤ " + l.set.String() + " (< 99 %)"})
		}
	}
	window := min(BudgetWindow, max(history.Round(time.Minute), time.Minute))
	st.Budgets = append(st.Budgets, Budget{SLO: "goodput", Objective: objective, Window: window,
		Total: c6h.eligible(), Bad: c6h.eligible() - c6h.good, Remaining: remaining(c6h.eligible()-c6h.good, c6h.eligible(), objective),
		Burn5m: b5, Burn1h: b1h})
	for _, th := range s.Thresholds() {
		k := kindOf(th.Name)
		lb := func(c counts) float64 {
			if c.success == 0 {
				return math.NaN()
			}
			return float64(c.violated[k]) / float64(c.success) / (1 - LatencyAttainment)
		}
		st.Budgets = append(st.Budgets, Budget{SLO: th.Name + " ≤ " + th.Value.String(), Objective: LatencyAttainment, Window: window,
			Total: c6h.success, Bad: c6h.violated[k], Remaining: remaining(c6h.violated[k], c6h.success, LatencyAttainment),
			Burn5m: lb(c5), Burn1h: lb(c1h)})
	}
	return st
}

// burnEarly is the early branch of LLMProbeGoodputBudgetBurnFast, for a
// target observed for less than burnFastHistory: the 15m and 2m burn
// rates above BurnFastThreshold with at least burnEarlyArrivals arrivals
// in 15 minutes and a success in the last 2.
func burnEarly(target string, m *minutes, now time.Time, objective float64) (Alert, bool) {
	c15, c2 := m.unswept(now, 15*time.Minute), m.unswept(now, 2*time.Minute)
	b15, b2 := c15.burn(objective), c2.burn(objective)
	if b15 <= BurnFastThreshold || b2 <= BurnFastThreshold || c15.eligible()+c15.skipTooLong < burnEarlyArrivals || c2.success == 0 {
		return Alert{}, false
	}
	return Alert{Name: AlertBurnFast, Severity: "critical", Target: target, Value: b15,
		Text: "goodput budget burning " + burnText(b15) + "× over 15m and " + burnText(b2) + "× over 2m (> 14.4; a new target: less than 45m observed)"}, true
}

// remaining is 1 - bad / ((1 - objective) * total): the share of the
// budget of total requests not spent (NaN without requests; -Inf when the
// objective leaves no budget and a request was bad).
func remaining(bad, total int, objective float64) float64 {
	if total == 0 {
		return math.NaN()
	}
	budget := (1 - objective) * float64(total)
	if budget <= 0 {
		if bad > 0 {
			return math.Inf(-1)
		}
		return 1
	}
	return 1 - float64(bad)/budget
}

func kindOf(name string) slo.Kind {
	for _, k := range slo.Kinds {
		if k.String() == name {
			return k
		}
	}
	return slo.KindE2EL
}
