package sweep

import (
	"errors"
	"math"
	"slices"

	"github.com/llmprobe/llmprobe/prober/knob"
)

// MaxCostPerHour bounds Config.CostPerHour (USD per hour;
// knob.MaxCostPerHour, a target's cost_per_hour's bound too).
const MaxCostPerHour = knob.MaxCostPerHour

// validateCostPerHour checks a price: 0 (none) or > 0, finite and at most
// MaxCostPerHour.
func validateCostPerHour(v float64) error {
	return checkBound("CostPerHour", v, v)
}

// CheckCostPerHour checks a price given outside a Config (analyze's
// --cost-per-hour): the rule of Config.CostPerHour, the error without the
// field name.
func CheckCostPerHour(v float64) error {
	if err := validateCostPerHour(v); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return fe.Err
		}
		return err
	}
	return nil
}

// CostPerMillion is the cost in USD of one million good output tokens at
// pricePerHour USD per hour when the server produces goodTokensPerS good
// output tokens per second: price / (good tokens/s × 3600) × 1e6. Good
// tokens are the output tokens of requests that met every SLO, so SLO
// misses make the tokens that count dearer. ok is false without a price or
// without a good token (the cost is then not finite).
func CostPerMillion(pricePerHour, goodTokensPerS float64) (cost float64, ok bool) {
	if !(pricePerHour > 0) || !(goodTokensPerS > 0) || math.IsInf(goodTokensPerS, 0) {
		return 0, false
	}
	return pricePerHour / (goodTokensPerS * 3600) * 1e6, true
}

// StepCost is the cost per million good output tokens of st at the
// result's price (CostPerMillion of its GoodOutputThroughput); ok is false
// without a price or a good token.
func (r *Result) StepCost(st *Step) (float64, bool) {
	return CostPerMillion(r.CostPerHour, st.Stats.GoodOutputThroughput)
}

// KneeGoodOutputThroughput is the good output tokens per second at the
// knee: the mean of GoodOutputThroughput over the knee level's valid steps
// (its rounds); ok is false when no knee was found.
func (r *Result) KneeGoodOutputThroughput() (float64, bool) {
	if !r.Knee.Found {
		return 0, false
	}
	var xs []float64
	for _, st := range r.KneeSteps() {
		xs = append(xs, st.Stats.GoodOutputThroughput)
	}
	if len(xs) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs)), true
}

// KneeSteps are the steps whose figures are the knee's: the knee level's
// valid steps (its rounds; a search's runs of it), a ladder's reruns of
// the bracket left out (they back the interval only: repeatLadderBrackets).
// None without a knee.
func (r *Result) KneeSteps() []*Step {
	if !r.Knee.Found {
		return nil
	}
	// A ladder's own steps carry no search verdict; a search's all do.
	ladder := slices.ContainsFunc(r.Steps, func(s *Step) bool { return s.Search == nil })
	var out []*Step
	for _, st := range r.Steps {
		if st.Level == r.Knee.Level && st.InKnee() && !(ladder && st.isRepeat()) {
			out = append(out, st)
		}
	}
	return out
}

// KneeCost is the cost per million good output tokens at the knee
// (CostPerMillion of KneeGoodOutputThroughput); ok is false without a
// price, a knee or a good token.
func (r *Result) KneeCost() (float64, bool) {
	g, ok := r.KneeGoodOutputThroughput()
	if !ok {
		return 0, false
	}
	return CostPerMillion(r.CostPerHour, g)
}

// costJSON writes a cost, or null when there is none (no good token) or it
// is not finite (a price and a throughput at the ends of float64).
func costJSON(c float64, ok bool) any {
	if !ok {
		return nil
	}
	return finite(c)
}
