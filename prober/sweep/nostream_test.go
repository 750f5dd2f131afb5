package sweep

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestStatsSkipNoStream leaves non-streamed requests out of TTFT, TPOT and
// ITL and keeps them in E2E, throughput and the token counts.
func TestStatsSkipNoStream(t *testing.T) {
	a := NewStatsAccumulator(StatsOptions{Duration: time.Second, BootstrapIters: 10})
	now := time.Now()
	a.Add(0, &prober.Record{Sent: now, TTFT: 10 * time.Millisecond, E2E: 50 * time.Millisecond, CompletionTokens: 5,
		ITL: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}})
	a.Add(1, &prober.Record{Sent: now, NoStream: true, E2E: 80 * time.Millisecond, CompletionTokens: 5})
	s := a.Stats(0)
	if s.Completed != 2 || s.E2EL.N != 2 || s.TTFT.N != 1 || s.TPOT.N != 1 || s.ITL.N != 4 || s.TotalOutputTokens != 10 {
		t.Errorf("completed %d, E2E n %d, TTFT n %d, TPOT n %d, ITL n %d, output tokens %d",
			s.Completed, s.E2EL.N, s.TTFT.N, s.TPOT.N, s.ITL.N, s.TotalOutputTokens)
	}
}

// TestStatsReasoning sums and summarizes the reasoning and tool-call
// figures over the successful streamed requests, checks the ttfa SLO on the
// answer TTFT, and leaves Reasoning nil for a step without any.
func TestStatsReasoning(t *testing.T) {
	ms := time.Millisecond
	a := NewStatsAccumulator(StatsOptions{Duration: time.Second, BootstrapIters: 10, SLO: slo.SLO{TTFA: 500 * ms}})
	now := time.Now()
	a.Add(0, &prober.Record{Sent: now, TTFT: 10 * ms, TTFR: 10 * ms, ThinkingTime: 300 * ms, TTFTText: 310 * ms,
		E2E: 400 * ms, CompletionTokens: 80, ReasoningTokens: 64})
	a.Add(1, &prober.Record{Sent: now, TTFT: 10 * ms, TTFR: 12 * ms, ThinkingTime: 700 * ms, FirstToolCall: 712 * ms,
		E2E: 800 * ms, CompletionTokens: 40, ReasoningTokens: 30, ReasoningTokensCounted: true, ToolCalls: 2})
	a.Add(2, &prober.Record{Sent: now, TTFT: 10 * ms, TTFTText: 10 * ms, E2E: 50 * ms, CompletionTokens: 5})
	a.Add(3, &prober.Record{Sent: now, TTFT: 10 * ms, TTFR: 10 * ms, E2E: 50 * ms, Error: prober.ClassStream})
	s := a.Stats(0)
	r := s.Reasoning
	if r == nil || r.Requests != 2 || r.ReasoningTokens != 94 || r.AnswerTokens != 16+10 || r.CountedRequests != 1 ||
		r.TTFR.N != 2 || r.ThinkingTime.N != 2 || r.ThinkingTime.Max != 700 || r.ToolCallRequests != 1 || r.ToolCalls != 2 ||
		r.FirstToolCall.N != 1 || r.FirstToolCall.Max != 712 {
		t.Fatalf("reasoning %+v", r)
	}
	// The answer TTFTs are 310, 712 (the tool call) and 10 ms: one over 500 ms.
	if s.TTFA.N != 3 || s.TTFA.Max != 712 || s.Good != 2 || len(s.SLOChecks) != 1 || s.SLOChecks[0].Metric != "ttfa" || s.SLOChecks[0].Held {
		t.Errorf("TTFA %+v, good %d, checks %+v", s.TTFA, s.Good, s.SLOChecks)
	}
	b := NewStatsAccumulator(StatsOptions{Duration: time.Second, BootstrapIters: 10})
	b.Add(0, &prober.Record{Sent: now, TTFT: 10 * ms, TTFTText: 10 * ms, E2E: 50 * ms, CompletionTokens: 5})
	if s := b.Stats(0); s.Reasoning != nil {
		t.Errorf("reasoning %+v without any", s.Reasoning)
	}
}
