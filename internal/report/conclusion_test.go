package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// shortLadder is a ladder of levels 2 and 4 under an SLO that kept up 99 %:
// the levels whose n is below 100 are too short to decide (their SLO p99
// rests on too few samples). Levels and knee are derived as the sweep
// derives them.
func shortLadder(n2, n4 int) *sweep.Result {
	res := ladder()
	res.Steps = []*sweep.Step{step(0, 2, 1.98, 80, 12, n2), step(1, 4, 3.96, 90, 13, n4)}
	var outcomes []sweep.StepOutcome
	res.Levels = nil
	for _, st := range res.Steps {
		st.Stats.GoodputRatio = 0.99
		o := sweep.StepOutcome{Level: st.Level, Offered: st.Level, Goodput: 0.99 * st.Level, Served: st.Level,
			Requests: st.Stats.Requests, Samples: st.Stats.Requests, NeedSamples: sweep.MinSLOSamples, SLOHeld: true, Valid: true,
			MeasuredGoodput: st.Stats.RequestGoodput}
		res.Levels = append(res.Levels, sweep.Level{Label: st.Label, Level: st.Level, Rounds: 1, ValidRounds: 1,
			GoodputRatio: sweep.Spread{Mean: 0.99}, Outcome: o, Passes: o.Passes(ratio)})
		outcomes = append(outcomes, o)
	}
	res.Knee = sweep.LadderKnee(outcomes, ratio)
	return res
}

// TestTooShortWording is issue 22 V9: when the levels were only too short
// to decide, the output said "knee: not found (no valid level passed)" and
// "no level tried kept up … run lower levels" although they kept up 99 %,
// and quoted a max goodput from a step too short to judge.
func TestTooShortWording(t *testing.T) {
	for _, tc := range []struct {
		name        string
		res         *sweep.Result
		want, never []string
	}{
		{"every level too short", shortLadder(23, 23),
			[]string{"knee: not found (levels 2 req/s, 4 req/s were too short to decide", "no level could be decided", "though they kept up (keep-up 99%, 99%)", "Run longer steps"},
			[]string{"no valid level passed", "no level tried kept up", "run lower levels", "max goodput", "highest goodput"}},
		{"the higher level too short", shortLadder(200, 23),
			[]string{"knee: not found; at least 2 req/s (level 4 req/s was too short to decide", "Every level that could be decided kept up, up to 2 req/s", "max goodput: 1.98 req/s at 2 req/s"},
			[]string{"every level tried passed", "above 2 req/s", "max goodput: 3.96"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tableText(t, tc.res) + "\n" + strings.Join(verdict(tc.res), "\n")
			checkText(t, "output", out, out, tc.want, tc.never)
		})
	}
}
