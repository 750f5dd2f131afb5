package manager_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestProbePromptsDistinctAcrossRestarts: a daemon probe started twice (a
// restart: a new manager) against a server with llama.cpp's prompt cache
// sends prompts its first start did not, so the second start's requests
// find (almost) nothing cached; with prompt_nonce fixed, the second start
// repeats the first one's prompts and the cache serves them.
func TestProbePromptsDistinctAcrossRestarts(t *testing.T) {
	sc := fastSim()
	sc.Engine, sc.EnablePrefixCaching, sc.PromptCache = simulator.EngineLlamaCpp, false, true
	base, _ := simtest.Start(t, sc)
	start := func(nonceLine string) (cached, n int) {
		t.Helper()
		_, evs := runFor(t, parse(t, fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    api: completions
    probes:
      - name: p
        rate: 40
        arrival: constant
        max_concurrency: 1
%s        workload:
          input_tokens: {dist: fixed, value: 48}
          output_tokens: {dist: fixed, value: 2}
`, base, nonceLine)), 10)
		for _, e := range evs[:10] {
			r := e.Record
			if !r.OK() || !r.CachedTokensReported {
				t.Fatalf("record %s: ok %v, cached tokens reported %v (%s)", r.RequestID, r.OK(), r.CachedTokensReported, r.ErrorMessage)
			}
			cached += r.CachedTokens
		}
		return cached, 10
	}
	start("")
	if c, n := start(""); c > 3*n {
		t.Errorf("after a restart %d of %d requests' prompt tokens came from the cache, want at most a nonce word each", c, n*48)
	}
	fixed := "        prompt_nonce: 12345\n"
	start(fixed)
	if c, n := start(fixed); c < n*40 {
		t.Errorf("a fixed prompt_nonce repeated the prompts, but only %d of %d prompt tokens came from the cache", c, n*48)
	}
	if _, err := parseConfig(strings.Replace(fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    probes:
      - name: p
        rate: 1
        prompt_nonce: 9223372036854775808
`, base), "\t", "", -1)); err == nil || !strings.Contains(err.Error(), "prompt_nonce: must be <= 9223372036854775807") {
		t.Errorf("an out-of-range prompt_nonce: %v", err)
	}
}
