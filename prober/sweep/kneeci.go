package sweep

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// MaxKneeSamples is the most requests of a step that the knee's bootstrap
// keeps (16 bytes each): a larger step has no per-request samples for it
// and the interval says so.
const MaxKneeSamples = 200_000

// DefaultKneeIters is the number of bootstrap replicates of the knee
// interval.
const DefaultKneeIters = 1000

// KneeConf is the confidence level of the knee's bootstrap interval.
const KneeConf = 0.95

// kneeStream is the fixed second word of the knee bootstrap's PCG state.
const kneeStream = 0x6b6e6565626f6f74 // "kneeboot"

// Methods of a KneeInterval.
const (
	// KneeFromRounds: the knee rule run on each round alone; the interval
	// is the range of the rounds' knees.
	KneeFromRounds = "rounds"
	// KneeFromBootstrap: each step around the knee resampled (its requests
	// drawn with replacement), its keep-up and SLO p99s recomputed, and the
	// knee rule run again; the interval holds KneeConf of the replicates.
	KneeFromBootstrap = "bootstrap"
)

// KneeInterval is the uncertainty of the knee (result.json knee.interval).
// Lo and Hi are levels that ran; 0 stands for "below the lowest level"
// (no level passed in that round or replicate).
type KneeInterval struct {
	// Method is KneeFromRounds or KneeFromBootstrap.
	Method string  `json:"method"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	// Conf is the confidence level (KneeConf) of a bootstrap interval; 0
	// for the range over rounds.
	Conf float64 `json:"conf,omitempty"`
	// PerRound is each round's knee (its Knee.Estimate: the highest passing
	// level when no knee was bracketed in that round), with Rounds.
	PerRound []float64 `json:"per_round,omitempty"`
	// Iters is the number of bootstrap replicates and Located how many of
	// them bracketed a knee (for the rounds: how many rounds did).
	Iters   int `json:"iters,omitempty"`
	Located int `json:"located"`
	// Resampled lists the levels whose requests the bootstrap redrew (the
	// levels around the knee); the others kept their measured outcome.
	Resampled []float64 `json:"resampled_levels,omitempty"`
	// Repeats are the independent runs (arrivals and prompts of their own)
	// of the knee level and of the first failing level above it, for an
	// adaptive search and for a ladder of one round, which reruns them
	// after its last level (SearchOptions.Repeats, --knee-repeats): how many ran
	// validly and how many passed. Lo and Hi include their spread: Hi is
	// at least the failing level when a run of it passed, Lo at most the
	// next lower level that passed every run when a run of the knee level
	// failed. Resampling requests within one step cannot show the spread
	// that arrival bursts cause from run to run; these runs do.
	Repeats []LevelRuns `json:"repeats,omitempty"`
}

// LevelRuns is how the valid, decided runs of one level went.
type LevelRuns struct {
	Level  float64 `json:"level"`
	Runs   int     `json:"runs"`
	Passed int     `json:"passed"`
}

// searchRuns counts the search's valid, decided runs of level and those
// that passed (pass, confirmed, a repeat that passed).
func searchRuns(steps []*Step, level float64) LevelRuns {
	lr := LevelRuns{Level: level}
	for _, st := range steps {
		if st.Level != level || st.Search == nil || !st.InKnee() {
			continue
		}
		switch v := st.Search; {
		case v.Verdict == VerdictPass || v.Verdict == VerdictConfirmed || v.Verdict == VerdictRepeat && strings.HasPrefix(v.Why, "repeat: pass"):
			lr.Runs++
			lr.Passed++
		case v.Verdict == VerdictFail || v.Verdict == VerdictUnconfirmed || v.Verdict == VerdictRepeat:
			lr.Runs++
		}
	}
	return lr
}

// widenByRepeats adds the repeated runs of the knee level and the failing
// level above it (a search's, or a ladder's reruns: runs counts them) to
// ki and widens it by their spread.
func (r *runner) widenByRepeats(ki *KneeInterval, res *Result, runs func([]*Step, float64) LevelRuns) {
	k := res.Knee
	lo, hi := runs(res.Steps, k.Level), runs(res.Steps, k.Upper)
	ki.Repeats = []LevelRuns{lo, hi}
	if hi.Passed > 0 {
		ki.Hi = math.Max(ki.Hi, k.Upper)
	}
	if lo.Passed < lo.Runs {
		below := 0.0
		for _, lv := range sortedLevels(r.levels) {
			if lr := runs(res.Steps, lv); lv < k.Level && lr.Runs > 0 && lr.Passed == lr.Runs {
				below = lv
			}
		}
		ki.Lo = math.Min(ki.Lo, below)
	}
}

// kneeSample is what the knee's bootstrap needs of one request: its SLO
// metrics in ms (TPOT negative without one; TTFT and TTFA negative for a
// non-streamed request, embeddings and rerank included: E2E is its only
// latency) and whether it succeeded and was good.
type kneeSample struct {
	ttft, tpot, e2el, ttfa float32
	ok, good               bool
}

func newKneeSample(r *reqSample) kneeSample {
	k := kneeSample{ok: r.ok, good: r.good, tpot: -1}
	if r.ok {
		k.ttft, k.e2el, k.ttfa = float32(ms(r.ttft)), float32(ms(r.e2e)), float32(ms(r.ttfa))
		if r.out > 1 && !r.noStream {
			k.tpot = float32(ms((r.e2e - r.ttft) / time.Duration(r.out-1)))
		}
		if r.noStream {
			k.ttft, k.ttfa = -1, -1
		}
	}
	return k
}

// value is the sample's value of an SLO metric, and whether it has one.
func (k kneeSample) value(metric string) (float64, bool) {
	if !k.ok {
		return 0, false
	}
	switch metric {
	case slo.NameTTFT:
		return float64(k.ttft), k.ttft >= 0
	case slo.NameTPOT:
		return float64(k.tpot), k.tpot >= 0
	case slo.NameE2EL:
		return float64(k.e2el), true
	case slo.NameTTFA:
		return float64(k.ttfa), k.ttfa >= 0
	}
	return 0, false
}

// kneeInterval states the knee's uncertainty: over the rounds when the
// sweep ran more than one, else by the bootstrap. nil when no knee was
// found (there is nothing to bound) or the steps around it kept no
// per-request samples.
func (r *runner) kneeInterval(res *Result) *KneeInterval {
	if !res.Knee.Found {
		return nil
	}
	var ki *KneeInterval
	if r.cfg.Rounds > 1 {
		ki = r.kneeOverRounds()
	} else {
		ki = r.kneeBootstrap(res, DefaultKneeIters, uint64(r.cfg.Seed))
	}
	switch {
	case ki == nil:
	case r.search != nil:
		r.widenByRepeats(ki, res, searchRuns)
	case slices.ContainsFunc(res.Steps, (*Step).isRepeat):
		r.widenByRepeats(ki, res, func(steps []*Step, level float64) LevelRuns { return ladderRuns(steps, level, true) })
	}
	return ki
}

// levelSteps returns the steps of each level, in level order.
func (r *runner) levelSteps(keep func(*Step) bool) (levels []float64, steps [][]*Step) {
	for _, lv := range sortedLevels(r.levels) {
		var ss []*Step
		for _, s := range r.steps {
			if s.Level == lv && (keep == nil || keep(s)) {
				ss = append(ss, s)
			}
		}
		if len(ss) > 0 {
			levels, steps = append(levels, lv), append(steps, ss)
		}
	}
	return levels, steps
}

func sortedLevels(ls []float64) []float64 {
	out := slices.Clone(ls)
	slices.Sort(out)
	return slices.Compact(out)
}

// kneeOverRounds runs the knee rule on each round's steps alone.
func (r *runner) kneeOverRounds() *KneeInterval {
	ki := &KneeInterval{Method: KneeFromRounds}
	for round := 1; round <= r.cfg.Rounds; round++ {
		levels, steps := r.levelSteps(func(s *Step) bool { return s.Round == round })
		if len(levels) == 0 {
			continue
		}
		var outcomes []StepOutcome
		for i, lv := range levels {
			outcomes = append(outcomes, aggregate(r.levelLabel(lv), lv, r.stepMode(lv), steps[i], DefaultGoodputRatio).Outcome)
		}
		k := LadderKnee(outcomes, DefaultGoodputRatio)
		if k.Found {
			ki.Located++
		}
		ki.PerRound = append(ki.PerRound, k.Estimate())
	}
	if len(ki.PerRound) == 0 {
		return nil
	}
	ki.Lo, ki.Hi = slices.Min(ki.PerRound), slices.Max(ki.PerRound)
	return ki
}

// stepBoot resamples one step's requests.
type stepBoot struct {
	st      *Step
	samples []kneeSample
	// metrics are the step's SLO checks: each metric's values sorted, the
	// position of each request's value in them (-1: none) and scratch
	// counts.
	metrics []bootMetric
}

type bootMetric struct {
	threshold float64
	sorted    []float64
	pos       []int32
	counts    []int
}

func newStepBoot(st *Step, s slo.SLO) *stepBoot {
	b := &stepBoot{st: st, samples: st.Stats.kneeSamples}
	for _, t := range s.Thresholds() {
		m := bootMetric{threshold: float64(t.Value) / 1e6, pos: make([]int32, len(b.samples))}
		type iv struct {
			v float64
			i int
		}
		var all []iv
		for i, k := range b.samples {
			m.pos[i] = -1
			if v, ok := k.value(t.Name); ok {
				all = append(all, iv{v, i})
			}
		}
		slices.SortFunc(all, func(a, b iv) int { return cmp.Compare(a.v, b.v) })
		m.sorted = make([]float64, len(all))
		for j, e := range all {
			m.sorted[j], m.pos[e.i] = e.v, int32(j)
		}
		m.counts = make([]int, len(all))
		b.metrics = append(b.metrics, m)
	}
	return b
}

// draw returns a copy of the step whose figures the knee uses are those of
// one resample of its requests: the good and completed counts, keep-up,
// served throughput and SLO p99s. The step's timing (duration, arrival
// window, the drain correction) is kept as measured.
func (b *stepBoot) draw(rng *rand.Rand) *Step {
	n := len(b.samples)
	for i := range b.metrics {
		clear(b.metrics[i].counts)
	}
	good, ok := 0, 0
	m := make([]int, len(b.metrics))
	for range n {
		i := rng.IntN(n)
		k := b.samples[i]
		if k.ok {
			ok++
		}
		if k.good {
			good++
		}
		for j := range b.metrics {
			if p := b.metrics[j].pos[i]; p >= 0 {
				b.metrics[j].counts[p]++
				m[j]++
			}
		}
	}
	cp := *b.st
	s := &cp.Stats
	old := b.st.Stats
	s.Good, s.Completed, s.Failed = good, ok, n-ok
	if s.Duration > 0 {
		s.RequestThroughput = float64(ok) / s.Duration
		s.RequestGoodput = float64(good) / s.Duration
	}
	switch {
	case old.Good > 0:
		s.GoodputRatio = old.GoodputRatio * float64(good) / float64(old.Good)
	case ok > 0 && (b.st.Mode == ModeClosed || b.st.Mode == ModeBurst):
		s.GoodputRatio = float64(good) / float64(ok)
	default:
		s.GoodputRatio = 0
	}
	if old.Completed > 0 {
		s.KneeThroughput = old.KneeThroughput * float64(ok) / float64(old.Completed)
	}
	if old.Good > 0 {
		s.KneeGoodput = old.KneeGoodput * float64(good) / float64(old.Good)
	}
	s.SLOHeld = true
	for j, bm := range b.metrics {
		if m[j] == 0 {
			continue
		}
		if p99 := stats.PercentileOfCounts(bm.sorted, bm.counts, m[j], SLOPercentile); p99 > bm.threshold {
			s.SLOHeld = false
		}
	}
	return &cp
}

// kneeBootstrap resamples the requests of the steps around the knee (the
// levels from the one below the bracket's low end to the one above its
// high end), reruns the knee rule on every replicate and returns the
// central KneeConf of the replicates' knees.
func (r *runner) kneeBootstrap(res *Result, iters int, seed uint64) *KneeInterval {
	// A ladder's reruns of the bracket are not part of its levels' figures
	// (result: they back the interval through widenByRepeats).
	levels, steps := r.levelSteps(func(s *Step) bool { return r.search != nil || !s.isRepeat() })
	lo, hi := slices.Index(levels, res.Knee.Low), slices.Index(levels, res.Knee.Upper)
	if lo < 0 || hi < 0 {
		return nil
	}
	from, to := max(lo-1, 0), min(hi+1, len(levels)-1)
	boots := make([][]*stepBoot, len(levels))
	outcomes := make([]StepOutcome, len(levels))
	ki := &KneeInterval{Method: KneeFromBootstrap, Conf: KneeConf, Iters: iters}
	for i, lv := range levels {
		outcomes[i] = aggregate(r.levelLabel(lv), lv, r.stepMode(lv), steps[i], DefaultGoodputRatio).Outcome
		if i < from || i > to {
			continue
		}
		var bs []*stepBoot
		for _, st := range steps[i] {
			if st.Stats.kneeSamples == nil && st.Stats.Requests > 0 {
				bs = nil // too large to keep: this level keeps its outcome
				break
			}
			bs = append(bs, newStepBoot(st, r.cfg.SLO))
		}
		if bs != nil {
			boots[i] = bs
			ki.Resampled = append(ki.Resampled, lv)
		}
	}
	if len(ki.Resampled) == 0 {
		return nil
	}
	rng := stats.NewRand(seed, kneeStream)
	est := make([]float64, 0, iters)
	drawn := make([]StepOutcome, len(levels))
	for range iters {
		copy(drawn, outcomes)
		for i, bs := range boots {
			if bs == nil {
				continue
			}
			rounds := make([]*Step, len(bs))
			for j, b := range bs {
				rounds[j] = b.draw(rng)
			}
			drawn[i] = aggregate("", levels[i], r.stepMode(levels[i]), rounds, DefaultGoodputRatio).Outcome
		}
		k := LadderKnee(drawn, DefaultGoodputRatio)
		if k.Found {
			ki.Located++
		}
		est = append(est, k.Estimate())
	}
	slices.Sort(est)
	// The bounds are replicate knees (levels that ran), not interpolated
	// between levels: the lower at rank floor(α(n-1)), the upper at
	// ceil((1-α)(n-1)).
	alpha := (1 - KneeConf) / 2
	ki.Lo = est[int(math.Floor(alpha*float64(len(est)-1)))]
	ki.Hi = est[int(math.Ceil((1-alpha)*float64(len(est)-1)))]
	return ki
}

// Contains reports whether level lies within the interval.
func (k *KneeInterval) Contains(level float64) bool {
	return k != nil && level >= k.Lo && level <= k.Hi
}

// Text states the interval in words: "95 % interval 4–8 (bootstrap of the
// requests of levels 4, 8, 16: 1000 replicates, 97 % located a knee)" or
// "range over 3 rounds 4–8 (per round 4, 8, 8)".
func (k *KneeInterval) Text(unit string) string {
	if k == nil {
		return ""
	}
	b := func(v float64) string {
		if v == 0 {
			return "below the lowest level"
		}
		return fmtLevel(v)
	}
	rng := b(k.Lo) + "–" + b(k.Hi)
	if k.Lo == k.Hi {
		rng = b(k.Lo)
	}
	if unit != "" {
		rng += " " + unit
	}
	reps := ""
	if len(k.Repeats) > 0 {
		parts := make([]string, len(k.Repeats))
		for i, lr := range k.Repeats {
			parts[i] = fmt.Sprintf("%s passed %d of %d", fmtLevel(lr.Level), lr.Passed, lr.Runs)
		}
		reps = "; independent runs, each with arrivals of its own, included: " + strings.Join(parts, ", ")
	}
	switch k.Method {
	case KneeFromRounds:
		per := make([]string, len(k.PerRound))
		for i, v := range k.PerRound {
			per[i] = b(v)
		}
		return fmt.Sprintf("range over %d rounds %s (the knee rule on each round alone: %s; %d of %d rounds bracketed a knee%s)",
			len(k.PerRound), rng, strings.Join(per, ", "), k.Located, len(k.PerRound), reps)
	}
	res := make([]string, len(k.Resampled))
	for i, v := range k.Resampled {
		res[i] = fmtLevel(v)
	}
	return fmt.Sprintf("%.0f %% interval %s (bootstrap: the requests of levels %s resampled %d times, the knee rule rerun on each; %s of the replicates bracketed a knee%s)",
		100*k.Conf, rng, strings.Join(res, ", "), k.Iters, pct100(float64(k.Located)/float64(max(k.Iters, 1))), reps)
}
