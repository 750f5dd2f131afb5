package sweep

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestSweepFeatures runs a sweep whose workload carries request features
// against the simulator: every Record names the features it carried, each
// feature's share is realised within binomial bounds, the non-streamed
// requests have E2E only and the step statistics leave them out of TTFT
// and TPOT, and the fingerprint lists the spec.
func TestSweepFeatures(t *testing.T) {
	sim := simtest.Fast()
	sim.LoRAModules = "sql-lora=/adapters/sql"
	url, _ := simtest.Start(t, sim)
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{200}, "200", 200
	schema := map[string]any{"type": "object", "required": []any{"n"}, "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	cfg.Workload.Request = &workload.Request{Temperature: new(0.5), Features: []workload.RequestFeature{
		{Kind: workload.FeatureNoStream, Share: 0.25}, {Kind: workload.FeatureLogprobs, Share: 0.5, TopLogprobs: 2},
		{Kind: workload.FeatureJSONSchema, Share: 0.25, Schema: schema}, {Kind: workload.FeatureLoRA, Share: 0.5, Model: "sql-lora"},
	}}
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	count := map[string]int{}
	noStream := 0
	for _, sr := range sink.recs {
		r := sr.Record
		if !r.OK() {
			t.Fatalf("request %s failed: %s %s", r.RequestID, r.Error, r.ErrorMessage)
		}
		for _, f := range r.Features {
			count[f]++
		}
		if r.NoStream != slices.Contains(r.Features, workload.FeatureNoStream) ||
			r.Logprobs != slices.Contains(r.Features, workload.FeatureLogprobs) ||
			(r.Model == "sql-lora") != slices.Contains(r.Features, workload.FeatureLoRA) {
			t.Errorf("record %s: features %v, no_stream %v, logprobs %v, model %s", r.RequestID, r.Features, r.NoStream, r.Logprobs, r.Model)
		}
		if r.NoStream {
			noStream++
			if r.TTFT != 0 || r.E2E <= 0 || r.CompletionTokens != 4 {
				t.Errorf("non-streamed record %s: TTFT %v E2E %v tokens %d", r.RequestID, r.TTFT, r.E2E, r.CompletionTokens)
			}
		}
	}
	n := len(sink.recs)
	for kind, share := range map[string]float64{"no_stream": 0.25, "logprobs": 0.5, "json_schema": 0.25, "lora": 0.5} {
		mean, sd := float64(n)*share, math.Sqrt(float64(n)*share*(1-share))
		if got := float64(count[kind]); math.Abs(got-mean) > 5*sd {
			t.Errorf("%s: %v of %d records, want %v ± %.0f", kind, got, n, mean, 5*sd)
		}
	}
	st := res.Steps[0].Stats
	if st.Completed != 200 || st.TTFT.N != st.Completed-countMeasured(sink, 0) || st.E2EL.N != st.Completed {
		t.Errorf("stats: completed %d, TTFT n %d, E2E n %d, non-streamed %d", st.Completed, st.TTFT.N, st.E2EL.N, noStream)
	}
	if !strings.Contains(string(res.Fingerprint.Workload.Spec), `"features":[{"kind":"no_stream","share":0.25}`) {
		t.Errorf("fingerprint workload %s", res.Fingerprint.Workload.Spec)
	}
}

// countMeasured counts the non-streamed records of step.
func countMeasured(s *memSink, step int) int {
	n := 0
	for _, r := range s.recs {
		if r.Step == step && r.Record.NoStream {
			n++
		}
	}
	return n
}

// TestSweepLoRANotListed refuses, before any load, a LoRA adapter the
// target does not serve.
func TestSweepLoRANotListed(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Workload.Request = &workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureLoRA, Share: 0.5, Model: "sql-lora"}}}
	_, err := Prepare(context.Background(), cfg, Options{Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), `adapter "sql-lora" is not served by the target (/v1/models lists: llmprobe-sim)`) {
		t.Fatalf("err %v", err)
	}
}
