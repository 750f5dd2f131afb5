package simulator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/alecthomas/kingpin/v2"
)

// Bounds of the llama.cpp-style prompt cache.
const (
	// DefaultPromptCacheTokens is the prompt cache's default capacity in
	// tokens (--prompt-cache-tokens): 65,536, a few hundred prompts of a
	// usual length.
	DefaultPromptCacheTokens = 1 << 16
	// MaxPromptCacheTokens bounds --prompt-cache-tokens: 4,194,304 tokens
	// (32 MiB of token ids), so that a lookup, which compares a prompt
	// with every cached one, stays cheap.
	MaxPromptCacheTokens = 1 << 22
)

// promptCache models llama-server's prompt cache (its slots' KV and the RAM
// prompt cache, `--cache-ram`): whole prompts, token by token, reused by
// the longest common prefix with any cached one, however long (no block
// rounding), leaving at least one token to evaluate. Prompts are kept in
// the order they finished, the oldest evicted first once the cache holds
// more than its capacity in tokens; a prompt that is a prefix of a newer
// one is dropped when the newer one is kept, as llama.cpp drops a state the
// new one contains. Owned by the engine goroutine.
type promptCache struct {
	capacity int
	tokens   int
	entries  [][]int // oldest first
}

func newPromptCache(capacity int) *promptCache { return &promptCache{capacity: capacity} }

// lookup returns how many leading tokens of prompt the cache holds: the
// longest common prefix with a cached prompt, at most len(prompt) - 1.
func (c *promptCache) lookup(prompt []int) int {
	best := 0
	for _, e := range c.entries {
		n := min(len(e), len(prompt)-1)
		i := 0
		for i < n && e[i] == prompt[i] {
			i++
		}
		best = max(best, i)
	}
	return best
}

// insert keeps a copy of prompt as the newest entry, drops the entries it
// contains and evicts the oldest ones down to the capacity (prompt itself
// when it alone is larger).
func (c *promptCache) insert(prompt []int) {
	if len(prompt) == 0 {
		return
	}
	keep := c.entries[:0]
	for _, e := range c.entries {
		if len(e) <= len(prompt) && slices.Equal(e, prompt[:len(e)]) {
			c.tokens -= len(e)
			continue
		}
		keep = append(keep, e)
	}
	clear(c.entries[len(keep):])
	c.entries = append(keep, append([]int(nil), prompt...))
	c.tokens += len(prompt)
	for c.tokens > c.capacity && len(c.entries) > 0 {
		c.tokens -= len(c.entries[0])
		c.entries[0] = nil
		c.entries = c.entries[1:]
	}
}

// cachedPrompt returns the prompt tokens admission found cached for s (the
// prefix cache's blocks or the prompt cache), as the usage reports them.
func (s *sequence) cachedPrompt() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cached
}

// setCached records the prompt tokens found cached at s's admission.
func (s *sequence) setCached(n int) {
	s.mu.Lock()
	s.cached = n
	s.mu.Unlock()
}

// cachedDetails is llama.cpp's usage.prompt_tokens_details.
func cachedDetails(cached int) json.RawMessage {
	return json.RawMessage(`{"cached_tokens":` + strconv.Itoa(cached) + `}`)
}

// validatePromptCache checks the prompt cache's capacity.
func (c Config) validatePromptCache() error {
	if c.PromptCache && (c.PromptCacheTokens < 1 || c.PromptCacheTokens > MaxPromptCacheTokens) {
		return fmt.Errorf("--prompt-cache-tokens must be in [1, %d], got %d", MaxPromptCacheTokens, c.PromptCacheTokens)
	}
	return nil
}

// addPromptCacheFlags adds --prompt-cache and --prompt-cache-tokens.
func addPromptCacheFlags(cmd *kingpin.CmdClause, c *Config, intFlag func(name, help string, p *int)) {
	cmd.Flag("prompt-cache", "Cache prompts as llama.cpp's llama-server does (its slots and --cache-ram): a prompt's "+
		"longest common prefix with any cached prompt, token by token, is not evaluated again (faster TTFT) and is "+
		"reported as cached (llamacpp:prompt_tokens_cached_total, usage.prompt_tokens_details.cached_tokens).").
		Default(strconv.FormatBool(c.PromptCache)).BoolVar(&c.PromptCache)
	intFlag("prompt-cache-tokens", fmt.Sprintf("With --prompt-cache: the most prompt tokens it keeps (oldest evicted first; at most %d).",
		MaxPromptCacheTokens), &c.PromptCacheTokens)
}
