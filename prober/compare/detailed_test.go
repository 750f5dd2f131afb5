package compare

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestDecodeDetailedWithoutLatencies: an older vllm bench serve
// --save-detailed file has no latencies array (issue 22 V3). Each
// request's E2E latency is its ttft + Σ itl, so the file has per-request
// samples: the cost is exact from the output tokens of the requests that
// met the SLO (not output_throughput × request_goodput /
// request_throughput), and the TPOT of each request is (latency − ttft) /
// (output − 1), vLLM's, matching the file's own p99_tpot_ms.
func TestDecodeDetailedWithoutLatencies(t *testing.T) {
	ev, err := Decode("old.json", readTestdata(t, "vllm-serve-detailed-no-latencies.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := &ev.Steps[0]
	if len(st.Requests) != 120 || len(st.Contradictions) != 0 {
		t.Fatalf("%d requests, contradictions %q", len(st.Requests), st.Contradictions)
	}
	if w := strings.Join(ev.Warnings, "\n"); !strings.Contains(w, "ttft + Σ itl") {
		t.Errorf("warnings lack the latency note: %s", w)
	}
	q := st.Requests[0]
	if !q.OK || q.OutputTokens <= 1 || math.Abs(q.E2EL-(q.TTFT+q.TPOT*float64(q.OutputTokens-1))) > 1e-6 {
		t.Errorf("request 0 %+v", q)
	}
	rs, _ := latencySamples([]*Step{st}, MetricTPOT)
	if got := newFigure(rs, nil, 99).value(); math.Abs(got-st.Percentiles[MetricTPOT][99]) > 1e-6 {
		t.Errorf("tpot p99 from samples %v, recorded %v", got, st.Percentiles[MetricTPOT][99])
	}
	ev.CostPerHour = 2.5
	s := slo.SLO{TTFT: 300 * time.Millisecond}
	c := CheckSLO(ev, s)
	sc := c.Steps[0]
	good := 0
	for _, r := range st.Requests {
		if r.Good(s) {
			good += r.OutputTokens
		}
	}
	want := 2.5 / (float64(good) / st.Duration * 3600) * 1e6
	if sc.CostPerMillion == nil || math.Abs(*sc.CostPerMillion-want) > 1e-9 || !strings.Contains(sc.CostNote, "per-request samples") {
		t.Errorf("cost %v (%s), want %v from per-request samples", sc.CostPerMillion, sc.CostNote, want)
	}
	if c.Outcome != OutcomeFail || sc.SLO[0].Source != "recorded" {
		t.Errorf("outcome %s, ttft check %+v (the file's TTFT p99 is above 300 ms)", c.Outcome, sc.SLO[0])
	}
}

// TestDecodeDetailedContradicts: a file whose p99_ttft_ms (446 ms) is not
// the p99 of its own ttfts (587 ms) is not read on its summary (issue 22
// V3): the step names the contradiction, its SLO check uses the samples
// and the check is inconclusive; in a comparison the summaries rule fails.
func TestDecodeDetailedContradicts(t *testing.T) {
	ev, err := Decode("edited.json", readTestdata(t, "vllm-serve-detailed-contradicts.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := &ev.Steps[0]
	if len(st.Contradictions) != 1 || st.Contradictions[0] != "p99_ttft_ms 446 but its 120 per-request samples give 587" {
		t.Fatalf("contradictions %q", st.Contradictions)
	}
	c := CheckSLO(ev, slo.SLO{TTFT: 500 * time.Millisecond})
	sc := c.Steps[0]
	if c.Outcome != OutcomeInconclusive || len(sc.Problems) != 1 || !strings.Contains(sc.Problems[0], "p99_ttft_ms 446") {
		t.Errorf("outcome %s, problems %q", c.Outcome, sc.Problems)
	}
	if r := sc.SLO[0]; r.Source != "samples" || math.Abs(r.ValueMS-587.3) > 0.1 || r.Status != StatusFailed {
		t.Errorf("ttft check %+v: want the samples' p99, above 500", r)
	}
	honest, err := Decode("honest.json", readTestdata(t, "vllm-serve-detailed-no-latencies.json"))
	if err != nil {
		t.Fatal(err)
	}
	v := Compare(honest, ev, Options{Thresholds: []Threshold{{Metric: MetricTTFT, P: 99, Max: 0.1}}, Iters: 200})
	if r := rule(v, RuleSummaries); r.Status != StatusFailed || !strings.Contains(r.Detail, "candidate round 1 rate=4: p99_ttft_ms 446") {
		t.Errorf("summaries rule %+v", r)
	}
	if v.Outcome != OutcomeInconclusive {
		t.Errorf("outcome %s", v.Outcome)
	}
}
