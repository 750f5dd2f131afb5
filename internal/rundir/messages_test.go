package rundir

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestRunMessages sweeps the simulator's reasoning persona over the
// Anthropic Messages API (/v1/messages) and over chat, one after the other
// on the same simulator: every request completes on both, with the same
// output and prompt tokens, and the step's TTFT and TPOT medians agree
// within the simulator's step (the same simulated stream, read through
// another API). Then compare runs chat (baseline) against messages
// (candidate), varying only the API, over HTTP: complete, and no failing
// verdict.
func TestRunMessages(t *testing.T) {
	const out = 24
	sc := simtest.Fast()
	sc.StepBase = 5 * time.Millisecond
	sc.ReasoningTokens = 8
	url, _ := simtest.Start(t, sc)
	step := func(api string) (sweep.Stats, string) {
		cfg := testConfig(t, url)
		cfg.API = api
		cfg.Rates, cfg.RatesText = []float64{20}, "20"
		cfg.Workload = workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(out)}
		res, back := runResult(t, cfg)
		st := back.Steps[0].Stats
		if st.Completed != 20 || st.Failed != 0 || st.TotalOutputTokens != 20*out || st.TTFT.N != 20 || st.FinishReasons["length"] != 20 {
			t.Fatalf("%s: completed %d, failed %d, output tokens %d, TTFT n %d, finish %v", api, st.Completed, st.Failed,
				st.TotalOutputTokens, st.TTFT.N, st.FinishReasons)
		}
		err := artifacts.ReadRecords(filepath.Join(res.Dir, "records.jsonl"), func(l artifacts.RecordLine, _ []byte) error {
			if l.TokensCounted || l.CompletionTokens != out || l.PromptTokens <= 0 || l.ReasoningTokens <= 0 || l.TTFR <= 0 {
				t.Errorf("%s %s: completion %d (counted %v), prompt %d, reasoning %d, TTFR %v", api, l.RequestID, l.CompletionTokens,
					l.TokensCounted, l.PromptTokens, l.ReasoningTokens, l.TTFR)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return st, string(mustRead(t, filepath.Join(res.Dir, "analysis.md")))
	}
	chat, _ := step("chat")
	msgs, md := step("messages")
	if !strings.Contains(md, "(API messages)") {
		t.Errorf("analysis.md does not name the API:\n%s", md[:min(len(md), 600)])
	}
	if chat.TotalInputTokens != msgs.TotalInputTokens {
		t.Errorf("input tokens: chat %d, messages %d", chat.TotalInputTokens, msgs.TotalInputTokens)
	}
	stepMS := float64(sc.StepBase) / float64(time.Millisecond)
	// Two sweeps one after the other on a shared host: their TTFT medians
	// differ by the host's load of the moment (prober/client's
	// TestMessagesSameFiguresAsChat compares the same stream's TTFT
	// closely). Here each must be the first token's, not message_start's
	// (at least one engine step) nor the end's (well before the E2E).
	for _, s := range []struct {
		api string
		st  sweep.Stats
	}{{"chat", chat}, {"messages", msgs}} {
		if s.st.TTFT.P50 < stepMS/2 || s.st.TTFT.P50 > s.st.E2EL.P50/2 {
			t.Errorf("%s: TTFT p50 %.2f ms, want after one engine step (%.0f ms) and before half the E2E p50 %.2f ms",
				s.api, s.st.TTFT.P50, stepMS, s.st.E2EL.P50)
		}
	}
	if d := msgs.TPOT.P50 - chat.TPOT.P50; d > stepMS/2 || d < -stepMS/2 {
		t.Errorf("TPOT p50: chat %.2f ms, messages %.2f ms", chat.TPOT.P50, msgs.TPOT.P50)
	}
	t.Logf("TTFT p50 chat %.2f ms, messages %.2f ms; TPOT p50 chat %.2f ms, messages %.2f ms",
		chat.TTFT.P50, msgs.TTFT.P50, chat.TPOT.P50, msgs.TPOT.P50)

	p := testProcedure(t, url, url, t.TempDir())
	p.Baseline.API, p.Candidate.API = "chat", "messages"
	p.Vary = []string{compare.FieldAPI}
	res, err := RunCompare(context.Background(), p, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr := res.Result
	if !cr.Complete || cr.Result == nil || cr.Verdict == compare.OutcomeFail {
		t.Errorf("compare chat vs messages: complete %v, verdict %s", cr.Complete, cr.Verdict)
	}
}
