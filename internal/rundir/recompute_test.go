package rundir

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestRecomputeContentTTFTAndTokens sweeps chat with tools on half of the
// requests (answers that are only a tool call: no content) against a
// simulator that answers some requests with nothing (role chunk, then
// [DONE]), then recomputes from records.jsonl alone what result.json
// states: the content TTFT over the requests that had content (n stated),
// the output tokens and their distribution, the failures by class. An
// empty answer is invalid_response with its reason and 0 tokens.
func TestRecomputeContentTTFTAndTokens(t *testing.T) {
	sc := simtest.Fast()
	sc.Faults.EmptyAnswer = 0.15
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.API = "chat"
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{20}, "20", 60
	cfg.Validity.MaxErrorRate = 0.5 // the empty answers are failures by design
	cfg.Workload = workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(12)}
	cfg.Workload.Request = &workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureTools, Share: 0.5,
		Tools: []workload.ToolSpec{{Name: "get_weather", Parameters: map[string]any{"type": "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}}}}
	out := mustRun(t, cfg, testOptions(t))
	verifyClean(t, out.Dir)
	res, err := report.Load(out.Dir) // result.json as written
	if err != nil {
		t.Fatal(err)
	}

	type tally struct {
		content, outLens    []float64
		tokens, empty, tool int
		failed              map[string]int
	}
	steps := map[int]*tally{}
	err = artifacts.ReadRecords(filepath.Join(out.Dir, "records.jsonl"), func(l artifacts.RecordLine, _ []byte) error {
		s := steps[l.Step]
		if s == nil {
			s = &tally{failed: map[string]int{}}
			steps[l.Step] = s
		}
		r := l.Record
		if r.ErrorMessage == client.EmptyAnswer {
			s.empty++
			if r.Error != prober.ClassInvalidResponse || r.CompletionTokens != 0 || r.TTFTText != 0 || r.FirstToolCall != 0 {
				t.Errorf("%s: empty answer recorded as %s with %d tokens", r.RequestID, r.Error, r.CompletionTokens)
			}
		}
		if !r.OK() {
			s.failed[string(r.Error)]++
			return nil
		}
		if r.FirstToolCall > 0 && r.TTFTText == 0 {
			s.tool++
		}
		if r.TTFTText > 0 {
			s.content = append(s.content, float64(r.TTFTText)/1e6)
		}
		s.tokens += r.CompletionTokens
		s.outLens = append(s.outLens, float64(r.CompletionTokens))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range res.Steps {
		s, x := steps[st.Index], st.Stats
		if s == nil {
			t.Fatalf("step %d: no records", st.Index)
		}
		// The test needs all three kinds of answer.
		if s.empty == 0 || s.tool == 0 || len(s.content) == 0 {
			t.Fatalf("step %d: %d empty, %d tool-call-only, %d with content: the test needs each", st.Index, s.empty, s.tool, len(s.content))
		}
		want := stats.Summarize(s.content)
		got := x.TTFTText
		if got.N != want.N || got.N != x.Completed-s.tool || got.P50 != want.P50 || got.P99 != want.P99 ||
			got.Median != want.Median || !closeTo(got.Mean, want.Mean) || !closeTo(got.Std, want.Std) {
			t.Errorf("step %d: ttft_text_ms n %d p50 %v p99 %v mean %v; records give n %d p50 %v p99 %v mean %v (%d completed, %d tool-call-only)",
				st.Index, got.N, got.P50, got.P99, got.Mean, want.N, want.P50, want.P99, want.Mean, x.Completed, s.tool)
		}
		if x.TotalOutputTokens != s.tokens || x.OutputTokens.N != len(s.outLens) || !closeTo(x.OutputTokens.Mean, stats.Mean(s.outLens)) ||
			x.OutputTokens.P50 != stats.Percentile(s.outLens, 50) || x.OutputTokens.P99 != stats.Percentile(s.outLens, 99) {
			t.Errorf("step %d: output tokens %d %+v; records give %d over %d requests", st.Index, x.TotalOutputTokens, x.OutputTokens, s.tokens, len(s.outLens))
		}
		if !closeTo(x.OutputThroughput, float64(s.tokens)/x.Duration) {
			t.Errorf("step %d: output_throughput %v, records give %v", st.Index, x.OutputThroughput, float64(s.tokens)/x.Duration)
		}
		if x.FailedByClass[string(prober.ClassInvalidResponse)] != s.failed[string(prober.ClassInvalidResponse)] ||
			s.failed[string(prober.ClassInvalidResponse)] != s.empty || x.Failed != sumCounts(s.failed) {
			t.Errorf("step %d: failed %d by class %v; records give %v with %d empty answers", st.Index, x.Failed, x.FailedByClass, s.failed, s.empty)
		}
		b := mustRead(t, filepath.Join(out.Dir, "analysis.md"))
		row := fmt.Sprintf("| %d | %d |", st.Index, want.N) // the step, n
		_, detail, _ := strings.Cut(string(b), "#### Content TTFT")
		if !strings.Contains(detail, row) {
			t.Errorf("analysis.md's content TTFT detail lacks the row %q:\n%s", row, b)
		}
	}
}

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
