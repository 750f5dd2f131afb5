package slo

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// TestVerdictNoStream judges a non-streamed request on the SLOs it has
// figures for: E2E only (its TTFT is not recorded, TPOT reports none).
func TestVerdictNoStream(t *testing.T) {
	s := SLO{TTFT: 100 * time.Millisecond, TPOT: time.Millisecond, E2EL: time.Second}
	r := &prober.Record{NoStream: true, E2E: 900 * time.Millisecond, CompletionTokens: 100}
	if v := s.Verdict(r); !v.Good || v.Violated != 0 {
		t.Errorf("verdict %+v: a non-streamed request is judged on TTFT or TPOT", v)
	}
	r.E2E = 2 * time.Second
	if v := s.Verdict(r); v.Good || !v.Violated.Has(KindE2EL) || v.Violated.Has(KindTTFT) || v.Violated.Has(KindTPOT) {
		t.Errorf("verdict %+v, want only e2el violated", v)
	}
	// The same figures streamed violate TTFT and TPOT.
	r = &prober.Record{E2E: 900 * time.Millisecond, CompletionTokens: 100}
	if v := s.Verdict(r); !v.Violated.Has(KindTPOT) {
		t.Errorf("streamed verdict %+v, want tpot violated", v)
	}
}
