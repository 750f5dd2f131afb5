package rundir

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestRunPooling sweeps the simulator's pooling endpoints (`sweep --api
// embeddings --batch-size 4`, `sweep --api rerank --batch-size 4`, and
// rerank through /score): every step completes non-streamed requests with
// E2E only, 4 inputs each, the inputs/s and dimension in result.json's
// pooling object, goodput under an E2E SLO, and analysis.md names the API
// and the inputs/s.
func TestRunPooling(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	for _, tt := range []struct{ api, path string }{
		{client.APIEmbeddings, ""},
		{client.APIRerank, client.RerankV1},
		{client.APIRerank, client.RerankScore},
	} {
		t.Run(tt.api+tt.path, func(t *testing.T) {
			cfg := testConfig(t, url)
			cfg.API, cfg.RerankPath, cfg.BatchSize = tt.api, tt.path, 4
			cfg.SLO = slo.SLO{E2EL: 30 * time.Second}
			res, back := runResult(t, cfg)
			if len(back.Steps) != 2 {
				t.Fatalf("%d steps in result.json", len(back.Steps))
			}
			wantDim := 0
			if tt.api == client.APIEmbeddings {
				wantDim = 384
			}
			for _, st := range back.Steps {
				s := st.Stats
				p := s.Pooling
				if s.Completed != 20 || s.Failed != 0 || s.TTFT.N != 0 || s.E2EL.N != 20 || s.Good != 20 || s.TotalInputTokens < 20*4*32 {
					t.Errorf("step %d: completed %d, failed %d %v, TTFT n %d, E2E n %d, good %d, input tokens %d", st.Index, s.Completed,
						s.Failed, s.FailedByClass, s.TTFT.N, s.E2EL.N, s.Good, s.TotalInputTokens)
				}
				if p == nil || p.Requests != 20 || p.Inputs != 80 || p.InputThroughput <= 0 || p.InputTokenThroughput <= 0 ||
					p.MinDimension != wantDim || p.MaxDimension != wantDim {
					t.Errorf("step %d: pooling %+v", st.Index, p)
				}
			}
			err := artifacts.ReadRecords(filepath.Join(res.Dir, "records.jsonl"), func(l artifacts.RecordLine, _ []byte) error {
				if !l.NoStream || l.Inputs != 4 || l.Dimension != wantDim || l.PromptTokens <= 0 || l.E2E <= 0 {
					t.Errorf("%s: no_stream %v, inputs %d, dimension %d, prompt %d, e2e %v", l.RequestID, l.NoStream, l.Inputs,
						l.Dimension, l.PromptTokens, l.E2E)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			md := string(mustRead(t, filepath.Join(res.Dir, "analysis.md")))
			if !strings.Contains(md, "(API "+tt.api+")") || !strings.Contains(md, "inputs/s") {
				t.Errorf("analysis.md does not name the API or inputs/s:\n%s", md[:min(len(md), 1500)])
			}
		})
	}
}

// TestRunPoolingKnee sweeps embeddings (batch 4) against a simulator of
// about 200 such requests/s (one sequence at a time, one 1 ms prefill step
// an input) with only an E2E SLO, 100 requests a level (enough for its
// p99): 50 req/s keeps up, 10000 req/s does not, so the knee is 50 req/s,
// decided on E2E and keep-up with no TTFT at all.
func TestRunPoolingKnee(t *testing.T) {
	sc := cachingSim(simulator.EngineVLLM)
	sc.StepBase = time.Millisecond
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.API, cfg.BatchSize = client.APIEmbeddings, 4
	cfg.Rates, cfg.RatesText, cfg.Seed, cfg.NumPrompts = []float64{50, 10000}, "50,10000", 7, 100
	cfg.SLO = slo.SLO{E2EL: 2 * time.Second}
	out := mustRun(t, cfg, testOptions(t))
	res := out.Result
	if !res.Knee.Found || res.Knee.Level != 50 {
		for _, st := range res.Steps {
			if !st.Validity.Valid && clientSaturated(t, out, st) {
				t.Skipf("step %s client-saturated on this machine", st.Label)
			}
		}
		t.Fatalf("knee %+v, want 50 req/s (found)", res.Knee)
	}
	for _, st := range res.Steps {
		if st.Stats.TTFT.N != 0 || st.Stats.E2EL.N == 0 {
			t.Errorf("step %s: TTFT n %d, E2E n %d", st.Label, st.Stats.TTFT.N, st.Stats.E2EL.N)
		}
	}
}
