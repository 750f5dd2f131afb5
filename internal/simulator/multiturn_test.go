package simulator_test

import (
	"bufio"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// chatTurn streams one chat request of msgs and returns the reply text and
// the time to the first content event.
func chatTurn(t *testing.T, base string, msgs []map[string]string, maxTokens int) (string, time.Duration) {
	t.Helper()
	t0 := time.Now()
	resp := post(t, base+"/v1/chat/completions", map[string]any{
		"messages": msgs, "max_completion_tokens": maxTokens, "ignore_eos": true, "stream": true,
	})
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var reply strings.Builder
	var ttft time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev streamChunk
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if len(ev.Choices) > 0 && ev.Choices[0].Delta != nil && ev.Choices[0].Delta.Content != nil {
			if ttft == 0 {
				ttft = time.Since(t0)
			}
			reply.WriteString(*ev.Choices[0].Delta.Content)
		}
	}
	return reply.String(), ttft
}

// TestMultiTurnPrefixReuse: the chat rendering of a conversation is a token
// prefix of the next turn's ([u1,a1,u2] of [u1,a1,u2,a2,u3], the replies
// as the server streamed them), so the prefix cache hits each turn's whole
// earlier context: prefix_cache_hits grows with every turn and a later
// turn's TTFT is lower than that of the same context sent cold.
func TestMultiTurnPrefixReuse(t *testing.T) {
	run := func(prefix bool) (hits []float64, ttft3 time.Duration, rendered [][]int) {
		cfg := fastConfig()
		cfg.MaxModelLen, cfg.NumGPUBlocks, cfg.BlockSize = 4096, 1024, 16
		cfg.StepPerPrefillToken = time.Millisecond // prefill dominates TTFT
		cfg.EnablePrefixCaching = prefix
		base, _ := simtest.Start(t, cfg)
		var msgs []map[string]string
		for k := 1; k <= 3; k++ {
			msgs = append(msgs, map[string]string{"role": "user", "content": words("u"+itoa(k), 100)})
			var tok struct {
				Tokens []int `json:"tokens"`
			}
			postJSON(t, base+"/tokenize", map[string]any{"messages": msgs}, 200, &tok)
			rendered = append(rendered, tok.Tokens)
			reply, ttft := chatTurn(t, base, msgs, 8)
			if len(strings.Fields(reply)) != 8 {
				t.Fatalf("turn %d reply %q, want 8 tokens", k, reply)
			}
			msgs = append(msgs, map[string]string{"role": "assistant", "content": reply})
			hits = append(hits, value(t, scrape(t, base), "vllm:prefix_cache_hits_total"))
			ttft3 = ttft
		}
		return hits, ttft3, rendered
	}
	hits, warm, rendered := run(true)
	for k := 1; k < len(rendered); k++ {
		if !slices.Equal(rendered[k-1], rendered[k][:len(rendered[k-1])]) {
			t.Fatalf("turn %d's rendered prompt is not a token prefix of turn %d's", k, k+1)
		}
	}
	// Turn 2 hits turn 1's prompt (102 tokens: 6 full blocks), turn 3
	// turn 2's (212 tokens: 13 blocks).
	if hits[0] != 0 || hits[1] != 6*16 || hits[2] != (6+13)*16 {
		t.Errorf("prefix-cache hits after each turn %v, want [0 96 304]", hits)
	}
	_, cold, _ := run(false)
	t.Logf("turn 3 TTFT: %v cached, %v cold", warm, cold)
	if !(warm < cold*3/4) {
		t.Errorf("turn 3 TTFT %v with its context cached, %v cold: want well below", warm, cold)
	}
}
