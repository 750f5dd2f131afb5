package sweep

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestPoolingStatsAndKneeOnE2E sums a step's pooling figures (inputs,
// inputs/s, dimensions) and judges its non-streamed requests on E2E only:
// the TTFT and TPOT SLOs have no samples (held, not counted towards the
// samples the knee needs), the e2el SLO decides, and the knee's bootstrap
// samples carry no TTFT.
func TestPoolingStatsAndKneeOnE2E(t *testing.T) {
	ms := time.Millisecond
	a := NewStatsAccumulator(StatsOptions{Duration: 2 * time.Second, BootstrapIters: 10,
		SLO: slo.SLO{TTFT: ms, TPOT: ms, E2EL: 100 * ms}})
	now := time.Now()
	for i := range 4 {
		e2e := 50 * ms
		if i == 3 {
			e2e = 300 * ms
		}
		a.Add(int64(i), &prober.Record{Sent: now, NoStream: true, E2E: e2e, PromptTokens: 128, Inputs: 4, Dimension: 384 + i%2})
	}
	a.Add(4, &prober.Record{Sent: now, NoStream: true, E2E: 10 * ms, Inputs: 4, Error: prober.ClassInvalidResponse})
	s := a.Stats(0)
	p := s.Pooling
	if p == nil || p.Requests != 4 || p.Inputs != 16 || p.InputThroughput != 8 || p.InputTokenThroughput != 256 ||
		p.MinDimension != 384 || p.MaxDimension != 385 {
		t.Fatalf("pooling %+v", p)
	}
	if s.Good != 3 || s.TTFT.N != 0 || s.TPOT.N != 0 || s.E2EL.N != 4 {
		t.Errorf("good %d, TTFT n %d, TPOT n %d, E2E n %d", s.Good, s.TTFT.N, s.TPOT.N, s.E2EL.N)
	}
	for _, c := range s.SLOChecks {
		if want := c.Metric != "e2el"; c.Held != want {
			t.Errorf("SLO %s held %v, want %v", c.Metric, c.Held, want)
		}
	}
	if n, ok := s.sloSamples(); !ok || n != 4 {
		t.Errorf("SLO samples %d %v, want the 4 E2Es", n, ok)
	}
	for _, k := range s.kneeSamples {
		if _, ok := k.value(slo.NameTTFT); ok {
			t.Errorf("knee sample %+v has a TTFT", k)
		}
		if _, ok := k.value(slo.NameE2EL); !ok && k.ok {
			t.Errorf("knee sample %+v has no E2E", k)
		}
	}
	if len(s.kneeSamples) == 0 {
		t.Error("no knee samples")
	}
}
