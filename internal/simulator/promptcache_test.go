package simulator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// tagWords returns n distinct words after the tag (the toy tokenizer counts
// one token a word).
func tagWords(tag string, from, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("%s%d", tag, from+i)
	}
	return strings.Join(ws, " ")
}

// cachedUsage is a llama.cpp-shaped usage with prompt_tokens_details.
type cachedUsage struct {
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Timings struct {
		CacheN  int `json:"cache_n"`
		PromptN int `json:"prompt_n"`
	} `json:"timings"`
}

// TestPromptCacheLlamaCpp: with --prompt-cache (and no block prefix cache)
// the llama.cpp persona serves a repeated prompt with one token evaluated,
// a prompt sharing a prefix with the shared tokens reused (not rounded to a
// block), and reports them in llamacpp:prompt_tokens_cached_total, in
// llamacpp:prompt_tokens_total (evaluated only) and in
// usage.prompt_tokens_details.cached_tokens, streamed (on the finish chunk,
// with timings cache_n) and not; without the option nothing is cached.
func TestPromptCacheLlamaCpp(t *testing.T) {
	f := func(promptCache bool, want []int) {
		t.Helper()
		cfg := fastConfig()
		cfg.Engine = simulator.EngineLlamaCpp
		cfg.EnablePrefixCaching = false
		cfg.PromptCache = promptCache
		base, _ := simtest.Start(t, cfg)
		prompts := []string{
			tagWords("a", 0, 100),                             // new
			tagWords("a", 0, 100),                             // repeated: 99 cached
			tagWords("a", 0, 37) + " " + tagWords("b", 0, 50), // shares 37 tokens
			tagWords("c", 0, 60),                              // new
		}
		evaluated, cachedTotal := 0, 0
		for i, p := range prompts {
			var got cachedUsage
			stream := i%2 == 1
			body := map[string]any{"model": cfg.Model, "prompt": p, "max_tokens": 2, "stream": stream}
			if stream {
				s := readSSE(t, post(t, base+"/v1/completions", body))
				// The finish chunk carries usage and timings.
				if err := json.Unmarshal([]byte(s.events[len(s.events)-1]), &got); err != nil {
					t.Fatal(err)
				}
			} else {
				postJSON(t, base+"/v1/completions", body, http.StatusOK, &got)
			}
			d := got.Usage.PromptTokensDetails
			if d == nil || d.CachedTokens != want[i] {
				t.Fatalf("prompt cache %v, prompt %d: prompt_tokens_details %+v, want cached_tokens %d", promptCache, i, d, want[i])
			}
			if stream && (got.Timings.CacheN != want[i] || got.Timings.PromptN != got.Usage.PromptTokens-want[i]) {
				t.Fatalf("prompt %d: timings %+v with %d prompt tokens, want cache_n %d", i, got.Timings, got.Usage.PromptTokens, want[i])
			}
			evaluated += got.Usage.PromptTokens - want[i]
			cachedTotal += want[i]
		}
		mfs := scrape(t, base)
		if v := value(t, mfs, "llamacpp:prompt_tokens_cached_total"); v != float64(cachedTotal) {
			t.Errorf("llamacpp:prompt_tokens_cached_total = %v, want %d", v, cachedTotal)
		}
		if v := value(t, mfs, "llamacpp:prompt_tokens_total"); v != float64(evaluated) {
			t.Errorf("llamacpp:prompt_tokens_total = %v, want %d (evaluated only)", v, evaluated)
		}
	}
	f(true, []int{0, 99, 37, 0})
	f(false, []int{0, 0, 0, 0})
}

// TestPromptCacheEviction: the cache keeps at most --prompt-cache-tokens
// tokens, the oldest prompt evicted first.
func TestPromptCacheEviction(t *testing.T) {
	cfg := fastConfig()
	cfg.Engine = simulator.EngineLlamaCpp
	cfg.EnablePrefixCaching = false
	cfg.PromptCache, cfg.PromptCacheTokens = true, 150
	base, _ := simtest.Start(t, cfg)
	send := func(p string) int {
		var got cachedUsage
		postJSON(t, base+"/v1/completions", map[string]any{"model": cfg.Model, "prompt": p, "max_tokens": 1}, http.StatusOK, &got)
		return got.Usage.PromptTokensDetails.CachedTokens
	}
	send(tagWords("a", 0, 100))
	send(tagWords("b", 0, 100)) // 200 tokens: a is evicted
	if c := send(tagWords("a", 0, 100)); c != 0 {
		t.Fatalf("an evicted prompt was served with %d cached tokens", c)
	}
	if c := send(tagWords("a", 0, 100)); c != 99 {
		t.Fatalf("the newest prompt again: %d cached tokens, want 99", c)
	}
	bad := fastConfig()
	bad.PromptCache, bad.PromptCacheTokens = true, simulator.MaxPromptCacheTokens+1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--prompt-cache-tokens") {
		t.Fatalf("Validate of an oversized prompt cache: %v", err)
	}
}
