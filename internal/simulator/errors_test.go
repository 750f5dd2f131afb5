package simulator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestVLLMRendererCheck: the vLLM persona refuses a chat whose prompt is
// longer than the context less the output asked for with the renderer's
// 400 (param input_tokens, the count reported at most one past the limit);
// an output larger than the whole context keeps the max-tokens check, and
// completions keep the older wording.
func TestVLLMRendererCheck(t *testing.T) {
	cfg := fastConfig() // max-model-len 256
	base, _ := simtest.Start(t, cfg)
	chat := func(words, maxTokens int) map[string]any {
		b := map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.TrimSpace(strings.Repeat("w ", words))}}}
		if maxTokens > 0 {
			b["max_completion_tokens"] = maxTokens
		}
		return b
	}
	tests := []struct {
		name, path   string
		body         any
		param, where string
	}{
		{"prompt alone", "/v1/chat/completions", chat(400, 0), "input_tokens",
			"You passed 257 input tokens and requested 0 output tokens. However, the model's context length is only 256 tokens, " +
				"resulting in a maximum input length of 256 tokens."},
		{"prompt and output", "/v1/chat/completions", chat(200, 100), "input_tokens",
			"You passed 157 input tokens and requested 100 output tokens. However, the model's context length is only 256 tokens, " +
				"resulting in a maximum input length of 156 tokens."},
		{"output over the context", "/v1/chat/completions", chat(5, 300), "max_completion_tokens", "maximum context length is 256"},
		{"completions", "/v1/completions", map[string]any{"prompt": strings.Repeat("w ", 300)}, "", "maximum context length is 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			postJSON(t, base+tt.path, tt.body, http.StatusBadRequest, &out)
			param := ""
			if out.Error.Param != nil {
				param = *out.Error.Param
			}
			if param != tt.param || !strings.Contains(out.Error.Message, tt.where) {
				t.Errorf("param %q message %q, want %q and %q", param, out.Error.Message, tt.param, tt.where)
			}
		})
	}
}

// TestSGLangModelRoute: the SGLang persona's GET /v1/models/{model}
// answers the served model's card (a name with a slash included) and
// SGLang's OpenAI-shaped 404 for another; its chat answers any model and
// echoes it.
func TestSGLangModelRoute(t *testing.T) {
	cfg := fastConfig()
	cfg.Engine, cfg.Model = simulator.EngineSGLang, "Qwen/Qwen3-8B"
	base, _ := simtest.Start(t, cfg)
	var card struct {
		ID, OwnedBy string
	}
	getJSON(t, base+"/v1/models/Qwen/Qwen3-8B", &card)
	if card.ID != "Qwen/Qwen3-8B" {
		t.Errorf("card %+v, want the served model's", card)
	}
	resp, err := http.Get(base + "/v1/models/gpt-4")
	if err != nil {
		t.Fatal(err)
	}
	var nf struct {
		Error struct{ Message, Type, Param, Code string } `json:"error"`
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&nf); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /v1/models/gpt-4: %d, %v", resp.StatusCode, err)
	}
	if e := nf.Error; e.Message != "The model 'gpt-4' does not exist" || e.Type != "invalid_request_error" || e.Param != "model" ||
		e.Code != "model_not_found" {
		t.Errorf("404 %+v", e)
	}
	var answer struct{ Model string }
	postJSON(t, base+"/v1/chat/completions", map[string]any{"model": "gpt-4", "max_tokens": 2,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}}, http.StatusOK, &answer)
	if answer.Model != "gpt-4" {
		t.Errorf("chat answered as %q, want the model asked for echoed", answer.Model)
	}
}
