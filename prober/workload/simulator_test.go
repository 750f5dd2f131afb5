package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestAgainstSimulator sizes prompts with the simulator's /tokenize and
// checks the figure the server itself reports as usage.prompt_tokens.
func TestAgainstSimulator(t *testing.T) {
	base, _ := simtest.Start(t, simulator.DefaultConfig())
	model := simulator.DefaultConfig().Model
	spec := workload.Spec{
		InputTokens:  workload.LengthSpec{Dist: workload.DistUniform, Value: 100, RangeRatio: 0.5},
		OutputTokens: workload.Fixed(1),
		PrefixTokens: 32,
	}
	for _, tc := range []struct {
		name string
		chat bool
		path string
	}{
		{name: "completions", path: "/v1/completions"},
		{name: "chat", chat: true, path: "/v1/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{BaseURL: base + "/v1", Model: model, Chat: tc.chat})
			if err != nil {
				t.Fatal(err)
			}
			g, err := workload.NewGenerator(spec, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i := range int64(8) {
				it, err := g.At(context.Background(), tok, i)
				if err != nil {
					t.Fatal(err)
				}
				if !it.Exact() {
					t.Fatalf("item %d: %d tokens for a target of %d", i, it.PromptTokens, it.PrefixTokens+it.InputTokens)
				}
				req := map[string]any{"model": model, "max_tokens": 1}
				if tc.chat {
					req["messages"] = it.ChatMessages()
				} else {
					req["prompt"] = it.Prompt
				}
				body, _ := json.Marshal(req)
				resp, err := http.Post(base+tc.path, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				var out struct {
					Usage struct {
						PromptTokens int `json:"prompt_tokens"`
					} `json:"usage"`
				}
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("item %d: HTTP %d, %v", i, resp.StatusCode, err)
				}
				if out.Usage.PromptTokens != it.PromptTokens {
					t.Fatalf("item %d: server usage.prompt_tokens %d, item %d", i, out.Usage.PromptTokens, it.PromptTokens)
				}
			}
			// The simulator's tokenizer: every prompt distinct beyond the
			// prefix (32 words, one token each), from its first words on.
			seen := map[string]int64{}
			for i := range int64(400) {
				it, err := g.At(context.Background(), tok, i)
				if err != nil {
					t.Fatal(err)
				}
				words := strings.Fields(it.Prompt)
				start := strings.Join(words[32:32+8], " ")
				if j, dup := seen[start]; dup {
					t.Fatalf("items %d and %d share their first 8 words after the prefix: %q", j, i, start)
				}
				seen[start] = i
			}
			info := g.Info()
			if info.Method != workload.MethodServerTokenize || info.Resized != 0 || info.ResizedItems != 0 || info.PrefixTokens != 32 ||
				info.NonceWords != 8 || info.DistinctPrompts != 400 || g.DistinctPrompts() != 400 {
				t.Fatalf("info %+v", info)
			}
			if tok.MaxModelLen() <= 0 {
				t.Fatal("max_model_len not read from /tokenize")
			}
		})
	}
}
