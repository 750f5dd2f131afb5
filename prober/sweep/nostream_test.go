package sweep

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
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
