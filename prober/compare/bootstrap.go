package compare

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// DefaultIters is the number of bootstrap resamples of a difference.
const DefaultIters = 2000

// DefaultConf is the confidence level of the difference's interval.
const DefaultConf = 0.95

// bootstrapStream is the fixed second word of the PCG state.
const bootstrapStream = 0x636f6d7061726521 // "compare!"

// figure is one side's samples of one compared figure at one level, by
// round: latency values (ms) for a percentile, or per-request 0/1 flags
// with the round's duration for a rate.
type figure struct {
	rounds [][]float64
	// durations are the rounds' durations in seconds (rates only).
	durations []float64
	// p is the percentile (0: a rate).
	p float64

	sorted []float64 // every value, sorted (percentiles)
	pos    [][]int   // per round: the positions of its values in sorted
	same   []int8    // per rate round: 1 when its values are all equal, -1 not, 0 not known yet

	// price, when > 0, makes a rate of good output tokens a cost: the
	// figure is then price / (rate × 3600) × 1e6 (USD per million good
	// output tokens), in value, perRound and every resample alike.
	price float64
	// perJoule makes a rate of good output tokens per joule (durations
	// holding each round's GPU energy in J instead of its seconds) the
	// joules per good output token, 1 / rate, in value, perRound and every
	// resample alike (energy.go).
	perJoule bool
}

// costOver is costOf the rate sum / dur: NaN when dur is not positive.
func (f *figure) costOver(sum, dur float64) float64 {
	if dur <= 0 {
		return math.NaN()
	}
	return f.costOf(sum / dur)
}

// costOf turns a rate of good output tokens per second into the cost per
// million of them at f.price, or a rate of good output tokens per joule
// into the joules per good output token (f.perJoule); a rate without
// either is returned as it is.
func (f *figure) costOf(rate float64) float64 {
	if f.perJoule && !math.IsNaN(rate) {
		if rate <= 0 {
			return math.Inf(1)
		}
		return 1 / rate
	}
	if f.price <= 0 || math.IsNaN(rate) {
		return rate
	}
	if rate <= 0 {
		return math.Inf(1)
	}
	return f.price / (rate * 3600) * 1e6
}

func newFigure(rounds [][]float64, durations []float64, p float64) *figure {
	f := &figure{p: p}
	if p == 0 {
		f.rounds, f.durations = rounds, durations
		return f
	}
	// Rounds without a sample carry no information about a percentile.
	for _, r := range rounds {
		if len(r) > 0 {
			f.rounds = append(f.rounds, r)
		}
	}
	type iv struct {
		v    float64
		r, i int
	}
	var all []iv
	for r, xs := range f.rounds {
		for i, x := range xs {
			all = append(all, iv{x, r, i})
		}
	}
	slices.SortFunc(all, func(a, b iv) int { return cmp.Compare(a.v, b.v) })
	f.sorted = make([]float64, len(all))
	f.pos = make([][]int, len(f.rounds))
	for r, xs := range f.rounds {
		f.pos[r] = make([]int, len(xs))
	}
	for k, e := range all {
		f.sorted[k] = e.v
		f.pos[e.r][e.i] = k
	}
	return f
}

// without is f without round i (the same percentile, price and
// durations of the others).
func (f *figure) without(i int) *figure {
	rounds := append(slices.Clone(f.rounds[:i]), f.rounds[i+1:]...)
	var durs []float64
	if f.p == 0 {
		durs = append(slices.Clone(f.durations[:i]), f.durations[i+1:]...)
	}
	g := newFigure(rounds, durs, f.p)
	g.price, g.perJoule = f.price, f.perJoule
	return g
}

// n is the number of samples (requests for a rate).
func (f *figure) n() int {
	n := 0
	for _, r := range f.rounds {
		n += len(r)
	}
	return n
}

// value is the figure over every round pooled: the percentile of all
// values, or the sum of the flags over the sum of the durations.
func (f *figure) value() float64 {
	if f.p != 0 {
		if len(f.sorted) == 0 {
			return math.NaN()
		}
		return stats.PercentileSorted(f.sorted, f.p)
	}
	var sum, dur float64
	for r, xs := range f.rounds {
		sum += stats.Sum(xs)
		dur += f.durations[r]
	}
	return f.costOver(sum, dur)
}

// perRound is the figure of each round alone.
func (f *figure) perRound() []float64 {
	out := make([]float64, 0, len(f.rounds))
	for r, xs := range f.rounds {
		if f.p != 0 {
			out = append(out, stats.Percentile(xs, f.p))
			continue
		}
		if f.durations[r] > 0 {
			out = append(out, f.costOf(stats.Sum(xs)/f.durations[r]))
		}
	}
	return out
}

// constant reports whether every value of rate round r is the same (every
// request good, say), and that value: its resamples need no draw.
func (f *figure) constant(r int) (float64, bool) {
	if f.same == nil {
		f.same = make([]int8, len(f.rounds))
	}
	xs := f.rounds[r]
	switch {
	case len(xs) == 0:
		return 0, true
	case f.same[r] == 0:
		f.same[r] = 1
		for _, x := range xs[1:] {
			if x != xs[0] {
				f.same[r] = -1
				break
			}
		}
	}
	return xs[0], f.same[r] == 1
}

// resample draws one bootstrap replicate: as many rounds as the side has,
// drawn with replacement, and the figure of the pooled draw. Below
// MinClusterRounds rounds it is two-level: each drawn round's samples are
// drawn with replacement too. Drawing the rounds carries the spread
// between rounds into the interval; drawing the samples carries the
// sampling noise within a round. From MinClusterRounds on it is a cluster
// bootstrap: each drawn round with its samples as they are. counts is
// scratch space of len(f.sorted).
func (f *figure) resample(rng *rand.Rand, counts []int) float64 {
	R := len(f.rounds)
	if R == 0 {
		return math.NaN()
	}
	within := R < MinClusterRounds
	if f.p == 0 {
		var sum, dur float64
		for range R {
			r := rng.IntN(R)
			xs := f.rounds[r]
			if !within {
				for _, x := range xs {
					sum += x
				}
			} else if c, ok := f.constant(r); ok {
				// Every draw of the round is the same value.
				sum += c * float64(len(xs))
			} else {
				for range xs {
					sum += xs[rng.IntN(len(xs))]
				}
			}
			dur += f.durations[r]
		}
		return f.costOver(sum, dur)
	}
	clear(counts)
	m := 0
	for range R {
		pos := f.pos[rng.IntN(R)]
		for _, j := range pos {
			if within {
				j = pos[rng.IntN(len(pos))]
			}
			counts[j]++
		}
		m += len(pos)
	}
	return stats.PercentileOfCounts(f.sorted, counts, m, f.p)
}

// MinClusterRounds is the rounds per side from which a bootstrap
// replicate draws only rounds (resample), not also each round's
// samples: a round's own sampling noise already shows in how its figure
// differs from the other rounds', so drawing its samples again counts that
// noise twice (Davison and Hinkley 1997, §3.8: the two-stage bootstrap
// overestimates the variance unless the between-round variance dominates;
// for a p99 of rounds of a few hundred requests about twice the variance,
// an interval √2 too wide). Below this count the rounds are too few to
// show that noise (a bootstrap of R rounds gives (R−1)/R of their
// variance, and with 2 to 9 distinct rounds only a few distinct draws), so
// both levels are drawn, erring wide. At MinClusterRounds and above the
// interval is widened by √(R/(R−1)) (diffCI) for the same (R−1)/R.
const MinClusterRounds = 10

// diffCI is the bootstrap interval at level conf of the relative
// difference (c - b) / b of two figures, from iters replicates of each side
// drawn independently (seeded, so the interval is reproducible). ok is false
// when fewer than half of the replicates were defined (b resampled to 0).
func diffCI(b, c *figure, iters int, conf float64, seed uint64) (lo, hi float64, ok bool) {
	rng := stats.NewRand(seed, bootstrapStream)
	cb, cc := make([]int, len(b.sorted)), make([]int, len(c.sorted))
	est := make([]float64, 0, iters)
	for range iters {
		x, y := b.resample(rng, cb), c.resample(rng, cc)
		if d := (y - x) / x; !math.IsNaN(d) && !math.IsInf(d, 0) {
			est = append(est, d)
		}
	}
	if len(est) < iters/2 || len(est) == 0 {
		return 0, 0, false
	}
	lo, hi = stats.PercentileInterval(est, conf)
	if r := min(len(b.rounds), len(c.rounds)); r >= MinClusterRounds {
		// A cluster bootstrap of r rounds gives (r−1)/r of the variance:
		// widen the half-widths around the change of the pooled figures.
		d := (c.value() - b.value()) / b.value()
		w := math.Sqrt(float64(r) / float64(r-1))
		lo, hi = d-(d-lo)*w, d+(hi-d)*w
	}
	return lo, hi, true
}

// sideCI is the bootstrap interval at level conf of one side's figure f
// itself, from iters of its replicates (resample: the same two-level or
// cluster draw as diffCI's, seeded), widened as diffCI's from
// MinClusterRounds rounds on. ok is false when fewer than half of the
// replicates were finite.
func sideCI(f *figure, iters int, conf float64, seed uint64) (lo, hi float64, ok bool) {
	rng := rand.New(rand.NewPCG(seed, bootstrapStream))
	counts := make([]int, len(f.sorted))
	est := make([]float64, 0, iters)
	for range iters {
		if x := f.resample(rng, counts); !math.IsNaN(x) && !math.IsInf(x, 0) {
			est = append(est, x)
		}
	}
	if len(est) < iters/2 || len(est) == 0 {
		return 0, 0, false
	}
	slices.Sort(est)
	alpha := (1 - conf) / 2
	lo, hi = stats.PercentileSorted(est, 100*alpha), stats.PercentileSorted(est, 100*(1-alpha))
	if r := len(f.rounds); r >= MinClusterRounds {
		v := f.value()
		w := math.Sqrt(float64(r) / float64(r-1))
		lo, hi = v-(v-lo)*w, v+(hi-v)*w
	}
	return lo, hi, true
}

// ksTest is the two-sample Kolmogorov–Smirnov test of a and b: the largest
// distance d between their empirical distribution functions and the
// asymptotic p-value of d (Stephens' small-sample correction, as Numerical
// Recipes' kstwo). Ties are handled by advancing both samples past equal
// values, so identical samples give d = 0 and p = 1.
func ksTest(a, b []float64) (d, p float64) {
	if len(a) == 0 || len(b) == 0 {
		return 0, 1
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	n, m := float64(len(x)), float64(len(y))
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		v := math.Min(x[i], y[j])
		for i < len(x) && x[i] == v {
			i++
		}
		for j < len(y) && y[j] == v {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/n-float64(j)/m))
	}
	en := math.Sqrt(n * m / (n + m))
	return d, ksQ((en + 0.12 + 0.11/en) * d)
}

// ksQ is the Kolmogorov distribution's survival function
// 2 Σ (-1)^(k-1) exp(-2 k² λ²).
func ksQ(lambda float64) float64 {
	if lambda < 1e-3 {
		return 1
	}
	sum, sign, prev := 0.0, 1.0, 0.0
	for k := 1; k <= 100; k++ {
		term := sign * 2 * math.Exp(-2*float64(k*k)*lambda*lambda)
		sum += term
		if math.Abs(term) <= 1e-10*math.Abs(prev) || math.Abs(term) <= 1e-16*sum {
			return math.Min(math.Max(sum, 0), 1)
		}
		sign = -sign
		prev = term
	}
	return 1 // did not converge: lambda is tiny
}
