package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"

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
	return nil
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
