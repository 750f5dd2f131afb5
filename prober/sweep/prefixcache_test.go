package sweep_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestUnintendedPrefixCache sweeps the simulator with its prefix cache on,
// once as the workload builds prompts (each request's nonce after the shared
// prefix) and once with every prompt forced to the first one: the server's
// own prefix-cache hits show the repeats, the step is flagged
// unintended-prefix-cache and analysis.md says why; the normal run is not
// flagged and records every prompt as distinct.
func TestUnintendedPrefixCache(t *testing.T) {
	sim := simulator.DefaultConfig()
	sim.StepBase, sim.StepPerPrefillToken, sim.StepPerSeq = time.Millisecond, 0, 10*time.Microsecond
	sim.EnablePrefixCaching = true
	url, _ := simtest.Start(t, sim)
	run := func(t *testing.T, repeat bool) *sweep.Result {
		t.Helper()
		res := prefixCacheSweep(t, url, repeat)
		if len(res.Steps) != 1 || !res.Steps[0].Server.PrefixCacheHits.Known {
			t.Fatalf("steps %d, server %+v", len(res.Steps), res.Steps[0].Server)
		}
		return res
	}

	t.Run("distinct prompts are not flagged", func(t *testing.T) {
		res := run(t, false)
		st := res.Steps[0]
		// Other flags (client-saturated on a busy machine) are not this
		// test's business.
		if slices.Contains(st.Validity.Flags, sweep.FlagUnintendedPrefixCache) {
			t.Errorf("flags %v reasons %v", st.Validity.Flags, st.Validity.Reasons)
		}
		if st.DistinctPrompts != 20 {
			t.Errorf("distinct prompts %d, want 20", st.DistinctPrompts)
		}
		// The shared prefix (two 16-token blocks) is all the cache gives.
		if h := st.Server.PrefixCacheHits.Value; h != 20*32 {
			t.Errorf("prefix-cache hits %.0f, want %d", h, 20*32)
		}
		a := string(report.Analysis(res))
		if !strings.Contains(a, "| distinct prompts |") || !strings.Contains(a, " 20 of 20 |") {
			t.Errorf("analysis.md has no distinct-prompt column:\n%s", a)
		}
	})
	t.Run("repeated prompts are flagged", func(t *testing.T) {
		res := run(t, true)
		st := res.Steps[0]
		i := slices.Index(st.Validity.Flags, sweep.FlagUnintendedPrefixCache)
		if i < 0 || st.Validity.Valid {
			t.Fatalf("not flagged: flags %v, server hits %+v of %+v", st.Validity.Flags, st.Server.PrefixCacheHits, st.Server.PrefixCacheQueries)
		}
		reason := st.Validity.Reasons[i]
		if !strings.Contains(reason, "more than the shared prefix explains (at most 32 per request") {
			t.Errorf("reason %q", reason)
		}
		a := string(report.Analysis(res))
		if !strings.Contains(a, "unintended-prefix-cache") || !strings.Contains(a, "prompts met a cache they were not meant to") {
			t.Errorf("analysis.md does not say why the step is invalid:\n%s", a)
		}
	})
}

// TestUnintendedPrefixCacheFromUsage: a server with no prefix-cache
// counters on /metrics (the generic persona has no /metrics at all) whose
// responses report usage.prompt_tokens_details.cached_tokens (vLLM's
// --enable-prompt-tokens-details) is judged from the responses: distinct
// prompts are not flagged, every prompt forced to the first one is, with the
// reason naming the usage field.
func TestUnintendedPrefixCacheFromUsage(t *testing.T) {
	sim := simulator.DefaultConfig()
	sim.Engine = simulator.EngineGeneric
	sim.EnablePromptTokensDetails = true
	sim.StepBase, sim.StepPerPrefillToken, sim.StepPerSeq = time.Millisecond, 0, 10*time.Microsecond
	url, _ := simtest.Start(t, sim)
	run := func(t *testing.T, repeat bool) *sweep.Step {
		t.Helper()
		res := prefixCacheSweep(t, url, repeat)
		st := res.Steps[0]
		if st.Server.PrefixCacheHits.Known {
			t.Fatalf("server prefix-cache hits known without /metrics: %+v", st.Server.PrefixCacheHits)
		}
		if st.Stats.CachedTokensReports != st.Stats.Completed || st.Stats.Completed != 20 {
			t.Fatalf("%d of %d responses reported cached tokens, want all 20", st.Stats.CachedTokensReports, st.Stats.Completed)
		}
		return st
	}
	t.Run("distinct prompts are not flagged", func(t *testing.T) {
		st := run(t, false)
		if slices.Contains(st.Validity.Flags, sweep.FlagUnintendedPrefixCache) {
			t.Errorf("flags %v reasons %v", st.Validity.Flags, st.Validity.Reasons)
		}
		// The shared prefix (two 16-token blocks) is all the cache gives.
		if st.Stats.CachedTokens != 20*32 {
			t.Errorf("usage cached tokens %d, want %d", st.Stats.CachedTokens, 20*32)
		}
	})
	t.Run("repeated prompts are flagged", func(t *testing.T) {
		st := run(t, true)
		i := slices.Index(st.Validity.Flags, sweep.FlagUnintendedPrefixCache)
		if i < 0 {
			t.Fatalf("not flagged: flags %v, usage cached %d", st.Validity.Flags, st.Stats.CachedTokens)
		}
		if r := st.Validity.Reasons[i]; !strings.Contains(r, "usage.prompt_tokens_details.cached_tokens") {
			t.Errorf("reason %q does not name the usage field", r)
		}
	})
}

// prefixCacheSweep runs one step of 20 requests sharing a 32-token prefix
// against url; with repeat every prompt is forced to the first one (and the
// seed changed, so the prompts are not the ones an earlier run left in the
// cache).
func prefixCacheSweep(t *testing.T, url string, repeat bool) *sweep.Result {
	t.Helper()
	cfg := sweep.Config{
		Target: url, API: "completions", Timeout: 30 * time.Second,
		Workload:       workload.Spec{InputTokens: workload.Fixed(64), OutputTokens: workload.Fixed(4), PrefixTokens: 32},
		WorkloadSource: "flags", Rates: []float64{50}, RatesText: "50", Arrival: "poisson", Burstiness: 1,
		NumPrompts: 20, Warmups: 1, Rounds: 1, MetricsInterval: 100 * time.Millisecond, IdleTimeout: 2 * time.Second,
		OutDir: t.TempDir(), Name: "test", Embedded: true, Seed: 7,
		Validity: sweep.ValidityOptions{MaxSendLag: 100 * time.Millisecond},
	}
	var opts sweep.Options
	if repeat {
		cfg.Seed = 8
		var once sync.Once
		var first string
		sweep.WithPromptRewrite(&opts, func(it workload.Item) workload.Item {
			once.Do(func() { first = it.Prompt })
			it.Prompt = first
			return it
		})
	}
	p, err := sweep.Prepare(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
