package rundir

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// cachingSim is a simulator of about 50 req/s (one sequence at a time, four
// 5 ms steps a request) that caches prompts: vLLM's block prefix cache (on
// by default), or llama.cpp's prompt cache alone.
func cachingSim(persona string) simulator.Config {
	sc := simulator.DefaultConfig()
	sc.Engine = persona
	sc.MaxNumSeqs = 1
	sc.StepBase, sc.StepPerPrefillToken, sc.StepPerSeq = 5*time.Millisecond, 0, 10*time.Microsecond
	if persona == simulator.EngineLlamaCpp {
		sc.EnablePrefixCaching, sc.PromptCache = false, true
	}
	return sc
}

// TestRunTwiceOnCachingServer: two sweeps in a row with the same seed,
// through Run (what the daemon's scheduler calls), against one simulator
// that caches prompts (vLLM's prefix cache; llama.cpp's prompt cache, read
// from llamacpp:prompt_tokens_cached_total and the usage's cached_tokens):
// both decide the knee, no step is flagged unintended-prefix-cache, the
// cache hits are the shared prefix's, and each run wrote its own
// prompt_nonce. A third run given the first one's nonce sends its prompts
// again: the cache answers them and its steps are flagged.
func TestRunTwiceOnCachingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("three sweeps of about 3 s each per persona")
	}
	for _, persona := range []string{simulator.EngineVLLM, simulator.EngineLlamaCpp} {
		t.Run(persona, func(t *testing.T) {
			url, _ := simtest.Start(t, cachingSim(persona))
			run := func(nonce int64) *Outcome {
				t.Helper()
				cfg := testConfig(t, url)
				cfg.Workload = workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(4), PrefixTokens: 32}
				cfg.Rates, cfg.RatesText, cfg.NumPrompts, cfg.Seed = []float64{10, 1000}, "10,1000", 20, 7
				cfg.PromptNonce = nonce
				out, err := Run(context.Background(), cfg, testOptions(t))
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			first, second := run(0), run(0)
			nonces := map[float64]bool{}
			for i, out := range []*Outcome{first, second} {
				res := out.Result
				if !res.Knee.Found || res.Knee.Level != 10 {
					for _, st := range res.Steps {
						if !st.Validity.Valid && clientSaturated(t, out, st) {
							t.Skipf("run %d: step %s client-saturated on this machine", i+1, st.Label)
						}
					}
					t.Fatalf("run %d: knee %+v, want 10 req/s (found)", i+1, res.Knee)
				}
				for _, st := range res.Steps {
					if slices.Contains(st.Validity.Flags, sweep.FlagUnintendedPrefixCache) {
						t.Errorf("run %d step %s flagged: %v", i+1, st.Label, st.Validity.Reasons)
					}
					h := st.Server.PrefixCacheHits
					// 20 requests, each finding at most the 32-token prefix and
					// a nonce word or two (llama.cpp's cache is not rounded to
					// blocks); the first may find none.
					if !h.Known || h.Value < 19*32 || h.Value > 20*34 {
						t.Errorf("run %d step %s: prefix-cache hits %+v, want the shared prefix's (about %d)", i+1, st.Label, h, 20*32)
					}
					if persona == simulator.EngineLlamaCpp && (st.Stats.CachedTokensReports != st.Stats.Completed ||
						float64(st.Stats.CachedTokens) != h.Value) {
						t.Errorf("run %d step %s: usage cached tokens %d over %d reports, counter %v", i+1, st.Label,
							st.Stats.CachedTokens, st.Stats.CachedTokensReports, h.Value)
					}
				}
				n, ok := readResult(t, out.Dir)["prompt_nonce"].(float64)
				if !ok || n == 0 || n != float64(res.PromptNonce) {
					t.Fatalf("run %d: result.json prompt_nonce %v, Result %d", i+1, n, res.PromptNonce)
				}
				nonces[n] = true
			}
			if len(nonces) != 2 {
				t.Fatalf("both runs drew the prompt nonce %v", nonces)
			}
			again := run(first.Result.PromptNonce)
			st := again.Result.Steps[0]
			if !slices.Contains(st.Validity.Flags, sweep.FlagUnintendedPrefixCache) {
				t.Fatalf("repeating the first run's prompts: step %s not flagged (hits %+v): %v", st.Label,
					st.Server.PrefixCacheHits, st.Validity.Reasons)
			}
			if h, h0 := st.Server.PrefixCacheHits.Value, first.Result.Steps[0].Server.PrefixCacheHits.Value; h < h0+20*10 {
				t.Errorf("repeated prompts hit %v tokens, the first run %v", h, h0)
			}
		})
	}
}
