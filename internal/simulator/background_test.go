package simulator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// TestBackgroundLoad: a simulator with --background.rate serves that many
// requests per second without any client, counted in
// vllm:request_success_total and the prompt-token counter, never a
// prefix-cache hit; the count can never run ahead of the schedule (one per
// period from the start).
func TestBackgroundLoad(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.StepBase, cfg.StepPerPrefillToken, cfg.StepPerSeq = time.Millisecond, 0, 10*time.Microsecond
	cfg.Background = simulator.Background{Rate: 200, InputTokens: 40, OutputTokens: 4}
	start := time.Now()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	testutil.Eventually(t, "60 background requests", func() bool {
		return counterValue(t, sim, "vllm:request_success_total") >= 60
	})
	n := counterValue(t, sim, "vllm:request_success_total")
	if most := 1 + 200*time.Since(start).Seconds(); n > most {
		t.Errorf("%v background requests within %v, more than the schedule's %v", n, time.Since(start), most)
	}
	if p := counterValue(t, sim, "vllm:prompt_tokens_total"); p < 40*n {
		t.Errorf("prompt tokens %v for %v requests of 40", p, n)
	}
	if h := counterValue(t, sim, "vllm:prefix_cache_hits_total"); h != 0 {
		t.Errorf("background prompts hit the prefix cache: %v tokens", h)
	}
}

func TestBackgroundValidate(t *testing.T) {
	for _, tt := range []struct {
		b    simulator.Background
		flag string
	}{
		{simulator.Background{Rate: -1, InputTokens: 1, OutputTokens: 1}, "--background.rate"},
		{simulator.Background{Rate: 1e9, InputTokens: 1, OutputTokens: 1}, "--background.rate"},
		{simulator.Background{Rate: 1, InputTokens: 0, OutputTokens: 1}, "--background.input-len"},
		{simulator.Background{Rate: 1, InputTokens: 1, OutputTokens: 0}, "--background.output-len"},
		{simulator.Background{Rate: 1, InputTokens: 9000, OutputTokens: 16}, "--background.input-len"},
	} {
		cfg := simulator.DefaultConfig()
		cfg.Background = tt.b
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%+v: error %v, want one naming %s", tt.b, err, tt.flag)
		}
	}
	cfg := simulator.DefaultConfig()
	cfg.Background.InputTokens = 0 // off: the lengths are not checked
	if err := cfg.Validate(); err != nil {
		t.Errorf("background off: %v", err)
	}
}
