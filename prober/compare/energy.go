package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmprobe/llmprobe/prober/slo"
)

// Energy per good output token of both sides (issue 38 Deliver 2): each
// round's sweep measures its steps' GPU energy from the side's DCGM exporter
// (sweep.StepEnergy); a side's figure at a level is the energy of its rounds
// summed over their good output tokens summed, the ratio of sums the cost
// figure is, bootstrapped the same way (figure with perJoule: the rounds'
// joules stand where the cost has their seconds).

// EnergyUnit is the unit of the energy figure.
const EnergyUnit = "J/good tok"

// energyMixed is EnergySide.Method when the rounds were measured by more
// than one method.
const energyMixed = "mixed"

// Energy is the joules per good output token of both sides at one level,
// with the candidate's change and its interval (Verdict.Energy). It is
// reported, never judged: it does not change the verdict (FigureEnergy in
// --max-regression judges it, opt-in, as cost). A figure that cannot be
// computed is absent, never 0, and NotRecorded says why.
type Energy struct {
	Level     string     `json:"level"`
	Baseline  EnergySide `json:"baseline"`
	Candidate EnergySide `json:"candidate"`
	// Change is (candidate − baseline) / baseline and CILo, CIHi its
	// interval at Conf (the two-level bootstrap of every figure); nil when
	// a side has no figure (NotRecorded says why).
	Change      *float64 `json:"change,omitempty"`
	CILo        *float64 `json:"ci_lo,omitempty"`
	CIHi        *float64 `json:"ci_hi,omitempty"`
	Conf        float64  `json:"conf"`
	NotRecorded string   `json:"not_recorded,omitempty"`
}

// EnergySide is one side's joules per good output token at a level: its
// rounds' GPU energy summed over their good output tokens summed (the
// output tokens of the requests good under the comparison's SLO), with the
// bootstrap interval of that ratio at Energy.Conf. Without a figure,
// NotRecorded says why and the figures are absent.
type EnergySide struct {
	NotRecorded              string   `json:"not_recorded,omitempty"`
	JoulesPerGoodOutputToken *float64 `json:"joules_per_good_output_token,omitempty"`
	CILo                     *float64 `json:"ci_lo,omitempty"`
	CIHi                     *float64 `json:"ci_hi,omitempty"`
	// Joules and GoodOutputTokens are the sums the figure divides.
	Joules           float64 `json:"joules,omitempty"`
	GoodOutputTokens int     `json:"good_output_tokens,omitempty"`
	// Rounds is each round's own joules per good output token.
	Rounds []float64 `json:"rounds,omitempty"`
	// Method is how the rounds' energy was measured (sweep.EnergyCounter,
	// sweep.EnergyPowerTime, or "mixed").
	Method string `json:"method,omitempty"`
}

// energyFigure is the energy figure of one side's steps of a level under
// s: per round the good output tokens of every request and the round's
// joules; note says why there is none (nil figure).
func energyFigure(steps []*Step, s slo.SLO) (f *figure, method, note string) {
	idx := map[int]int{}
	var joules []float64
	for _, st := range steps {
		if st.Energy == nil {
			note = st.EnergyNote
			if note == "" {
				note = "the input records no GPU energy"
			}
			return nil, "", note
		}
		i, seen := idx[st.Round]
		if !seen {
			i = len(joules)
			idx[st.Round] = i
			joules = append(joules, 0)
		}
		joules[i] += *st.Energy
		switch {
		case method == "":
			method = st.EnergyMethod
		case method != st.EnergyMethod:
			method = energyMixed
		}
	}
	// goodTokenSamples numbers the rounds in the same order (first seen).
	tokens, _, ok := goodTokenSamples(steps, s)
	if !ok || len(tokens) != len(joules) {
		return nil, "", "per-request output tokens not recorded: no good output token to divide the energy by"
	}
	f = newFigure(tokens, joules, 0)
	f.perJoule = true
	sum := 0.0
	for _, r := range tokens {
		for _, x := range r {
			sum += x
		}
	}
	if sum <= 0 {
		return nil, "", "no good output token (every request failed or missed the SLO): the energy per good token is not finite"
	}
	return f, method, ""
}

// sideNote is a side's reason for no energy figure, the sweep's "set
// --gpu-metrics-url" said as compare takes it.
func sideNote(side, note string) string {
	if strings.HasPrefix(note, "no GPU metrics source") {
		return fmt.Sprintf("no GPU metrics source: give --%s-gpu-metrics-url (a DCGM exporter's /metrics; "+
			"with llmprobe analyze, rounds measured with one)", side)
	}
	return note
}

// energySide computes one side's EnergySide (nil figure when not
// recorded).
func energySide(steps []*Step, side string, o Options, seed uint64) (*figure, EnergySide) {
	f, method, note := energyFigure(steps, o.SLO)
	if f == nil {
		return nil, EnergySide{NotRecorded: sideNote(side, note)}
	}
	v := f.value()
	es := EnergySide{JoulesPerGoodOutputToken: &v, Method: method, Rounds: f.perRound()}
	for r, xs := range f.rounds {
		es.Joules += f.durations[r]
		for _, x := range xs {
			es.GoodOutputTokens += int(x)
		}
	}
	if lo, hi, ok := sideCI(f, o.Iters, o.Conf, seed); ok {
		es.CILo, es.CIHi = &lo, &hi
	}
	return f, es
}

// compareEnergy is the energy figure of both sides at level l.
func compareEnergy(l level, o Options, seed uint64) Energy {
	e := Energy{Level: l.label, Conf: o.Conf}
	fb, b := energySide(l.b, SideBaseline, o, seed)
	fc, c := energySide(l.c, SideCandidate, o, seed+1)
	e.Baseline, e.Candidate = b, c
	if fb == nil || fc == nil {
		e.NotRecorded = energyNotRecorded(b.NotRecorded, c.NotRecorded)
		return e
	}
	vb, vc := fb.value(), fc.value()
	d := (vc - vb) / vb
	if math.IsNaN(d) || math.IsInf(d, 0) {
		e.NotRecorded = "the baseline's energy is 0: no relative change"
		return e
	}
	e.Change = &d
	if lo, hi, ok := diffCI(fb, fc, o.Iters, o.Conf, seed+2); ok {
		e.CILo, e.CIHi = &lo, &hi
	} else {
		e.NotRecorded = "the bootstrap could not bound the difference (the baseline resamples to 0)"
	}
	return e
}

// energyNotRecorded names the sides without an energy figure and why.
func energyNotRecorded(b, c string) string {
	var parts []string
	if b != "" {
		parts = append(parts, "baseline: "+b)
	}
	if c != "" {
		parts = append(parts, "candidate: "+c)
	}
	return strings.Join(parts, "; ")
}

// energySeed separates the energy figures' bootstrap draws from the
// compared figures' (Options.Seed + level × thresholds + threshold).
const energySeed = 0x656e65726779 // "energy"
