package rundir

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// TestRunCompareSequential runs sequential comparisons over loopback HTTP
// against two simulators: a candidate five times slower per decode step
// fails at an early look (fewer than the budget allows), an identical pair
// passes within the budget; each look is recorded in result.json with its
// boundary, and analyze of the run directory gives the same verdict.
func TestRunCompareSequential(t *testing.T) {
	testutil.Slow(t)
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

// TestRunCompareSequentialStarvedClient: in a sequential comparison a pair
// whose round stays client-flagged after its rerun is discarded whole (up
// to half the pairs), marked so in result.json; past the bound the client
// rule fails and the looks stop (more rounds do not mend it). analyze
// skips the discarded pairs and gives the same verdict and client rule.
func TestRunCompareSequentialStarvedClient(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	cand, _ := simtest.Start(t, simtest.Fast())
	p := testProcedure(t, base, cand, t.TempDir())
	p.Baseline.Validity.MaxSendLag, p.Candidate.Validity.MaxSendLag = time.Nanosecond, time.Nanosecond
	p.Rounds = 4
	p.Budget = compare.Budget{Requests: 5 * 40}
	res, err := RunCompare(context.Background(), p, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr := res.Result
	discarded := 0
	for _, r := range cr.Rounds {
		if strings.HasPrefix(r.Discarded, "client flagged, rerun: pair discarded: ") {
			discarded++
		}
	}
	if cr.Verdict != compare.OutcomeInconclusive || discarded != 2 || cr.Sequential == nil ||
		!strings.HasPrefix(cr.Sequential.Stopped, "a rule that more rounds do not mend: client not saturated failed") {
		t.Fatalf("verdict %s, %d rounds of discarded pairs, sequential %+v: %v", cr.Verdict, discarded, cr.Sequential, cr.Result.Reasons)
	}
	a, err := Analyze([]string{res.Dir}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client := func(v *compare.Verdict) compare.Rule {
		for _, r := range v.Rules {
			if r.Name == compare.RuleClient {
				return r
			}
		}
		return compare.Rule{}
	}
	if a.Comparison.Outcome != cr.Verdict || client(a.Comparison) != client(cr.Result) {
		t.Errorf("analyze %s %+v, compare %s %+v", a.Comparison.Outcome, client(a.Comparison), cr.Verdict, client(cr.Result))
	}
}
