package probemetrics

// A probe's settings as gauges: its SLO thresholds, goodput objective,
// arrival rate and last arrival, exported when the probe starts or its SLO
// changes.

import (
	"math"
	"time"

	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// ProbeStarted initialises the series of (target, probe) (Init) and exports
// its settings: SLO thresholds, goodput objective, arrival rate, and its
// start as its last arrival.
func (m *Metrics) ProbeStarted(target, probe string, s manager.ProbeSettings) {
	m.Init(target, probe)
	m.SLOChanged(target, probe, s.SLO, s.GoodputObjective)
	m.SetProbeRate(target, probe, s.Rate)
	m.SetLastArrival(target, probe, s.Start)
	m.initAnswerChecks(target, probe, s.AnswerChecks)
}

// SLOChanged exports new SLO thresholds and goodput objective of (target,
// probe) (SetSLO, SetGoodputObjective).
func (m *Metrics) SLOChanged(target, probe string, s slo.SLO, goodputObjective float64) {
	m.SetSLO(target, probe, s.TTFT, s.TPOT, s.E2EL)
	m.setThreshold(target, probe, slo.NameTTFA, s.TTFA)
	m.SetGoodputObjective(target, probe, goodputObjective)
}

// SetSLO exports the SLO thresholds of (target, probe) as
// llmprobe_slo_threshold_seconds{slo}. A zero (or negative) duration means
// the SLO is not set: its series is deleted.
func (m *Metrics) SetSLO(target, probe string, ttft, tpot, e2el time.Duration) {
	for i, d := range []time.Duration{ttft, tpot, e2el} {
		m.setThreshold(target, probe, SLONames[i], d)
	}
}

// setThreshold sets (d > 0) or deletes the threshold series of one SLO.
func (m *Metrics) setThreshold(target, probe, name string, d time.Duration) {
	if d <= 0 {
		m.sloThreshold.DeleteLabelValues(target, probe, name)
		return
	}
	m.sloThreshold.WithLabelValues(target, probe, name).Set(d.Seconds())
}

// SetProbeRate exports the configured mean arrival rate of (target, probe)
// in requests per second as llmprobe_probe_arrival_rate. A rate that is not
// positive and finite deletes the series. Call it when the probe starts; the
// alert on a probe that stopped scheduling reads it.
func (m *Metrics) SetProbeRate(target, probe string, rate float64) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		m.arrivalRate.DeleteLabelValues(target, probe)
		return
	}
	m.arrivalRate.WithLabelValues(target, probe).Set(rate)
}

// SetLastArrival sets llmprobe_probe_last_arrival_timestamp_seconds of
// (target, probe) to at (Unix time). Call it for every scheduled arrival,
// sent or skipped, and once with the start time when the probe starts. It is
// a label lookup and a gauge Set: cheap enough for every arrival. Concurrent
// calls for one probe may land out of order by the few microseconds between
// them.
func (m *Metrics) SetLastArrival(target, probe string, at time.Time) {
	m.lastArrival.WithLabelValues(target, probe).Set(float64(at.Unix()) + float64(at.Nanosecond())/1e9)
}

// SetGoodputObjective exports the goodput objective of (target, probe), the
// share of requests that must be good (0 < objective < 1), as
// llmprobe_goodput_objective_ratio. The burn-rate rules divide by
// 1 - objective. A value outside (0, 1) deletes the series.
func (m *Metrics) SetGoodputObjective(target, probe string, objective float64) {
	if !(objective > 0 && objective < 1) {
		m.objective.DeleteLabelValues(target, probe)
		return
	}
	m.objective.WithLabelValues(target, probe).Set(objective)
}
