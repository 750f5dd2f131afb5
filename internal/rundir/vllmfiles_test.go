package rundir

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestRunVLLMFiles checks the vllm bench serve-form files of a run: one per
// step under vllm/, in the manifest, with vLLM's keys in vLLM's order
// (--save-detailed arrays included when asked), the step's own date, and
// nothing of llmprobe's extras; they read back as vllm bench serve results
// with the same figures as result.json.
func TestRunVLLMFiles(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	for _, detailed := range []bool{false, true} {
		cfg := testConfig(t, url)
		cfg.SLO = slo.SLO{TTFT: 5 * time.Second}
		o := testOptions(t)
		o.SaveDetailed = detailed
		out := mustRun(t, cfg, o)
		m := verifyClean(t, out.Dir)
		var files []string
		for _, f := range m.Files {
			if strings.HasPrefix(f.Path, VLLMDir+"/") {
				files = append(files, f.Path)
			}
		}
		if len(files) != 2 {
			t.Fatalf("detailed %v: vLLM files %v, want 2", detailed, files)
		}
		for i, st := range out.Result.Steps {
			name := VLLMFileName(out.Result, st)
			if !slices.Contains(files, name) || !strings.HasPrefix(name, "vllm/step0"+string(rune('0'+i))+"-") ||
				!strings.Contains(name, "qps-llmprobe-sim-"+st.Start.UTC().Format(vllmDateLayout)) {
				t.Errorf("step %d: file %s not among %v", i, name, files)
			}
			b := mustRead(t, filepath.Join(out.Dir, filepath.FromSlash(name)))
			keys, _, err := orderedObject(b)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
				"request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
				"total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput"}
			if detailed {
				want = append(want, "input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times",
					"generated_texts", "errors")
			} else {
				want = append(want, "latencies", "queue_times")
			}
			want = append(want, "max_output_tokens_per_s", "max_concurrent_requests", "rtfx", "mean_ttft_ms")
			if !slices.Equal(keys[:len(want)], want) {
				t.Errorf("detailed %v: keys %v, want them to start %v", detailed, keys, want)
			}
			if slices.Contains(keys, "step") || slices.Contains(keys, "validity") || keys[len(keys)-1] != "p99_e2el_ms" {
				t.Errorf("llmprobe extras in the vLLM file: %v", keys)
			}
			var top map[string]any
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatal(err)
			}
			if top["date"] != st.Start.UTC().Format(vllmDateLayout) {
				t.Errorf("date %v, want the step's start", top["date"])
			}
			ev, err := compare.Decode(name, b)
			if err != nil {
				t.Fatal(err)
			}
			s := ev.Steps[0]
			if ev.Format != compare.FormatVLLM || len(ev.Warnings) != 0 || s.Completed != st.Stats.Completed ||
				s.Percentiles["ttft"][99] != st.Stats.TTFT.P99 || s.Throughput != st.Stats.RequestThroughput {
				t.Errorf("read back: format %s warnings %v step %+v", ev.Format, ev.Warnings, s)
			}
			if detailed {
				if len(s.Requests) != st.Stats.Requests {
					t.Fatalf("read back %d requests, want %d", len(s.Requests), st.Stats.Requests)
				}
				c := compare.CheckSLO(ev, cfg.SLO)
				var ttfts []float64
				for _, r := range s.Requests {
					ttfts = append(ttfts, r.TTFT)
				}
				slices.Sort(ttfts)
				if c.Steps[0].GoodputRatio == nil || *c.Steps[0].GoodputRatio != 1 ||
					math.Abs(ttfts[len(ttfts)-1]-st.Stats.TTFT.Max) > 1e-6 {
					t.Errorf("detailed samples: goodput %v, max ttft %v vs %v", c.Steps[0].GoodputRatio, ttfts[len(ttfts)-1], st.Stats.TTFT.Max)
				}
			}
		}
	}
}
