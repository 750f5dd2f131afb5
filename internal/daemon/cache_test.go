package daemon

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// TestCachedTokensCounters probes two simulators, one whose responses
// report usage.prompt_tokens_details.cached_tokens (vLLM's
// --enable-prompt-tokens-details) and one whose responses do not (vLLM's
// default): with a 32-token shared prefix every request after the first
// finds its two blocks cached, so the reporting target's
// llmprobe_prompt_cached_tokens_total grows by 32 a hit and its hit counter
// moves; the other target has no such series at all.
func TestCachedTokensCounters(t *testing.T) {
	sc := simulator.DefaultConfig()
	sc.EnablePromptTokensDetails = true
	reporting, _ := simtest.Start(t, sc)
	silent, _ := simtest.Start(t, simulator.DefaultConfig())
	o, url, logs := options(t)
	probe := "    probes:\n      - name: p\n        rate: 20\n        workload: {prefix_tokens: 32, input_tokens: {dist: fixed, value: 16}}\n"
	yml := fmt.Sprintf("targets:\n  - name: reporting\n    base_url: %s\n%s  - name: silent\n    base_url: %s\n%s",
		reporting, probe, silent, probe)
	setConfig(t, &o, t.TempDir(), yml)
	start(t, o)
	hits := regexp.MustCompile(`llmprobe_prompt_cache_requests_total\{probe="p",result="hit",target="reporting"\} (\d+)`)
	var body string
	testutil.Eventually(t, "three cache hits of the reporting target", func() bool {
		body = get(t, url+"/metrics", `result="hit",target="reporting"`, logs)
		m := hits.FindStringSubmatch(body)
		n, _ := strconv.Atoi(m[1])
		return n >= 3
	})
	// Success requests of the silent target were counted meanwhile.
	get(t, url+"/metrics", `llmprobe_requests_total{outcome="success",probe="p",target="silent"}`, logs)
	body = get(t, url+"/metrics", `result="hit",target="reporting"`, logs)
	if regexp.MustCompile(`llmprobe_prompt_cache[a-z_]*\{[^}]*target="silent"`).MatchString(body) {
		t.Errorf("prefix-cache counters for the target whose responses never reported cached tokens:\n%s", body)
	}
	tokens := regexp.MustCompile(`llmprobe_prompt_cached_tokens_total\{probe="p",target="reporting"\} (\d+)`).FindStringSubmatch(body)
	n, _ := strconv.Atoi(hits.FindStringSubmatch(body)[1])
	if tokens == nil {
		t.Fatalf("no llmprobe_prompt_cached_tokens_total for the reporting target:\n%s", body)
	}
	// One scrape is not atomic across families: a hit may be counted in
	// the tokens and not yet in the requests.
	if got, _ := strconv.Atoi(tokens[1]); got != 32*n && got != 32*(n+1) {
		t.Errorf("cached tokens %d over %d hits, want 32 each (the shared prefix's two blocks)", got, n)
	}
}
