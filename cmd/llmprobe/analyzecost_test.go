package main

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/report"
)

// TestAnalyzeCost computes the cost per million good output tokens from
// result files given a price: the teaching example records no output
// tokens (not-recorded, its four facts unchanged), a vLLM file with
// --save-detailed is counted exactly from its per-request output lengths
// under the SLO (checked against the file's own arrays), and one without
// them is approximated from output_throughput × request_goodput /
// request_throughput, which the note says.
func TestAnalyzeCost(t *testing.T) {
	code, out, _ := runAnalyzeArgs(t, "--cost-per-hour", "2.5", compareTestdata+"teaching-example.json")
	if code != 1 || !strings.Contains(out, "cost           not-recorded: the input has neither output_throughput nor per-request output tokens") ||
		!strings.Contains(out, "goodput ratio  83.78 %") || !strings.Contains(out, "TTFT p99 910 > 800 FAIL") {
		t.Errorf("teaching example (exit %d):\n%s", code, out)
	}

	b, err := os.ReadFile(compareTestdata + "vllm-serve-detailed.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Duration float64   `json:"duration"`
		Outs     []int     `json:"output_lens"`
		TTFTs    []float64 `json:"ttfts"`
		Errors   []string  `json:"errors"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	good := 0
	for i, o := range f.Outs {
		if f.Errors[i] == "" && f.TTFTs[i] <= 0.1 { // --goodput ttft:100
			good += o
		}
	}
	want := 2.5 / (float64(good) / f.Duration * 3600) * 1e6
	code, out, _ = runAnalyzeArgs(t, "--format", "json", "--cost-per-hour", "2.5", "--goodput", "ttft:100", compareTestdata+"vllm-serve-detailed.json")
	var doc report.AnalyzeOutput
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	st := doc.Inputs[0].Steps[0]
	if doc.Inputs[0].CostPerHour != 2.5 || st.CostPerMillion == nil || math.Abs(*st.CostPerMillion-want) > 1e-9*want ||
		!strings.Contains(st.CostNote, "per-request samples") {
		t.Errorf("cost %v (%s), want %v from %d good output tokens over %v s", st.CostPerMillion, st.CostNote, want, good, f.Duration)
	}
	if good == 0 {
		t.Fatal("the SLO leaves no good token: the test checks nothing")
	}

	code, out, _ = runAnalyzeArgs(t, "--cost-per-hour", "2.5", "--goodput", "ttft:800", compareTestdata+"vllm-serve-old-goodput-key.json")
	if code != 0 || !strings.Contains(out, "cost           0.769 USD per million good output tokens (2.50 USD/h at 903 good output tokens/s; "+
		"approximated: output_throughput 1004 × request_goodput 7.05 / request_throughput 7.84") {
		t.Errorf("old goodput key (exit %d):\n%s", code, out)
	}

	code, _, errs := runAnalyzeArgs(t, "--cost-per-hour=-1", compareTestdata+"teaching-example.json")
	if code != 2 || !strings.Contains(errs, "--cost-per-hour: must be >= 0") {
		t.Errorf("negative price: exit %d, stderr %q", code, errs)
	}
}
