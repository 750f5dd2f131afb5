package rundir

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/compare"
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
	testutil.Slow(t)
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
				out := mustRun(t, cfg, testOptions(t))
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
				if persona == simulator.EngineLlamaCpp {
					for _, r := range readRecords(t, out.Dir) {
						if !r.CachedTokensReported {
							t.Fatalf("run %d: records.jsonl line without cached_tokens_reported: %+v", i+1, r.Record)
						}
					}
				}
				if a := readFile(t, out.Dir, artifacts.AnalysisFile); !strings.Contains(a, "### Cache hits") ||
					!strings.Contains(a, fmt.Sprintf("--prompt-nonce %d", res.PromptNonce)) {
					t.Errorf("run %d: analysis.md has no cache-hit table with the nonce", i+1)
				}
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

// TestCompareSelfWithPromptCache: a server with llama.cpp's prompt cache
// (a cached prompt prefills in one step, a new one takes 20 ms more)
// compared with itself twice in a row: every round sends prompts no other
// round (of either comparison) sent, so no round's requests are served from
// the cache and the verdict is no regression. The same comparison with the
// first one's prompt nonce given back repeats its prompts round by round:
// the cache then serves nearly every prompt token.
func TestCompareSelfWithPromptCache(t *testing.T) {
	testutil.Slow(t)
	if testing.Short() {
		t.Skip("three comparisons of four rounds")
	}
	sc := simtest.Fast()
	sc.Engine, sc.EnablePrefixCaching, sc.PromptCache = simulator.EngineLlamaCpp, false, true
	sc.StepPerPrefillToken = 100 * time.Microsecond
	url, _ := simtest.Start(t, sc)
	run := func(nonce int64) (*CompareOutcome, []float64, []int) {
		t.Helper()
		p := testProcedure(t, url, url, t.TempDir())
		for _, c := range []*sweep.Config{&p.Baseline, &p.Candidate} {
			c.Workload = workload.Spec{InputTokens: workload.Fixed(200), OutputTokens: workload.Fixed(4)}
			c.PromptNonce = nonce
		}
		p.Rounds = 4
		th, err := compare.ParseThresholds("ttft_p50=50%")
		if err != nil {
			t.Fatal(err)
		}
		p.Thresholds, p.MaxRegression = th, "ttft_p50=50%"
		out, err := RunCompare(context.Background(), p, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A round the client could not keep on a busy machine is
		// discarded and run again (with prompts of its own): it stays in
		// the list, marked.
		kept := 0
		for _, r := range out.Result.Rounds {
			if r.Discarded == "" {
				kept++
			}
		}
		if !out.Result.Complete || kept != 4 {
			t.Fatalf("compare incomplete: %+v", out.Result)
		}
		var cached []float64 // per kept round: the share of prompt tokens the cache served
		var attempts []int   // per kept round: 0, or the attempt that replaced a discarded one
		seen := map[int64]bool{}
		for _, r := range out.Result.Rounds {
			if r.PromptNonce == 0 || seen[r.PromptNonce] {
				t.Fatalf("round %d: prompt nonce %d (seen %v)", r.Round, r.PromptNonce, seen)
			}
			seen[r.PromptNonce] = true
			if r.Discarded != "" {
				continue
			}
			st := readResult(t, filepath.Join(out.Dir, r.Dir))["steps"].([]any)[0].(map[string]any)
			c, _ := st["usage_cached_tokens"].(float64)
			in, _ := st["total_input_tokens"].(float64)
			if in == 0 {
				t.Fatalf("round %d: no input tokens in result.json", r.Round)
			}
			cached = append(cached, c/in)
			attempts = append(attempts, r.Attempt)
		}
		return out, cached, attempts
	}
	first, c1, _ := run(0)
	second, c2, _ := run(0)
	for i, out := range []*CompareOutcome{first, second} {
		cached := [][]float64{c1, c2}[i]
		for r, c := range cached {
			if c > 0.02 {
				t.Errorf("comparison %d round %d: %.0f%% of the prompt tokens came from the cache", i+1, r+1, 100*c)
			}
		}
		t.Logf("comparison %d: verdict %s, cached shares per round %.3f", i+1, out.Result.Verdict, cached)
		if v := out.Result.Verdict; v == compare.OutcomeFail {
			t.Errorf("comparison %d of a server with itself: verdict %s: %v", i+1, v, out.Result.Result.Reasons)
		}
	}
	if first.Result.PromptNonce == second.Result.PromptNonce || first.Result.PromptNonce == 0 {
		t.Errorf("both comparisons used the prompt nonce %d", first.Result.PromptNonce)
	}
	if m, err := artifacts.ReadManifest(first.Dir); err != nil || m.Fingerprint.Metadata["compare.prompt_nonce"] != fmt.Sprint(first.Result.PromptNonce) {
		t.Errorf("manifest compare.prompt_nonce %q (%v), want %d", m.Fingerprint.Metadata["compare.prompt_nonce"], err, first.Result.PromptNonce)
	}
	third, again, attempts := run(first.Result.PromptNonce)
	t.Logf("comparison 3 (nonce given back): verdict %s, cached shares per round %.3f", third.Result.Verdict, again)
	for r, c := range again {
		if attempts[r] != 0 {
			continue // a rerun of a discarded round sends prompts of its own
		}
		if c < 0.9 {
			t.Errorf("repeating the first comparison's prompts: round %d had only %.0f%% of its prompt tokens cached", r+1, 100*c)
		}
	}
}
