package sweepd

import (
	"strconv"

	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// MetaProbeLoad is the metadata key (result.json, the manifest) under which
// a daemon sweep records the request rate of the target's own probes while
// it ran: the load its knee was measured under (capacity.Last.ProbeLoad),
// read back with the result after a restart.
const MetaProbeLoad = "probe_load_rps"

// probeLoad is the request rate of t's probes: the sum of their configured
// rates (a multi-turn probe's is its sessions' rate).
func probeLoad(t config.TargetConfig) float64 {
	sum := 0.0
	for _, p := range t.Probes {
		sum += p.Rate
	}
	return sum
}

// LastOf is what a successful sweep's result reports to the observer: the
// knee (a background sweep's in total requests/s, with the production
// rate at it), whether it was decided, and the probe load it was measured
// under. Duration and Dir are the caller's.
func LastOf(res *sweep.Result) capacity.Last {
	l := capacity.Last{
		Knee: res.Knee.Estimate(), KneeFound: res.Knee.Found, Decided: res.Knee.Decided(), MaxGoodput: res.Knee.MaxGoodput,
		KneeUnit: res.KneeUnit, Finished: res.Fingerprint.End, Steps: curve(res), Mode: capacity.ModeIsolated,
	}
	if v, err := strconv.ParseFloat(res.Metadata[MetaProbeLoad], 64); err == nil && v >= 0 {
		l.ProbeLoad = v
	}
	if bk := res.Background; bk != nil {
		l.Mode = capacity.ModeBackground
		l.Decided = bk.Decided
		l.Knee, l.Production = bk.KneeTotal, bk.ProductionAtKnee
	}
	l.State, l.Undecided = kneeState(res)
	if l.State == capacity.StateUndecided {
		l.Decided = false
	}
	return l
}

// kneeState is the state of res's knee (sweep.Knee.StateOf) and, when
// undecided, why (one of sweep.UndecidedReasons; for a result written
// before the reasons existed, "no_valid_level" without a valid step,
// else "too_short").
func kneeState(res *sweep.Result) (state, why string) {
	state = res.Knee.StateOf()
	if bk := res.Background; bk != nil && !bk.Decided {
		state = sweep.KneeUndecided
	}
	if state != sweep.KneeUndecided {
		return state, ""
	}
	if why = res.Knee.Undecided; why != "" {
		return state, why
	}
	for _, st := range res.Steps {
		if st.Validity.Valid {
			return state, sweep.UndecidedTooShort
		}
	}
	return state, sweep.UndecidedNoValidLevel
}
