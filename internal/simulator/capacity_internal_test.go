package simulator

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newStepEngine is an engine without its goroutine, for tests that call
// schedule and finishStep themselves.
func newStepEngine(cfg Config) *engine {
	return &engine{cfg: cfg, m: newMetrics(prometheus.NewRegistry(), cfg),
		kv: newKVCache(cfg.NumGPUBlocks, cfg.BlockSize, cfg.EnablePrefixCaching), wake: make(chan struct{}, 1)}
}

// virtualRun drives the engine's own scheduler (schedule, finishStep, the KV
// cache and preemption) on a virtual clock: every step advances the clock by
// its modeled duration instead of sleeping. The waiting queue is kept at
// 2*max-num-seqs requests of in unique prompt tokens that run to out tokens.
// It returns the completed requests per modeled second over measure
// completions, after warmup completions.
func virtualRun(t *testing.T, cfg Config, in, out, warmup, measure int) float64 {
	t.Helper()
	e := newStepEngine(cfg)
	next := uint64(0)
	clock, start := 0.0, 0.0
	completed := 0
	for steps := 0; completed < warmup+measure; steps++ {
		if steps > 100*(warmup+measure)*out {
			t.Fatalf("engine stalled: %d of %d requests completed after %d steps", completed, warmup+measure, steps)
		}
		for len(e.waiting) < 2*cfg.MaxNumSeqs {
			next++
			prompt := make([]int, in)
			for i := range prompt {
				prompt[i] = int(hash2(next, uint64(i)) % VocabSize)
			}
			e.waiting = append(e.waiting, &sequence{prompt: prompt, hashes: promptBlockHashes(prompt, cfg.BlockSize, 0),
				maxTokens: out, finishLen: out, finishWhy: finishLength, notify: make(chan struct{}, 1),
				arrival: time.Now(), state: stateWaiting})
		}
		plan, prefill := e.schedule()
		clock += (cfg.StepBase + time.Duration(prefill)*cfg.StepPerPrefillToken + time.Duration(len(plan))*cfg.StepPerSeq).Seconds()
		e.finishStep(plan, time.Now())
		for _, p := range plan {
			if p.seq.state == stateDone {
				if completed++; completed == warmup {
					start = clock
				}
			}
		}
	}
	return float64(completed-warmup) / (clock - start)
}

// TestCapacityVirtualTime checks Config.Capacity against the scheduler run on
// a virtual clock (deterministic, no sleeping) in every regime, including
// KV-bound batches whose sequences outgrow their admission blocks and get
// preempted. The formula must hold within 10%; KV-bound with growth it is an
// upper estimate (preemption recomputes cost a few percent).
func TestCapacityVirtualTime(t *testing.T) {
	fast := func(mut func(*Config)) Config {
		c := DefaultConfig()
		c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen, c.NumGPUBlocks = 16, 512, 1024, 1024
		c.StepBase, c.StepPerSeq, c.StepPerPrefillToken = 4*time.Millisecond, 200*time.Microsecond, 10*time.Microsecond
		c.EnablePrefixCaching = false
		mut(&c)
		return c
	}
	tests := []struct {
		name    string
		cfg     Config
		in, out int
	}{
		{name: "decode-bound", cfg: fast(func(*Config) {}), in: 32, out: 16},
		{name: "budget-bound", cfg: fast(func(c *Config) { c.MaxNumSeqs, c.MaxNumBatchedTokens = 8, 32 }), in: 64, out: 8},
		{name: "kv-bound without growth", cfg: fast(func(c *Config) { c.NumGPUBlocks = 17 }), in: 24, out: 8},
		// The audit's regime: the full-length formula was 28-37% low.
		{name: "kv-bound with growth 32/64", cfg: fast(func(c *Config) { c.NumGPUBlocks = 40 }), in: 32, out: 64},
		// Blocks 1..9, 5.44 on average: B ≈ 11.0 (full-length formula: 6).
		{name: "kv-bound with heavy growth 16/128", cfg: fast(func(c *Config) { c.NumGPUBlocks = 60 }), in: 16, out: 128},
		// Blocks 32..36 of 16 tokens: B ≈ 1800/34.5 ≈ 52 of 64 slots.
		{name: "kv-bound long prompts, default timing", cfg: func() Config {
			c := DefaultConfig()
			c.MaxNumSeqs, c.NumGPUBlocks = 64, 1800
			return c
		}(), in: 512, out: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.cfg.Capacity(tt.in, tt.out)
			got := virtualRun(t, tt.cfg, tt.in, tt.out, 2*tt.cfg.MaxNumSeqs, 10*tt.cfg.MaxNumSeqs)
			t.Logf("capacity formula %.2f req/s, virtual-time run %.2f req/s (%+.1f%%)", want, got, 100*(got-want)/want)
			if math.Abs(got-want) > 0.10*want {
				t.Errorf("measured %.2f req/s, formula %.2f req/s: off by more than 10%%", got, want)
			}
		})
	}
}

// TestSequenceNeverOutgrowsContext checks the engine's invariant: a sequence
// whose drawn length exceeds max-model-len (parseGen rejects such requests;
// this one bypasses it) finishes with "length" when prompt + output reach
// max-model-len, instead of outgrowing the KV cache and preempting itself
// forever, and the request next to it completes normally.
func TestSequenceNeverOutgrowsContext(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxModelLen, cfg.BlockSize, cfg.NumGPUBlocks, cfg.MaxNumSeqs = 64, 16, 5, 4
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newStepEngine(cfg)
	mk := func(promptLen, finishLen int) *sequence {
		prompt := make([]int, promptLen)
		for i := range prompt {
			prompt[i] = int(hash2(uint64(promptLen), uint64(i)) % VocabSize)
		}
		return &sequence{prompt: prompt, hashes: promptBlockHashes(prompt, cfg.BlockSize, 0), maxTokens: finishLen,
			finishLen: finishLen, finishWhy: finishLength, notify: make(chan struct{}, 1), arrival: time.Now(), state: stateWaiting}
	}
	runaway, normal := mk(10, math.MaxInt), mk(20, 5)
	e.waiting = append(e.waiting, runaway, normal)
	for steps := 0; runaway.state != stateDone || normal.state != stateDone; steps++ {
		if steps > 10*cfg.MaxModelLen {
			t.Fatalf("not finished after %d steps: runaway %d outputs, normal %d outputs", steps, runaway.outputs, normal.outputs)
		}
		plan, _ := e.schedule()
		e.finishStep(plan, time.Now())
		if n := runaway.numTokens(); n > cfg.MaxModelLen {
			t.Fatalf("sequence grew to %d tokens, max-model-len %d", n, cfg.MaxModelLen)
		}
	}
	if produced, _, reason := runaway.snapshot(); produced != cfg.MaxModelLen-10 || reason != finishLength {
		t.Errorf("runaway sequence: %d tokens, %q; want %d, length", produced, reason, cfg.MaxModelLen-10)
	}
	if produced, _, reason := normal.snapshot(); produced != 5 || reason != finishLength {
		t.Errorf("normal sequence: %d tokens, %q", produced, reason)
	}
	if e.kv.numFree != cfg.NumGPUBlocks {
		t.Errorf("%d of %d blocks free after both finished", e.kv.numFree, cfg.NumGPUBlocks)
	}
}
