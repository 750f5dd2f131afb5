package manager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// TestDaemonAgainstLlamaCpp: against llama.cpp's persona (no max_model_len
// on /v1/models, a /tokenize of its own shape) the daemon detects the
// engine, fills llmprobe_target_info with /props' build_info and n_ctx,
// sizes prompts with the server's tokenizer and skips the arrivals that
// cannot fit n_ctx instead of sending them.
func TestDaemonAgainstLlamaCpp(t *testing.T) {
	sc := fastSim()
	sc.Engine = simulator.EngineLlamaCpp
	sc.MaxModelLen = 256
	base, _ := simtest.Start(t, sc)
	reg := prometheus.NewRegistry()
	col := newCollector()
	m := newManager(reg, col)
	defer m.Stop()
	if err := m.Apply(context.Background(), parse(t, fmt.Sprintf(`
targets:
  - name: cpp
    base_url: %s
    probes:
      - name: p
        rate: 40
        workload:
          input_tokens: {dist: choice, choices: [{value: 64, weight: 1}, {value: 300, weight: 1}]}
          output_tokens: {dist: fixed, value: 16}
`, base))); err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(t, 10*time.Second, "20 records", func(evs []manager.RecordEvent) bool { return len(evs) >= 20 })
	for _, e := range evs {
		r := e.Record
		if !r.OK() && r.Error != prober.ClassCanceled {
			t.Errorf("request %s failed: %s %s", r.RequestID, r.Error, r.ErrorMessage)
		}
		if r.OK() && (r.PromptTokens != r.InputTokens || r.PromptTokens > 64 || r.TokensCounted) {
			t.Errorf("request %s: prompt_tokens %d, asked %d (counted %v)", r.RequestID, r.PromptTokens, r.InputTokens, r.TokensCounted)
		}
	}
	info := map[string]string{"target": "cpp", "model": sc.Model, "server_version": simulator.VersionLlamaCpp, "max_model_len": "256"}
	if got := counter(t, reg, "llmprobe_target_info", info); got != 1 {
		t.Errorf("llmprobe_target_info%v = %v", info, got)
	}
	if got := counter(t, reg, "llmprobe_requests_skipped_total", map[string]string{"reason": "too_long"}); got == 0 {
		t.Error("no too_long skips counted: the guard is off")
	}
}
