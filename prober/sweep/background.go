package sweep

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// The background sweep mode (docs/sweep.md#background-sweeps): the knee of
// the server's total load, measured beside its production traffic. Steps
// do not wait for an idle server; the server's own request counters give
// the production rate during each step (its arrivals less the sweep's own,
// which the sweep knows exactly), a step's total offered rate is the
// sweep's plus production, and the knee is reported in total requests/s
// with the production share beside it.

// Sweep modes (Config.SweepMode).
const (
	// SweepIsolated: every step starts from an idle server, proven by its
	// running and waiting gauges (the default; "" means it too).
	SweepIsolated = "isolated"
	// SweepBackground: steps run beside the server's production traffic
	// (no idle wait); the knee is of the server's total load.
	SweepBackground = "background"
)

// SweepModes lists the sweep modes.
var SweepModes = []string{SweepIsolated, SweepBackground}

// Bounds of the production band (Config.BackgroundBand).
const (
	// DefaultBackgroundBand is the relative change of the production rate
	// within a step that still counts as steady: ±25 %.
	DefaultBackgroundBand = 0.25
	// MaxBackgroundBand bounds the band: ±100 % (beyond it, nothing about
	// the production would be checked).
	MaxBackgroundBand = 1.0
	// BackgroundBandFloor is the production rate, in req/s, below which the
	// band is taken of this rate instead: a production of 0.2 req/s that
	// doubles is still no load.
	BackgroundBandFloor = 1.0
)

// FlagProductionUnsteady: in a background sweep, the server's production
// rate moved out of its band during the step (one half of the step's
// production differed from the whole step's by more than
// Config.BackgroundBand), or could not be read: the step's total offered
// rate is not one figure.
const FlagProductionUnsteady = "production-unsteady"

// Background reports reasons and notes.
const (
	backgroundIdleReason = "background sweep: steps run beside the server's production traffic and do not wait for an idle server"
)

// StepBackground is what a background sweep's step measured of the
// server's production traffic (result.json step "background"). Rates are
// in req/s.
type StepBackground struct {
	// ProductionRate is the server's request arrivals during the step
	// that the sweep did not send, per second of the window: the delta of
	// its finished-requests counter plus the change of its running and
	// waiting requests, less the step's own requests sent in the window.
	ProductionRate float64 `json:"production_rate"`
	// FirstHalfRate and SecondHalfRate are the production rate over each
	// half of the window (split at the during-step scrape nearest its
	// middle); HalvesMeasured is false when no scrape fell inside the
	// window (the band is then not checked).
	FirstHalfRate  float64 `json:"first_half_production_rate"`
	SecondHalfRate float64 `json:"second_half_production_rate"`
	HalvesMeasured bool    `json:"halves_measured"`
	// OwnRate is the sweep's own offered rate (Stats.OfferedRate) and
	// TotalOfferedRate OwnRate + ProductionRate.
	OwnRate          float64 `json:"own_rate"`
	TotalOfferedRate float64 `json:"total_offered_rate"`
	// ServerFinishedRate is the server's finished requests per second over
	// the window, every client's.
	ServerFinishedRate float64 `json:"server_finished_rate"`
	// WindowS is the window, from the before to the after snapshot, in
	// seconds; Band the band checked (Config.BackgroundBand).
	WindowS float64 `json:"window_s"`
	Band    float64 `json:"band"`
	// Reason says why the production could not be measured ("" when it
	// was).
	Reason string `json:"reason,omitempty"`
}

// BackgroundKnee is the knee of a background sweep in total requests/s
// (result.json "background").
type BackgroundKnee struct {
	// Decided is false when the sweep's knee was not decided (no level
	// passed or failed on enough evidence); the figures are then 0.
	Decided bool `json:"decided"`
	// KneeTotal is the knee level plus the production rate measured at it
	// (the mean over its valid rounds): the server's total load at the
	// knee; 0 when no level passed. UpperTotal is the same of the first
	// failing level (0: none).
	KneeTotal  float64 `json:"knee_total_rate"`
	UpperTotal float64 `json:"upper_total_rate,omitempty"`
	// ProductionAtKnee is the production rate at the knee level and
	// ProductionShare its share of KneeTotal.
	ProductionAtKnee float64 `json:"production_rate_at_knee"`
	ProductionShare  float64 `json:"production_share"`
	// Band is Config.BackgroundBand.
	Band float64 `json:"band"`
}

// Background reports whether c runs in the background mode.
func (c *Config) Background() bool { return c.SweepMode == SweepBackground }

// backgroundBand is Config.BackgroundBand or its default.
func (c *Config) backgroundBand() float64 {
	if c.BackgroundBand > 0 {
		return c.BackgroundBand
	}
	return DefaultBackgroundBand
}

// validateBackground checks the sweep mode and what the background mode
// excludes: a closed loop, a burst or a trace (their offered rate is no
// open-loop rate to add production to) and shards (each would count the
// others as production).
func (c *Config) validateBackground() error {
	if c.SweepMode != "" && !slices.Contains(SweepModes, c.SweepMode) {
		return fieldErr("SweepMode", "must be %s, got %q", strings.Join(SweepModes, " or "), c.SweepMode)
	}
	if !c.Background() {
		return nil
	}
	switch {
	case len(c.Concurrency) > 0:
		return fieldErr("SweepMode", "background measures an open loop beside production: give {Rates}, not {Concurrency}")
	case c.Trace != nil:
		return fieldErr("SweepMode", "background does not replay a trace ({Trace})")
	case c.HasBurst():
		return fieldErr("SweepMode", "background needs open-loop rates: {Rates} inf is a burst")
	case c.Sharded():
		return fieldErr("SweepMode", "background cannot be sharded ({ShardCount}): each shard would count the others as production")
	}
	return nil
}

// checkBackground refuses a background sweep whose server does not expose
// what the production rate is read from: /metrics, the engine's
// finished-requests counter and its running and waiting gauges. snap is
// the preflight's scrape (nil when /metrics was not read).
func (r *runner) checkBackground(snap *scrape.Snapshot) error {
	if !r.cfg.Background() {
		return nil
	}
	need := "a background sweep reads the production rate from the server's request counter"
	switch {
	case !r.metricsOK:
		return fieldErr("SweepMode", "%s, but the server's /metrics could not be read (%s)", need, r.metricsReason)
	case len(r.eng.Source(engine.FinishedRequests)) == 0:
		return fieldErr("SweepMode", "%s, but %s has none (docs/engines.md): sweep it isolated", need, r.eng)
	case !r.eng.Read(snap, engine.FinishedRequests).Known:
		return fieldErr("SweepMode", "%s, but %s is not on /metrics", need, strings.Join(r.eng.Source(engine.FinishedRequests), " or "))
	case !r.idleKnown:
		return fieldErr("SweepMode", "%s and its running and waiting gauges: %s", need, r.idleReason)
	}
	r.bg = &bgState{}
	return nil
}

// bgSample is one reading of the server's request figures.
type bgSample struct {
	at       time.Time
	finished float64 // the finished-requests counter
	inSystem float64 // running + waiting
}

// bgState collects a background step's readings: the server's (from the
// before, during and after scrapes) and the send times of the step's own
// requests that reached the server. Safe for concurrent use.
type bgState struct {
	mu      sync.Mutex
	samples []bgSample
	sent    []time.Time
}

// reset forgets the last step's readings.
func (b *bgState) reset() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.samples, b.sent = nil, nil
	b.mu.Unlock()
}

// own records a request of the step: its send time, when it reached the
// server's engine (it succeeded, or failed after the server took it).
func (b *bgState) own(rec *prober.Record) {
	if b == nil || rec.Sent.IsZero() {
		return
	}
	switch rec.Error {
	case prober.ClassConnect, prober.ClassHTTP4xx, prober.ClassHTTP429, prober.ClassHTTP5xx:
		return // refused before the engine: the server's counter never saw it
	}
	b.mu.Lock()
	b.sent = append(b.sent, rec.Sent)
	b.mu.Unlock()
}

// observe adds a reading of s through eng.
func (b *bgState) observe(eng *engine.Engine, s *scrape.Snapshot) {
	if b == nil || s == nil {
		return
	}
	f := eng.Read(s, engine.FinishedRequests)
	run, wait := eng.Read(s, engine.Running), eng.Read(s, engine.Waiting)
	if !f.Known || !run.Known || !wait.Known {
		return
	}
	b.mu.Lock()
	b.samples = append(b.samples, bgSample{at: s.Time, finished: f.Value, inSystem: run.Value + wait.Value})
	b.mu.Unlock()
}

// gauges wraps a Recorder's gauge reader so that each during-step scrape
// is also a reading of the server's request figures.
func (r *runner) gauges() func(*scrape.Snapshot) map[string]float64 {
	if r.bg == nil {
		return r.eng.RecorderGauges
	}
	return func(s *scrape.Snapshot) map[string]float64 {
		r.bg.observe(r.eng, s)
		return r.eng.RecorderGauges(s)
	}
}

// arrivals is the production's arrivals between two readings: the
// server's finished requests plus the change of those in it, less the
// step's own requests sent in between.
func (b *bgState) arrivals(a, z bgSample) float64 {
	own := 0
	for _, t := range b.sent {
		if t.After(a.at) && !t.After(z.at) {
			own++
		}
	}
	return (z.finished - a.finished) + (z.inSystem - a.inSystem) - float64(own)
}

// measure computes a step's production from its before and after
// snapshots and the readings between them, and judges its band; a step
// that could not be measured says why. A reset of the server's counter
// (a restart) makes it unmeasurable.
func (r *runner) measureBackground(st *Step, before, after *scrape.Snapshot) {
	b := r.bg
	if b == nil {
		return
	}
	b.observe(r.eng, before)
	b.observe(r.eng, after)
	sb := &StepBackground{Band: r.cfg.backgroundBand(), OwnRate: finiteOr0(st.Stats.OfferedRate)}
	st.Background = sb
	b.mu.Lock()
	samples := slices.Clone(b.samples)
	b.mu.Unlock()
	slices.SortFunc(samples, func(x, y bgSample) int { return x.at.Compare(y.at) })
	switch {
	case before == nil || after == nil || len(samples) < 2:
		sb.Reason = "the server's request counter was not read before and after the step"
	case samples[len(samples)-1].finished < samples[0].finished:
		sb.Reason = "the server's request counter went back (a restart) during the step"
	}
	if sb.Reason == "" {
		first, last := samples[0], samples[len(samples)-1]
		sb.WindowS = last.at.Sub(first.at).Seconds()
		if sb.WindowS <= 0 {
			sb.Reason = "the before and after snapshots have the same time"
		} else {
			b.mu.Lock()
			sb.ProductionRate = math.Max(0, b.arrivals(first, last)/sb.WindowS)
			sb.FirstHalfRate, sb.SecondHalfRate, sb.HalvesMeasured = b.halves(samples)
			b.mu.Unlock()
			sb.ServerFinishedRate = (last.finished - first.finished) / sb.WindowS
			sb.TotalOfferedRate = sb.OwnRate + sb.ProductionRate
		}
	}
	r.judgeBackground(st, sb)
}

// halves returns the production rate over each half of the readings'
// span, split at the inner reading nearest its middle; ok is false when
// there is no inner reading. b.mu is held.
func (b *bgState) halves(samples []bgSample) (first, second float64, ok bool) {
	if len(samples) < 3 {
		return 0, 0, false
	}
	a, z := samples[0], samples[len(samples)-1]
	mid := a.at.Add(z.at.Sub(a.at) / 2)
	best := 1
	for i := 2; i < len(samples)-1; i++ {
		if d := samples[i].at.Sub(mid).Abs(); d < samples[best].at.Sub(mid).Abs() {
			best = i
		}
	}
	m := samples[best]
	d1, d2 := m.at.Sub(a.at).Seconds(), z.at.Sub(m.at).Seconds()
	if d1 <= 0 || d2 <= 0 {
		return 0, 0, false
	}
	return math.Max(0, b.arrivals(a, m)/d1), math.Max(0, b.arrivals(m, z)/d2), true
}

// judgeBackground flags st FlagProductionUnsteady when its production
// could not be read, or when a half of the step's production left the
// band around the whole step's: |half - production| > band x
// max(production, BackgroundBandFloor).
func (r *runner) judgeBackground(st *Step, sb *StepBackground) {
	if st.Interrupted {
		return
	}
	reason := ""
	switch {
	case sb.Reason != "":
		reason = "production not measured: " + sb.Reason
	case sb.HalvesMeasured:
		allowed := sb.Band * math.Max(sb.ProductionRate, BackgroundBandFloor)
		for i, h := range []float64{sb.FirstHalfRate, sb.SecondHalfRate} {
			if math.Abs(h-sb.ProductionRate) > allowed {
				reason = fmt.Sprintf("the server's production rate was %.3g req/s in the %s half of the step against %.3g over the step, "+
					"outside the band of ±%s (the step's total offered rate is not one figure)", h, [2]string{"first", "second"}[i],
					sb.ProductionRate, pct100(sb.Band))
				break
			}
		}
	default:
		r.stepNotes = append(r.stepNotes, fmt.Sprintf("step %d (%s): no during-step scrape fell inside the step, so the steadiness of "+
			"the production rate was not checked (lengthen the step or shorten --metrics-interval).", st.Index, st.Label))
	}
	if reason == "" {
		return
	}
	st.Validity.Flags = append(st.Validity.Flags, FlagProductionUnsteady)
	st.Validity.Reasons = append(st.Validity.Reasons, reason)
	st.Validity.Valid = false
}

// backgroundKnee is a background sweep's knee in total requests/s: the
// knee level plus the mean production rate of its valid rounds (nil for an
// isolated sweep).
func backgroundKnee(c *Config, steps []*Step, k Knee) *BackgroundKnee {
	if !c.Background() {
		return nil
	}
	bk := &BackgroundKnee{Band: c.backgroundBand(), Decided: k.Decided()}
	if !bk.Decided {
		return bk
	}
	prod := func(level float64) (float64, bool) {
		var xs []float64
		for _, s := range steps {
			if s.Level == level && s.Validity.Valid && s.Background != nil && s.Background.Reason == "" {
				xs = append(xs, s.Background.ProductionRate)
			}
		}
		return stats.Mean(xs), len(xs) > 0
	}
	if low := k.Estimate(); low > 0 {
		if p, ok := prod(low); ok {
			bk.ProductionAtKnee, bk.KneeTotal = p, low+p
			bk.ProductionShare = p / bk.KneeTotal
		}
	}
	if k.Upper > 0 {
		if p, ok := prod(k.Upper); ok {
			bk.UpperTotal = k.Upper + p
			// A decided knee of 0 (the lowest level failed on valid
			// evidence): the server kept up with production alone and
			// not with the lowest level beside it, so its total knee is
			// the production rate, not 0 (issue 39: "knee 0 total req/s"
			// beside 3.8-4.5 req/s of healthy production).
			if k.Estimate() == 0 {
				bk.ProductionAtKnee, bk.KneeTotal, bk.ProductionShare = p, p, 1
			}
		}
	}
	return bk
}

// Decided reports whether the knee is a figure of capacity: its state
// (StateOf) is KneeDecided (located, or a knee of 0 below the lowest level
// run) or KneeBound (at least Low). False for KneeUndecided: no valid level,
// only levels too short to decide, or "below X" with no valid evidence
// under X; the knee's figures then say nothing of capacity.
func (k Knee) Decided() bool { return k.StateOf() != KneeUndecided }

// backgroundNote is the result note of a background sweep: the knee in
// total requests/s with the production share, and each step's total.
func backgroundNote(bk *BackgroundKnee, steps []*Step) string {
	return backgroundKneeText(bk) + " Steps (the sweep's rate + production = total offered, req/s): " + backgroundStepsText(steps) + "."
}

// backgroundStepsText lists each step's own, production and total rates.
func backgroundStepsText(steps []*Step) string {
	var parts []string
	for _, s := range steps {
		b := s.Background
		switch {
		case b == nil:
		case b.Reason != "":
			parts = append(parts, s.Label+" production not measured")
		default:
			parts = append(parts, fmt.Sprintf("%s %.4g + %.4g = %.4g", s.Label, b.OwnRate, b.ProductionRate, b.TotalOfferedRate))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func backgroundKneeText(bk *BackgroundKnee) string {
	if !bk.Decided || bk.KneeTotal == 0 {
		return fmt.Sprintf("background sweep: steps ran beside the server's production traffic without waiting for an idle server; "+
			"each step's production rate was read from the server's request counter (its arrivals less the sweep's own) and had to "+
			"stay within ±%s; no total knee was decided (%s).", pct100(bk.Band), map[bool]string{true: "no level passed", false: "no level could be decided"}[bk.Decided])
	}
	return fmt.Sprintf("background sweep: steps ran beside the server's production traffic without waiting for an idle server; "+
		"the knee is %.4g req/s of total load (the sweep's %.4g plus production %.4g, a %s production share), each step's production "+
		"read from the server's request counter (its arrivals less the sweep's own) within ±%s.",
		bk.KneeTotal, bk.KneeTotal-bk.ProductionAtKnee, bk.ProductionAtKnee, pct100(bk.ProductionShare), pct100(bk.Band))
}

func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
