package compare

import (
	"fmt"
	"math"
	"strconv"
)

// MaxEvidenceFactor bounds the estimate of the evidence that would decide
// an undecided figure: past this many times the requests it rests on, the
// change sits too close to the limit (or to no change) for more of the same
// evidence to decide it, and the estimate says so instead of a number.
const MaxEvidenceFactor = 100

// decision is how one figure's change and interval stand against its
// limit, in the "worse" direction (a latency or cost up, a rate down):
// worse is the change, lo and hi its interval.
type decision struct {
	worse, lo, hi, limit float64
}

// decisionOf turns f's change and interval into the worse direction of t.
func decisionOf(f *Figure, t Threshold) decision {
	if t.HigherWorse() {
		return decision{worse: f.Change, lo: f.CILo, hi: f.CIHi, limit: t.Max}
	}
	return decision{worse: -f.Change, lo: -f.CIHi, hi: -f.CILo, limit: t.Max}
}

// judge sets f's status and detail from its change and interval (Figure
// Status):
//
//   - failed ("regressed") when the interval excludes no change on the
//     worse side and the change is worse than the limit;
//   - ok when the whole interval lies below the limit: "no significant
//     difference" (it holds 0), "worse within the limit" or "improved";
//   - undecided otherwise: the interval reaches the limit, so the evidence
//     neither rules out a regression beyond it nor shows one. NeedPerSide
//     estimates the requests per side that would decide (evidenceToDecide).
func judge(f *Figure, t Threshold, loo roundOut) {
	d := decisionOf(f, t)
	interval := fmt.Sprintf("%s → %s %s, %+.1f %% (%s %% interval %+.1f %% … %+.1f %%)",
		Num(f.Baseline), Num(f.Candidate), f.Unit, 100*f.Change, ConfText(f.Conf), 100*f.CILo, 100*f.CIHi)
	significant := f.CILo > 0 || f.CIHi < 0
	switch {
	case d.lo > 0 && d.worse > d.limit && loo.ok(d.limit):
		f.Status = StatusFailed
		f.Detail = fmt.Sprintf("regressed: %s, beyond the %.0f %% limit", interval, 100*d.limit)
	case d.lo > 0 && d.worse > d.limit:
		f.Status = StatusUndecided
		f.Detail = fmt.Sprintf("undecided: %s, beyond the %.0f %% limit, but not without %s (%+.1f %%): the regression rests on "+
			"one round, which more rounds per side would confirm or not", interval, 100*d.limit, loo.name, 100*loo.worse)
	case d.hi < d.limit && !significant:
		f.Status = StatusOK
		f.Detail = "no significant difference: " + interval
	case d.hi < d.limit && d.worse > 0:
		f.Status = StatusOK
		f.Detail = fmt.Sprintf("worse within the %.0f %% limit: %s", 100*d.limit, interval)
	case d.hi < d.limit:
		f.Status = StatusOK
		f.Detail = "improved: " + interval
	default:
		f.Status = StatusUndecided
		n := (f.NBaseline + f.NCandidate + 1) / 2
		need, how := evidenceToDecide(d, n)
		f.NeedPerSide = need
		f.Detail = fmt.Sprintf("undecided: %s; the interval reaches %.1f %% worse, past the %.0f %% limit, "+
			"so this evidence neither rules out a regression beyond the limit nor shows one; %s",
			interval, 100*d.hi, 100*d.limit, how)
	}
}

// roundOut is the least worse change of a figure with one round of one
// side left out (leaveOneOut): name says which ("" when no side has two
// rounds).
type roundOut struct {
	name  string
	worse float64
}

// ok reports whether the change stays beyond limit with any one round
// left out (or no round can be).
func (r roundOut) ok(limit float64) bool { return r.name == "" || r.worse > limit }

// leaveOneOut recomputes the change with each round of each side (of two
// or more) left out, in t's worse direction, and returns the least. With
// two rounds per side the two-level bootstrap draws the rounds from only
// two, which understates the spread between rounds (by half for two, a
// third for three); a regression must then also show without any single
// round: a round hit by something the validity flags do not see (a server
// neighbour's load, a slow host) cannot make a fail on its own.
func leaveOneOut(b, c *figure, t Threshold) roundOut {
	out := roundOut{worse: math.Inf(1)}
	try := func(name string, b, c *figure) {
		vb, vc := b.value(), c.value()
		if math.IsNaN(vb) || math.IsNaN(vc) || vb == 0 {
			return
		}
		w := (vc - vb) / vb
		if !t.HigherWorse() {
			w = -w
		}
		if w < out.worse {
			out = roundOut{name: name, worse: w}
		}
	}
	for i := range b.rounds {
		if len(b.rounds) > 1 {
			try(fmt.Sprintf("baseline round %d", i+1), b.without(i), c)
		}
	}
	for i := range c.rounds {
		if len(c.rounds) > 1 {
			try(fmt.Sprintf("candidate round %d", i+1), b, c.without(i))
		}
	}
	if out.name == "" {
		return roundOut{}
	}
	return out
}

// evidenceToDecide estimates how many requests per side would decide an
// undecided figure that rests on n per side, assuming that the change
// stays where it is and that each side of its interval narrows as
// 1/sqrt(n) (the interval's half-widths times sqrt(n / n')):
//
//   - a change better than the limit passes once change + (hi − change) ×
//     sqrt(n/n') < limit: n' = n × ((hi − change) / (limit − change))²;
//   - a change beyond the limit fails once change − (change − lo) ×
//     sqrt(n/n') > 0: n' = n × ((change − lo) / change)².
//
// need is 0 when the estimate exceeds MaxEvidenceFactor × n (or the change
// sits on the limit); how says it in words. The between-round spread of
// the interval narrows only with more rounds, so more rounds are the
// surer way to the same count.
func evidenceToDecide(d decision, n int) (need int, how string) {
	var factor float64
	goal := "pass"
	switch {
	case d.worse < d.limit:
		factor = math.Pow((d.hi-d.worse)/(d.limit-d.worse), 2)
	case d.worse > 0:
		goal = "fail"
		factor = math.Pow((d.worse-d.lo)/d.worse, 2)
	default:
		return 0, "the change sits on the limit: no amount of the same evidence decides it"
	}
	if n <= 0 || math.IsNaN(factor) || factor > MaxEvidenceFactor {
		return 0, fmt.Sprintf("the change (%+.1f %%) is too close to %s for more of the same evidence to decide it "+
			"(more than %d× the %d requests per side)", 100*d.worse, map[string]string{"pass": "the limit", "fail": "no change"}[goal],
			MaxEvidenceFactor, n)
	}
	need = int(math.Ceil(float64(n) * math.Max(factor, 1)))
	return need, fmt.Sprintf("about %d requests per side (now %d) would decide it (%s, if the change holds; "+
		"estimated from the interval's width, which narrows as 1/√n)", need, n, goal)
}

// ConfText prints a level in percent with the digits that tell it from
// 100: "95", "99.2", "99.9987".
func ConfText(conf float64) string {
	p := 100 * conf
	for d := 0; d < 8; d++ {
		s := strconv.FormatFloat(p, 'f', d, 64)
		if v, _ := strconv.ParseFloat(s, 64); v < 100 && math.Abs(v-p) < 0.05*(100-p)+1e-9 {
			return s
		}
	}
	return strconv.FormatFloat(p, 'g', 8, 64)
}
