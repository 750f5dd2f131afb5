package sweep_test

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestSweepRustFrontend sweeps the simulator as vLLM's Python frontend
// (text /metrics) and as its Rust frontend (--vllm-frontend rust: its own
// OpenMetrics families, no token counters, no vllm:cache_config_info, the
// finish_reason on a chunk of its own) with the same seed and workload, on
// completions and chat: against the Rust frontend every step is proven
// idle, the server's prompt and generation tokens (from the per-request
// histograms' sums) and finish reasons (by finish_reason) equal the
// Python frontend's, the preemptions are not-recorded with the metric
// that is missing, the engine config is not-recorded with its reason; and
// the client reads the Rust streams as the Python ones (requests, output
// tokens, TTFTs, finish reasons).
func TestSweepRustFrontend(t *testing.T) {
	run := func(t *testing.T, api, frontend string) *sweep.Result {
		t.Helper()
		sim := simtest.Fast()
		sim.VLLMFrontend = frontend
		return twoStepSweep(t, sim, api, sweep.DiscardSink{})
	}
	for _, api := range []string{"completions", "chat"} {
		t.Run(api, func(t *testing.T) {
			py := run(t, api, simulator.VLLMFrontendPython)
			rs := run(t, api, simulator.VLLMFrontendRust)
			fp := rs.Fingerprint.Target
			if fp.Engine != "vllm" || fp.EngineSource != "/metrics names" {
				t.Errorf("engine %q from %q, want vllm from /metrics names", fp.Engine, fp.EngineSource)
			}
			if fp.EngineConfig != nil {
				t.Errorf("engine config %v, but the Rust frontend serves no vllm:cache_config_info", fp.EngineConfig)
			}
			if why := fp.NotRecorded["engine_config"]; why != "vllm:cache_config_info not on /metrics" {
				t.Errorf("engine config not-recorded reason %q", why)
			}
			if py.Fingerprint.Target.EngineConfig["block_size"] != "16" || py.Fingerprint.Target.NotRecorded["engine_config"] != "" {
				t.Errorf("Python frontend: engine config %v, not recorded %v", py.Fingerprint.Target.EngineConfig,
					py.Fingerprint.Target.NotRecorded)
			}
			for i, st := range rs.Steps {
				want := py.Steps[i]
				if st.Validity.Idle.Status != sweep.IdleProven {
					t.Errorf("step %s: idle proof %+v", st.Label, st.Validity.Idle)
				}
				if st.Server.Status != "recorded" {
					t.Errorf("step %s: server %s %q", st.Label, st.Server.Status, st.Server.Reason)
				}
				s, w := st.Server, want.Server
				if !s.PromptTokens.Known || s.PromptTokens != w.PromptTokens || !s.GenerationTokens.Known ||
					s.GenerationTokens != w.GenerationTokens || s.GenerationTokens.Value != 10*6 {
					t.Errorf("step %s: server prompt/generation tokens %+v/%+v, Python frontend %+v/%+v (want 60 generated)",
						st.Label, s.PromptTokens, s.GenerationTokens, w.PromptTokens, w.GenerationTokens)
				}
				if s.FinishedReasons["length"] != 10 || w.FinishedReasons["length"] != 10 {
					t.Errorf("step %s: finished reasons %v, Python frontend %v, want 10 length", st.Label, s.FinishedReasons, w.FinishedReasons)
				}
				if s.Preemptions.Known || !strings.Contains(s.NotRecorded["preemptions"], "vllm:num_preemptions_total") {
					t.Errorf("step %s: preemptions %+v, not recorded %q: want not-recorded, naming the missing metric",
						st.Label, s.Preemptions, s.NotRecorded["preemptions"])
				}
				if !s.TTFT.Count.Known || s.TTFT.Count != w.TTFT.Count {
					t.Errorf("step %s: server TTFT count %+v, Python frontend %+v", st.Label, s.TTFT.Count, w.TTFT.Count)
				}
				c, wc := st.Stats, want.Stats
				if c.Completed != 10 || c.Completed != wc.Completed || c.TotalOutputTokens != wc.TotalOutputTokens ||
					c.TTFT.N != wc.TTFT.N || c.TTFT.N != 10 || c.FinishReasons["length"] != 10 {
					t.Errorf("step %s: client completed %d, output tokens %d, TTFTs %d, finish reasons %v; Python frontend %d, %d, %d, %v",
						st.Label, c.Completed, c.TotalOutputTokens, c.TTFT.N, c.FinishReasons,
						wc.Completed, wc.TotalOutputTokens, wc.TTFT.N, wc.FinishReasons)
				}
			}
		})
	}
}
