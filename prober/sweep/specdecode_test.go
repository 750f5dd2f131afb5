package sweep

import (
	"encoding/json"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestSweepSpecDecode sweeps the simulator's llamacpp persona with
// speculative decoding (--spec-draft-tokens 4) over HTTP: every Record
// carries the response's draft figures, and the step's result (and its
// result.json) sums them with their acceptance rate, and so do the step's
// server figures from llama.cpp's /metrics counters
// (llamacpp:spec_decode_num_draft_tokens_total, _accepted_tokens_total);
// without the option the step has no such figure.
func TestSweepSpecDecode(t *testing.T) {
	run := func(draft int) (*Result, *memSink) {
		t.Helper()
		sc := simtest.Fast()
		sc.Engine, sc.SpecDraftTokens, sc.SpecAcceptance = simulator.EngineLlamaCpp, draft, 0.7
		url, _ := simtest.Start(t, sc)
		cfg := testConfig(t, url)
		cfg.API = "chat"
		cfg.Workload.OutputTokens = workload.Fixed(64) // 17 steps of K=4 each, 47 accepted
		cfg.Rates, cfg.RatesText, cfg.NumPrompts, cfg.Warmups = []float64{50}, "50", 10, 0
		sink := &memSink{}
		res := runSweep(t, cfg, sink)
		return res, sink
	}
	res, sink := run(4)
	var drafted, accepted int
	for _, sr := range sink.recs {
		r := sr.Record
		if !r.OK() || !r.DraftReported || r.DraftTokens <= 0 || r.DraftTokens%4 != 0 || r.DraftAccepted > r.DraftTokens {
			t.Fatalf("record %s: ok %v (%s), draft figures %v %d/%d", r.RequestID, r.OK(), r.ErrorMessage, r.DraftReported, r.DraftAccepted, r.DraftTokens)
		}
		drafted += r.DraftTokens
		accepted += r.DraftAccepted
	}
	sd := res.Steps[0].Stats.SpecDecode
	if sd == nil || sd.Requests != 10 || sd.Drafted != drafted || sd.Accepted != accepted || sd.AcceptanceRate != float64(accepted)/float64(drafted) {
		t.Fatalf("step speculative decoding %+v, want 10 requests, %d drafted, %d accepted", sd, drafted, accepted)
	}
	// By the simulator's rule (docs/simulator.md) 64 tokens take 17 steps:
	// 68 drafted, 47 accepted.
	if sd.Drafted != 10*68 || sd.Accepted != 10*47 {
		t.Errorf("%d drafted, %d accepted (rate %v), want 680, 470", sd.Drafted, sd.Accepted, sd.AcceptanceRate)
	}
	// The server's counters (llamacpp:spec_decode_*, snapshot deltas over
	// the step) count the same drafts: no warmup, no other traffic.
	if ss := res.Steps[0].Server.SpecDecode; ss == nil || ss.DraftTokens != float64(drafted) || ss.AcceptedTokens != float64(accepted) ||
		ss.AcceptanceRate != float64(accepted)/float64(drafted) {
		t.Errorf("server speculative decoding %+v (server status %s %s), want %d drafted, %d accepted", ss,
			res.Steps[0].Server.Status, res.Steps[0].Server.Reason, drafted, accepted)
	}
	b := resultJSON(t, res)
	type resultDoc struct {
		Steps []struct {
			Spec *struct {
				Requests       int     `json:"requests"`
				Drafted        int     `json:"draft_tokens"`
				Accepted       int     `json:"accepted_tokens"`
				AcceptanceRate float64 `json:"acceptance_rate"`
			} `json:"speculative_decoding"`
		} `json:"steps"`
	}
	var doc resultDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Steps) != 1 || doc.Steps[0].Spec == nil || doc.Steps[0].Spec.Drafted != drafted || doc.Steps[0].Spec.AcceptanceRate != sd.AcceptanceRate {
		t.Errorf("result.json steps %s", b)
	}

	off, _ := run(0)
	if sd := off.Steps[0].Stats.SpecDecode; sd != nil {
		t.Errorf("without speculative decoding the step has %+v", sd)
	}
	// The counters are served at 0 without a draft model: no server figure.
	if ss := off.Steps[0].Server.SpecDecode; ss != nil || off.Steps[0].Server.Status != statusRecorded {
		t.Errorf("without speculative decoding the server figures have %+v (status %s)", ss, off.Steps[0].Server.Status)
	}
	var offDoc resultDoc
	if b, _ := json.Marshal(off); json.Unmarshal(b, &offDoc) != nil || len(offDoc.Steps) != 1 || offDoc.Steps[0].Spec != nil {
		t.Errorf("without speculative decoding result.json has speculative_decoding: %s", b)
	}
}
