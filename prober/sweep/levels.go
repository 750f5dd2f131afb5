package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/go-kit/log/level"
)

// runLevels runs the ladder or the adaptive search.
func (r *runner) runLevels(ctx context.Context) error {
	c := r.cfg
	if c.Trace != nil {
		return r.runTraceLevels(ctx)
	}
	if c.Auto {
		opts := c.Search
		if opts.Start <= 0 {
			r.probe = r.runProbe(ctx)
			if ctx.Err() != nil {
				return nil
			}
			switch {
			case r.probe.EstimateReqPerS > 0:
				// Start below what the client drove without a flag of
				// its own: a level it cannot drive says nothing.
				opts.Start = roundRate(math.Min(r.probe.EstimateReqPerS, r.probe.ClientCeilingReqPerS))
				opts.Capacity = r.probe.EstimateReqPerS
				// The estimate is the saturated throughput: the knee is
				// rarely more than a factor 1.4 away from it, so the
				// search brackets with x/÷ sqrt 2 rather than 2, which
				// saves a narrowing step in the common case.
				if opts.Factor == 0 {
					opts.Factor = ProbeSearchFactor
				}
			default:
				opts.Start = DefaultAutoStart
				level.Warn(r.logger).Log("msg", "throughput probe gave no estimate: the search starts at the default rate",
					"start", opts.Start, "why", r.probe.Note)
			}
			r.probe.StartRate = opts.Start
			level.Info(r.logger).Log("msg", "throughput probe done", "estimate_req_per_s", fmt.Sprintf("%.4g", r.probe.EstimateReqPerS),
				"client_ceiling_req_per_s", fmt.Sprintf("%.4g", r.probe.ClientCeilingReqPerS), "search_start", opts.Start, "note", r.probe.Note)
		}
		var runs [][]*Step // the steps of each probe, in the order run
		res, err := Search(opts, func(rate float64, minRequests int) (StepOutcome, error) {
			if err := ctx.Err(); err != nil {
				return StepOutcome{}, err
			}
			first := len(r.steps)
			l, err := r.runLevelLength(ctx, rate, minRequests)
			runs = append(runs, r.steps[first:])
			if err != nil {
				return StepOutcome{}, err
			}
			if ctx.Err() != nil {
				return StepOutcome{}, ctx.Err()
			}
			return l.Outcome, nil
		})
		for i, o := range res.Steps {
			if i < len(runs) {
				for _, st := range runs[i] {
					st.Search = &StepVerdict{Verdict: o.Verdict, Why: o.Why}
				}
			}
		}
		r.search = &res
		if res.Stop != "" {
			level.Warn(r.logger).Log("msg", "knee search stopped early", "why", res.Stop)
		}
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	levels := c.Rates
	if len(c.Concurrency) > 0 {
		levels = nil
		for _, n := range c.Concurrency {
			levels = append(levels, float64(n))
		}
	}
	for _, lv := range levels {
		if ctx.Err() != nil {
			return nil
		}
		if _, err := r.runLevel(ctx, lv); err != nil {
			return err
		}
	}
	return r.repeatLadderBrackets(ctx)
}

// repeatLadderBrackets reruns, after a ladder of one round, the levels
// that bracket its knee (the knee level and the first failing level above
// it), each with arrivals and prompts of its own (a new attempt's seed),
// until each has Search.Repeats valid, decided runs (the ladder's own
// included) or twice that many runs: the knee's interval then holds the
// spread that arrival bursts cause from run to run, which resampling the
// requests of one step cannot show (KneeInterval.Repeats). The reruns are
// marked VerdictRepeat and do not move the knee. Nothing is rerun for
// several rounds (the interval is over the rounds), a closed-loop or
// background sweep, or a knee not bracketed.
func (r *runner) repeatLadderBrackets(ctx context.Context) error {
	c := r.cfg
	repeats := c.Search.Repeats
	if repeats <= 0 {
		repeats = DefaultKneeRepeats
	}
	if repeats < 2 || c.Rounds > 1 || len(c.Concurrency) > 0 || c.Background() || ctx.Err() != nil {
		return nil
	}
	k := LadderKnee(r.ladderOutcomes(), DefaultGoodputRatio)
	if !k.Found || k.Upper <= 0 || math.IsInf(k.Upper, 1) {
		return nil
	}
	for _, lv := range []float64{k.Level, k.Upper} {
		for tries := ladderRuns(r.steps, lv, false).Runs; ladderRuns(r.steps, lv, true).Runs < repeats && tries < 2*repeats; tries++ {
			if ctx.Err() != nil {
				return nil
			}
			st, err := r.runStep(ctx, lv, 1)
			if st != nil {
				v, why := st.outcome(r.levelLabel(lv), r.stepMode(lv)).judge(DefaultGoodputRatio)
				st.Search = &StepVerdict{Verdict: VerdictRepeat, Why: "repeat: " + v + ": " + why}
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// ladderOutcomes are the ladder's levels as the knee reads them, the
// reruns of repeatLadderBrackets left out.
func (r *runner) ladderOutcomes() []StepOutcome {
	var out []StepOutcome
	for _, lv := range r.levels {
		var rounds []*Step
		for _, s := range r.steps {
			if s.Level == lv && !s.isRepeat() {
				rounds = append(rounds, s)
			}
		}
		if len(rounds) > 0 {
			out = append(out, aggregate(r.levelLabel(lv), lv, r.stepMode(lv), rounds, DefaultGoodputRatio).Outcome)
		}
	}
	return out
}

// isRepeat reports whether the step is a rerun of a level bracketing the
// knee (a search's or a ladder's), which does not move the knee.
func (s *Step) isRepeat() bool { return s.Search != nil && s.Search.Verdict == VerdictRepeat }

// outcome is the step judged alone, as a level of one run.
func (s *Step) outcome(label, mode string) StepOutcome {
	return aggregate(label, s.Level, mode, []*Step{s}, DefaultGoodputRatio).Outcome
}

// ladderRuns counts a ladder's valid, decided runs of level and those that
// passed, each judged alone (the repeats as repeatLadderBrackets judged
// them); all counts every run, valid or not.
func ladderRuns(steps []*Step, level float64, validOnly bool) LevelRuns {
	lr := LevelRuns{Level: level}
	for _, st := range steps {
		if st.Level != level {
			continue
		}
		if !validOnly {
			lr.Runs++
			continue
		}
		if !st.InKnee() {
			continue
		}
		var v string
		if st.isRepeat() {
			v, _, _ = strings.Cut(strings.TrimPrefix(st.Search.Why, "repeat: "), ":")
		} else {
			v, _ = st.outcome(st.Label, st.Mode).judge(DefaultGoodputRatio)
		}
		switch v {
		case VerdictPass:
			lr.Runs++
			lr.Passed++
		case VerdictFail:
			lr.Runs++
		}
	}
	return lr
}

// roundRate rounds a rate estimate to three significant digits, so the
// first level of a search reads "rate=287" rather than "rate=286.9371".
func roundRate(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-2)
	return math.Round(v/p) * p
}

// runLevelLength is runLevel with every step sending at least minRequests
// requests (0: the configured length): the search's longer reruns. The
// step length is the Config's (NumPrompts, or MinPrompts for a step bounded
// by a duration), raised for these steps only.
func (r *runner) runLevelLength(ctx context.Context, lv float64, minRequests int) (Level, error) {
	if minRequests > 0 {
		saved := r.cfg
		defer func() { r.cfg = saved }()
		if r.cfg.NumPrompts > 0 {
			r.cfg.NumPrompts = max(r.cfg.NumPrompts, minRequests)
		} else {
			r.cfg.MinPrompts = max(r.cfg.MinPrompts, minRequests)
		}
	}
	return r.runLevel(ctx, lv)
}

// runLevel runs every round of one level and aggregates them. Running a
// level again (the search reruns an invalid one) adds attempts to it.
func (r *runner) runLevel(ctx context.Context, lv float64) (Level, error) {
	if !slices.Contains(r.levels, lv) {
		r.levels = append(r.levels, lv)
	}
	var rounds []*Step
	for round := 1; round <= r.cfg.Rounds; round++ {
		if ctx.Err() != nil && len(rounds) > 0 {
			break
		}
		st, err := r.runStep(ctx, lv, round)
		if st != nil {
			rounds = append(rounds, st)
		}
		if err != nil {
			return Level{}, err
		}
	}
	return aggregate(r.levelLabel(lv), lv, r.stepMode(lv), rounds, DefaultGoodputRatio), nil
}

func (r *runner) stepMode(lv float64) string {
	switch {
	case len(r.cfg.Concurrency) > 0:
		return ModeClosed
	case math.IsInf(lv, 1):
		return ModeBurst
	case r.cfg.MaxConcurrency > 0:
		return ModeBoth
	}
	return ModeOpen
}

func (r *runner) levelLabel(lv float64) string {
	if sp, ok := r.traceSpeed(lv); ok {
		return "trace-speed=" + fmtLevel(sp)
	}
	if len(r.cfg.Concurrency) > 0 {
		return "concurrency=" + fmtLevel(lv)
	}
	return "rate=" + fmtLevel(lv)
}

// stepSeed derives a step's seed from the sweep seed and the step's level
// and round, so a level's arrivals and prompts do not depend on the order in
// which the search visits levels.
func stepSeed(seed int64, lv float64, round int) uint64 {
	return attemptSeed(seed, lv, round, 1)
}

// attemptSeed is stepSeed for the attempt-th run of a step (a rerun of an
// invalid level draws new arrivals and prompts; attempt 1 is stepSeed).
func attemptSeed(seed int64, lv float64, round, attempt int) uint64 {
	x := uint64(seed) ^ math.Float64bits(lv)*0x9e3779b97f4a7c15 ^ uint64(round)*0xbf58476d1ce4e5b9
	if attempt > 1 {
		x ^= uint64(attempt-1) * 0xd6e8feb86659fd93
	}
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	return x ^ x>>29
}
