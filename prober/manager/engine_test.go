package manager_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
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
	reg, evs := tooLongProbe(t, "cpp", base)
	for _, e := range evs {
		r := e.Record
		if r.OK() && (r.PromptTokens != r.InputTokens || r.PromptTokens > 64 || r.TokensCounted) {
			t.Errorf("request %s: prompt_tokens %d, asked %d (counted %v)", r.RequestID, r.PromptTokens, r.InputTokens, r.TokensCounted)
		}
	}
	info := map[string]string{"target": "cpp", "model": sc.Model, "server_version": simulator.VersionLlamaCpp, "max_model_len": "256",
		"engine": "llamacpp", "server_instance": strings.TrimPrefix(base, "http://")}
	if got := counter(t, reg, "llmprobe_target_info", info); got != 1 {
		t.Errorf("llmprobe_target_info%v = %v", info, got)
	}
}

// TestServerInstance: llmprobe_target_info's server_instance is the host and
// port of the metrics URL as written (the instance label of a scrape job
// that lists that address), base_url's when metrics_url is none.
func TestServerInstance(t *testing.T) {
	for _, tc := range []struct{ name, target, want string }{
		{"default metrics_url", "base_url: http://vllm:8000", "vllm:8000"},
		{"path prefix", "base_url: https://gw.example.com/llm", "gw.example.com"},
		{"own metrics_url", "base_url: http://vllm:8000\n    metrics_url: http://vllm-metrics:9000/metrics?x=1", "vllm-metrics:9000"},
		{"metrics_url none", "base_url: http://10.0.0.7:8000\n    metrics_url: none", "10.0.0.7:8000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parse(t, fmt.Sprintf(`
targets:
  - name: t
    %s
    probes: [{name: p, rate: 1}]
`, tc.target))
			if got := manager.ServerInstance(c.Targets[0]); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
