package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestLadderRepeatsBracket: a ladder of one round whose knee is bracketed
// reruns the knee level and the failing level above it, each with draws of
// its own, until each has --knee-repeats valid runs; the reruns are marked
// repeat, leave the knee and the levels' figures as they were, and the
// knee's interval states them (issue 40 Deliver 6).
func TestLadderRepeatsBracket(t *testing.T) {
	testutil.Slow(t)
	sc := simulator.DefaultConfig()
	// Capacity set by the engine model: under 40 req/s with 4 output
	// tokens (5 ms a running sequence), TTFT near 30 ms at 20 req/s; at
	// 100 req/s the queue grows past the 300 ms SLO within the step, a
	// rate the client keeps on a busy host (400 req/s was flagged
	// client-saturated there, so the level above was invalid, not failing).
	sc.StepBase, sc.StepPerPrefillToken, sc.StepPerSeq = 10*time.Millisecond, 0, 5*time.Millisecond
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{20, 100}, "20,100", 100
	cfg.SLO = slo.SLO{TTFT: 300 * time.Millisecond}
	res := runSweep(t, cfg, &memSink{})
	k := res.Knee
	var upFlags []string
	upValid := false
	for _, st := range res.Steps {
		if st.Level == 100 && !st.isRepeat() {
			upValid = upValid || st.Validity.Valid
			upFlags = append(upFlags, st.Validity.Flags...)
		}
	}
	if !upValid {
		// A host too busy to send 100 req/s on time: the level is
		// invalid, not failing, so nothing brackets the knee and nothing
		// is repeated; the flags must name the client (issue 40 Deliver 7).
		for _, st := range res.Steps {
			if st.isRepeat() {
				t.Errorf("repeat %s with no valid 100 req/s step", st.Label)
			}
		}
		if k.Found && k.Upper == 100 || !strings.Contains(strings.Join(upFlags, ","), "client") {
			t.Fatalf("100 req/s flagged %v, yet knee %+v", upFlags, k)
		}
		t.Logf("100 req/s flagged %v on this host: no bracket to repeat", upFlags)
		return
	}
	if !k.Found || k.Level != 20 || k.Upper != 100 {
		t.Fatalf("knee %+v, want 20 bracketed by 100", k)
	}
	// A repeat flagged invalid (a busy host) is run again, as any level;
	// the valid ones count.
	var repeats []*Step
	flagged := 0
	for _, st := range res.Steps {
		if st.isRepeat() && !st.Validity.Valid {
			flagged++
			t.Logf("repeat %s flagged %v: run again", st.Label, st.Validity.Flags)
			continue
		}
		if st.isRepeat() {
			repeats = append(repeats, st)
			if st.Attempt < 2 || !strings.HasPrefix(st.Search.Why, "repeat: ") {
				t.Errorf("repeat %s: attempt %d, why %q", st.Label, st.Attempt, st.Search.Why)
			}
		}
	}
	if len(res.Steps) != 4+flagged || len(repeats) != 2 || repeats[0].Level != 20 || repeats[1].Level != 100 {
		t.Fatalf("%d steps, repeats %v: want the ladder's 2 then one rerun of 20 and of 100", len(res.Steps), repeats)
	}
	if len(res.Levels) != 2 || res.Levels[0].Rounds != 1 || res.Levels[1].Rounds != 1 {
		t.Errorf("levels %+v: a repeat must not join its level's figures", res.Levels)
	}
	ki := k.Interval
	if ki == nil || len(ki.Repeats) != 2 {
		t.Fatalf("interval %+v, want the repeats stated", ki)
	}
	if lo, hi := ki.Repeats[0], ki.Repeats[1]; lo.Level != 20 || lo.Runs != 2 || lo.Passed != 2 || hi.Level != 100 || hi.Runs != 2 || hi.Passed != 0 {
		t.Errorf("repeats %+v, want 20 passing 2 of 2 and 100 passing 0 of 2", ki.Repeats)
	}
}
