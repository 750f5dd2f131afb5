package config

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// checkStepBudget refuses an open-loop sweep whose highest rate over its
// duration makes a step of more than sweep.MaxStepRequests requests, naming
// Duration (and Rates) so that the spec's error names the keys: the sweep
// itself finds it only at that step, after the lower ones ran, and names
// the CLI flag (issue 22 D8). The highest rate is the list's, or the
// search's MaxRate for rates auto (max_sweep_rate); a closed loop, a trace
// or num_prompts is bounded elsewhere.
func checkStepBudget(c sweep.Config) error {
	if c.NumPrompts > 0 || c.Duration <= 0 || c.Trace != nil {
		return nil
	}
	rate := 0.0
	switch {
	case len(c.Rates) > 0:
		rate = slices.Max(c.Rates)
	case c.Auto && c.Search.MaxRate > 0:
		rate = c.Search.MaxRate
	default:
		return nil
	}
	send := rate
	if c.Sharded() {
		send /= float64(c.ShardCount)
	}
	if n := math.Round(send * c.Duration.Seconds()); n > sweep.MaxStepRequests {
		return &sweep.FieldError{Field: "Duration", Err: fmt.Errorf(
			"{Duration} %s at {Rates} %g req/s makes %.0f requests per step, more than %d: shorten {Duration} or lower {Rates}",
			c.Duration.Round(time.Millisecond), rate, n, sweep.MaxStepRequests)}
	}
	return nil
}
