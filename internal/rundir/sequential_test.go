package rundir

import (
	"context"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// TestRunCompareSequential runs sequential comparisons over loopback HTTP
// against two simulators: a candidate five times slower per decode step
// fails at an early look (fewer than the budget allows), an identical pair
// passes within the budget; each look is recorded in result.json with its
// boundary, and analyze of the run directory gives the same verdict.
func TestRunCompareSequential(t *testing.T) {
	f := func(name string, candStep time.Duration, want string) {
		t.Helper()
		base, _ := simtest.Start(t, simtest.Fast())
		cc := simtest.Fast()
		cc.StepBase = candStep
		cand, _ := simtest.Start(t, cc)
		p := testProcedure(t, base, cand, t.TempDir())
		p.Rounds = 4                                // one A/B/B/A block per look: 40 requests per side
		p.Budget = compare.Budget{Requests: 5 * 40} // five looks
		res, err := RunCompare(context.Background(), p, CompareOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cr, s := res.Result, res.Result.Sequential
		if s == nil || len(s.Looks) == 0 || s.MaxLooks != 5 {
			t.Fatalf("%s: sequential %+v", name, s)
		}
		last := s.Looks[len(s.Looks)-1]
		t.Logf("%s: %s after %d looks of %d (z %.3f, %d requests per side); %v", name, cr.Verdict, len(s.Looks), s.MaxLooks, last.Z,
			last.NPerSide, cr.Result.Reasons)
		if cr.Verdict != want || last.Outcome != want || s.Stopped != "decided" {
			t.Errorf("%s: verdict %s (stopped: %s), want %s: %v", name, cr.Verdict, s.Stopped, want, cr.Result.Reasons)
		}
		if len(cr.Rounds) < 4*len(s.Looks) || last.Rounds != 4*len(s.Looks) || last.NPerSide < 40*len(s.Looks) {
			t.Errorf("%s: %d looks over %d rounds: %+v", name, len(s.Looks), len(cr.Rounds), last)
		}
		for i, l := range s.Looks {
			if l.Look != i+1 || !(l.Z > 1.96) || l.Spent <= 0 || l.Spent > compare.SeqAlpha || len(l.Figures) == 0 {
				t.Errorf("%s: look %+v", name, l)
			}
		}
		if want == compare.OutcomeFail && len(s.Looks) >= s.MaxLooks {
			t.Errorf("%s: a clear regression took every look (%d)", name, len(s.Looks))
		}
		if v, err := artifacts.Verify(res.Dir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
			t.Errorf("%s: verify: %v %v", name, err, v.Problems)
		}
		a, err := Analyze([]string{res.Dir}, AnalyzeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Comparison.Outcome != cr.Verdict || len(a.Comparison.Figures) != len(cr.Result.Figures) {
			t.Fatalf("%s: analyze %s, compare %s", name, a.Comparison.Outcome, cr.Verdict)
		}
		for i, f := range a.Comparison.Figures {
			if g := cr.Result.Figures[i]; f.CILo != g.CILo || f.CIHi != g.CIHi || f.Conf != g.Conf || f.Status != g.Status {
				t.Errorf("%s: analyze figure %+v, compare %+v", name, f, g)
			}
		}
	}
	f("five times slower decode", 5*time.Millisecond, compare.OutcomeFail)
	f("identical", time.Millisecond, compare.OutcomePass)
}
