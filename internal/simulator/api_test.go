package simulator_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

func TestStreamingShape(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	tests := []struct {
		name       string
		path       string
		body       map[string]any
		chat       bool
		usage      bool
		continuous bool
	}{
		{name: "completions", path: "/v1/completions", body: map[string]any{"prompt": "hello there world"}},
		{name: "completions include_usage", path: "/v1/completions", usage: true,
			body: map[string]any{"prompt": "hello there world", "stream_options": map[string]any{"include_usage": true}}},
		{name: "completions continuous usage", path: "/v1/completions", usage: true, continuous: true,
			body: map[string]any{"prompt": "hello there world", "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}},
		{name: "chat", path: "/v1/chat/completions", chat: true,
			body: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello there"}}}},
		{name: "chat include_usage", path: "/v1/chat/completions", chat: true, usage: true,
			body: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello there"}},
				"stream_options": map[string]any{"include_usage": true}}},
		{name: "chat continuous usage", path: "/v1/chat/completions", chat: true, usage: true, continuous: true,
			body: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello there"}},
				"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}},
	}
	const maxTokens = 7
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.body["model"] = "llmprobe-sim"
			tt.body["stream"] = true
			tt.body["ignore_eos"] = true
			if tt.chat {
				tt.body["max_completion_tokens"] = maxTokens
			} else {
				tt.body["max_tokens"] = maxTokens
			}
			resp := post(t, base+tt.path, tt.body, "X-Request-Id", "req-"+strings.ReplaceAll(tt.name, " ", "-"))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			s := readSSE(t, resp)
			if ct := s.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type %q", ct)
			}
			if got, want := s.header.Get("X-Request-Id"), "req-"+strings.ReplaceAll(tt.name, " ", "-"); got != want {
				t.Errorf("X-Request-Id %q, want %q", got, want)
			}
			if !s.done {
				t.Error("no data: [DONE]")
			}
			chunks := decodeChunks(t, s)
			wantPrefix, wantObject := "cmpl-", "text_completion"
			if tt.chat {
				wantPrefix, wantObject = "chatcmpl-", "chat.completion.chunk"
			}
			var prompt usageJSON
			if tt.chat {
				var tok struct{ Count int }
				postJSON(t, base+"/tokenize", map[string]any{"messages": tt.body["messages"]}, 200, &tok)
				prompt.PromptTokens = tok.Count
			} else {
				var tok struct{ Count int }
				postJSON(t, base+"/tokenize", map[string]any{"prompt": tt.body["prompt"]}, 200, &tok)
				prompt.PromptTokens = tok.Count
			}
			tokens, contentEvents, finish := 0, 0, ""
			var final *usageJSON
			for i, c := range chunks {
				if c.ID != wantPrefix+s.header.Get("X-Request-Id") || c.Object != wantObject || c.Model != "llmprobe-sim" {
					t.Errorf("chunk %d: id %q object %q model %q", i, c.ID, c.Object, c.Model)
				}
				if len(c.Choices) == 0 {
					if !tt.usage || i != len(chunks)-1 || c.Usage == nil {
						t.Errorf("chunk %d has no choices but is not the final usage chunk: %s", i, s.events[i])
					}
					final = c.Usage
					continue
				}
				contentEvents++
				ch := c.Choices[0]
				text := ch.Text
				if tt.chat {
					if ch.Delta == nil || ch.Delta.Content == nil {
						t.Fatalf("chunk %d: chat chunk without delta.content: %s", i, s.events[i])
					}
					if i == 0 {
						if ch.Delta.Role == nil || *ch.Delta.Role != "assistant" || *ch.Delta.Content != "" {
							t.Errorf("first chat chunk must carry role assistant and empty content: %s", s.events[i])
						}
					} else if ch.Delta.Role != nil {
						t.Errorf("chunk %d repeats the role", i)
					}
					text = *ch.Delta.Content
				}
				tokens += len(strings.Fields(text))
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
				if tt.continuous {
					if c.Usage == nil {
						t.Fatalf("chunk %d: continuous_usage_stats without usage", i)
					}
					if c.Usage.CompletionTokens != tokens || c.Usage.PromptTokens != prompt.PromptTokens ||
						c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens {
						t.Errorf("chunk %d: usage %+v after %d tokens", i, *c.Usage, tokens)
					}
				} else if c.Usage != nil {
					t.Errorf("chunk %d: usage without continuous_usage_stats", i)
				}
			}
			if tokens != maxTokens || finish != "length" {
				t.Errorf("got %d tokens, finish %q; want %d, length", tokens, finish, maxTokens)
			}
			// The tokens the engine produced while the handler was not
			// scheduled go out in one event, as vLLM coalesces them, so a
			// starved machine may send all 7 in one: at least one content
			// event (two in chat: the role, then the text), at most one per
			// token.
			minEvents := 1 + map[bool]int{true: 1}[tt.chat]
			if wantEvents := maxTokens + map[bool]int{true: 1}[tt.chat]; contentEvents > wantEvents || contentEvents < minEvents {
				t.Errorf("%d content events, want %d..%d", contentEvents, minEvents, wantEvents)
			}
			if tt.usage {
				if final == nil {
					t.Fatal("no usage chunk")
				}
				want := usageJSON{prompt.PromptTokens, maxTokens, prompt.PromptTokens + maxTokens}
				if *final != want {
					t.Errorf("usage %+v, want %+v", *final, want)
				}
			} else if final != nil {
				t.Error("usage chunk without include_usage")
			}
		})
	}
}

func TestNonStreamingShape(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	tests := []struct {
		name string
		path string
		body map[string]any
		chat bool
	}{
		{name: "completions", path: "/v1/completions", body: map[string]any{"prompt": "one two three four", "max_tokens": 5}},
		{name: "completions token ids", path: "/v1/completions", body: map[string]any{"prompt": []int{1, 2, 3, 4}, "max_tokens": 5}},
		{name: "chat max_tokens", path: "/v1/chat/completions", chat: true,
			body: map[string]any{"messages": []any{map[string]any{"role": "system", "content": "be brief"},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi you"}}}}, "max_tokens": 5}},
		{name: "chat max_completion_tokens wins", path: "/v1/chat/completions", chat: true,
			body: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 50, "max_completion_tokens": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.body["ignore_eos"] = true
			var out struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Choices []struct {
					Text    string `json:"text"`
					Message *struct {
						Role    string `json:"role"`
						Content string `json:"content"`
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage usageJSON `json:"usage"`
			}
			h := postJSON(t, base+tt.path, tt.body, 200, &out)
			if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Errorf("Content-Type %q", h.Get("Content-Type"))
			}
			if len(out.Choices) != 1 {
				t.Fatalf("%d choices", len(out.Choices))
			}
			text := out.Choices[0].Text
			if tt.chat {
				if out.Object != "chat.completion" || out.Choices[0].Message == nil || out.Choices[0].Message.Role != "assistant" ||
					!strings.HasPrefix(out.ID, "chatcmpl-") {
					t.Fatalf("not a chat completion: %+v", out)
				}
				text = out.Choices[0].Message.Content
			} else if out.Object != "text_completion" || !strings.HasPrefix(out.ID, "cmpl-") {
				t.Fatalf("not a completion: %+v", out)
			}
			if n := len(strings.Fields(text)); n != 5 || out.Usage.CompletionTokens != 5 || out.Choices[0].FinishReason != "length" {
				t.Errorf("text %q (%d words), usage %+v, finish %q", text, n, out.Usage, out.Choices[0].FinishReason)
			}
			var tok struct{ Count int }
			if ids, ok := tt.body["prompt"].([]int); ok {
				tok.Count = len(ids)
			} else if tt.chat {
				postJSON(t, base+"/tokenize", map[string]any{"messages": tt.body["messages"]}, 200, &tok)
			} else {
				postJSON(t, base+"/tokenize", map[string]any{"prompt": tt.body["prompt"]}, 200, &tok)
			}
			if out.Usage.PromptTokens != tok.Count || out.Usage.TotalTokens != tok.Count+5 {
				t.Errorf("usage %+v, /tokenize count %d", out.Usage, tok.Count)
			}
		})
	}
}

func TestFinishReasons(t *testing.T) {
	tests := []struct {
		name      string
		eos       float64
		body      map[string]any
		wantTok   int
		wantWhy   string
		wantWords int
	}{
		{name: "ignore_eos runs to max_tokens", eos: 1, body: map[string]any{"ignore_eos": true, "max_tokens": 6},
			wantTok: 6, wantWhy: "length", wantWords: 6},
		{name: "eos stops at once", eos: 1, body: map[string]any{"max_tokens": 6},
			wantTok: 1, wantWhy: "stop", wantWords: 0},
		{name: "min_tokens delays eos", eos: 1, body: map[string]any{"max_tokens": 6, "min_tokens": 3},
			wantTok: 4, wantWhy: "stop", wantWords: 3},
		{name: "max_tokens before eos", eos: 1, body: map[string]any{"max_tokens": 3, "min_tokens": 3},
			wantTok: 3, wantWhy: "length", wantWords: 3},
		{name: "no eos without probability", eos: 0, body: map[string]any{"max_tokens": 6},
			wantTok: 6, wantWhy: "length", wantWords: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.EOSProbability = tt.eos
			base, _ := simtest.Start(t, cfg)
			tt.body["prompt"] = "a b c"
			var out struct {
				Choices []struct {
					Text         string `json:"text"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage usageJSON `json:"usage"`
			}
			postJSON(t, base+"/v1/completions", tt.body, 200, &out)
			if out.Usage.CompletionTokens != tt.wantTok || out.Choices[0].FinishReason != tt.wantWhy ||
				len(strings.Fields(out.Choices[0].Text)) != tt.wantWords {
				t.Errorf("got %d tokens %q (%q), want %d tokens, %d words, %q",
					out.Usage.CompletionTokens, out.Choices[0].Text, out.Choices[0].FinishReason, tt.wantTok, tt.wantWords, tt.wantWhy)
			}
		})
	}
}

// TestEOSDistribution checks that without ignore_eos some requests stop early,
// never before min_tokens, and that the outcome is a function of seed and prompt.
func TestEOSDistribution(t *testing.T) {
	cfg := fastConfig()
	cfg.EOSProbability = 0.1
	cfg.StepBase = 100 * time.Microsecond
	base, _ := simtest.Start(t, cfg)
	stops, lengths := 0, 0
	first := map[string]string{}
	for round := range 2 {
		for i := range 40 {
			prompt := words("p"+itoa(i), 4)
			var out struct {
				Choices []struct {
					Text         string `json:"text"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage usageJSON `json:"usage"`
			}
			postJSON(t, base+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 20, "min_tokens": 2}, 200, &out)
			c := out.Choices[0]
			if out.Usage.CompletionTokens <= 2 && c.FinishReason == "stop" {
				t.Errorf("stopped after %d tokens, min_tokens 2", out.Usage.CompletionTokens)
			}
			if round == 0 {
				first[prompt] = c.Text + "|" + c.FinishReason
				if c.FinishReason == "stop" {
					stops++
				} else {
					lengths++
				}
			} else if got := c.Text + "|" + c.FinishReason; got != first[prompt] {
				t.Errorf("same prompt, different output: %q then %q", first[prompt], got)
			}
		}
	}
	if stops == 0 || lengths == 0 {
		t.Errorf("%d stops and %d lengths; want both", stops, lengths)
	}
}

func TestTokenizeDetokenize(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	var tok struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}
	postJSON(t, base+"/tokenize", map[string]any{"model": "llmprobe-sim", "prompt": "  the quick\tbrown\nfox "}, 200, &tok)
	if tok.Count != 4 || len(tok.Tokens) != 4 || tok.MaxModelLen != 256 {
		t.Fatalf("tokenize: %+v", tok)
	}
	var detok struct{ Prompt string }
	postJSON(t, base+"/detokenize", map[string]any{"tokens": tok.Tokens}, 200, &detok)
	if n := len(strings.Fields(detok.Prompt)); n != 4 {
		t.Errorf("detokenize kept %d of 4 tokens: %q", n, detok.Prompt)
	}
	var again struct{ Tokens []int }
	postJSON(t, base+"/tokenize", map[string]any{"prompt": detok.Prompt}, 200, &again)
	if !slices.Equal(again.Tokens, tok.Tokens) {
		t.Errorf("tokenize(detokenize(ids)) = %v, want %v", again.Tokens, tok.Tokens)
	}
	var chat struct{ Count int }
	msgs := []any{map[string]any{"role": "user", "content": "hi there"}}
	postJSON(t, base+"/tokenize", map[string]any{"messages": msgs}, 200, &chat)
	if chat.Count != 4 { // <|user|> hi there <|assistant|>
		t.Errorf("chat template count %d, want 4", chat.Count)
	}
	postJSON(t, base+"/tokenize", map[string]any{"messages": msgs, "add_generation_prompt": false}, 200, &chat)
	if chat.Count != 3 {
		t.Errorf("chat template without generation prompt: count %d, want 3", chat.Count)
	}
}

func TestErrors(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	long := words("w", 300) // > max-model-len 256
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	tests := []struct {
		name      string
		path      string
		body      any
		status    int
		errType   string
		param     string
		msgSubstr string
	}{
		{"bad JSON", "/v1/completions", `{"prompt": "hi",`, 400, "BadRequestError", "", "invalid JSON"},
		{"not an object", "/v1/completions", `[1,2]`, 400, "BadRequestError", "", "invalid JSON"},
		{"empty body", "/v1/chat/completions", ``, 400, "BadRequestError", "", "invalid JSON"},
		{"wrong type", "/v1/completions", `{"prompt":"hi","max_tokens":"ten"}`, 400, "BadRequestError", "max_tokens", "max_tokens: expected an integer, got a JSON string"},
		{"unknown model", "/v1/completions", map[string]any{"model": "gpt-9", "prompt": "hi"}, 404, "NotFoundError", "model", "does not exist"},
		{"unknown model chat", "/v1/chat/completions", map[string]any{"model": "gpt-9", "messages": msgs}, 404, "NotFoundError", "model", "gpt-9"},
		{"max_tokens 0", "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 0}, 400, "BadRequestError", "max_tokens", "at least 1"},
		{"max_tokens negative", "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": -5}, 400, "BadRequestError", "max_tokens", "at least 1"},
		{"max_completion_tokens 0", "/v1/chat/completions", map[string]any{"messages": msgs, "max_completion_tokens": 0}, 400, "BadRequestError", "max_completion_tokens", "at least 1"},
		{"missing prompt", "/v1/completions", map[string]any{"max_tokens": 3}, 400, "BadRequestError", "prompt", "prompt"},
		{"empty prompt", "/v1/completions", map[string]any{"prompt": "   "}, 400, "BadRequestError", "prompt", "at least one token"},
		{"batched prompts", "/v1/completions", map[string]any{"prompt": []string{"a", "b"}}, 400, "BadRequestError", "prompt", "one prompt"},
		{"prompt object", "/v1/completions", map[string]any{"prompt": map[string]any{"x": 1}}, 400, "BadRequestError", "prompt", "prompt must be"},
		{"token id out of range", "/v1/completions", map[string]any{"prompt": []int{1, 99999999}}, 400, "BadRequestError", "prompt", "out of vocabulary"},
		{"missing messages", "/v1/chat/completions", map[string]any{"max_tokens": 3}, 400, "BadRequestError", "messages", "non-empty"},
		{"empty messages", "/v1/chat/completions", map[string]any{"messages": []any{}}, 400, "BadRequestError", "messages", "non-empty"},
		{"image part without image_url", "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "image_url"}}}}}, 400, "BadRequestError", "messages", `needs "image_url"`},
		{"audio content", "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "input_audio"}}}}}, 400, "BadRequestError", "messages", "not supported"},
		{"missing role", "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"content": "x"}}}, 400, "BadRequestError", "messages", "role"},
		{"prompt too long", "/v1/completions", map[string]any{"prompt": long}, 400, "BadRequestError", "", "maximum context length"},
		{"prompt + max_tokens too long", "/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 254}, 400, "BadRequestError", "max_tokens", "maximum context length"},
		// prompt + max_tokens must not wrap around (it used to be accepted
		// and stall the engine); the message shows the true sum.
		{"max_tokens MaxInt64", "/v1/completions", `{"prompt":"a","max_tokens":9223372036854775807}`, 400, "BadRequestError", "max_tokens",
			"you requested 9223372036854775808 tokens (1 in the messages, 9223372036854775807 in the completion)"},
		{"max_tokens MaxInt64 streaming", "/v1/completions", `{"prompt":"a b","max_tokens":9223372036854775807,"stream":true}`, 400, "BadRequestError", "max_tokens",
			"maximum context length is 256 tokens"},
		{"max_completion_tokens MaxInt64", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":9223372036854775807}`,
			400, "BadRequestError", "max_completion_tokens", "maximum context length"},
		{"max_tokens beyond int64", "/v1/completions", `{"prompt":"a","max_tokens":9223372036854775808}`, 400, "BadRequestError", "max_tokens", "expected an integer, got a JSON number"},
		{"min_tokens MaxInt64", "/v1/completions", `{"prompt":"a","max_tokens":5,"min_tokens":9223372036854775807}`, 400, "BadRequestError", "min_tokens", "less than or equal to max_tokens=5"},
		{"stream_options without stream", "/v1/completions", map[string]any{"prompt": "a", "stream_options": map[string]any{"include_usage": true}}, 400, "BadRequestError", "stream_options", "stream=True"},
		{"n 2", "/v1/completions", map[string]any{"prompt": "a", "n": 2}, 400, "BadRequestError", "n", "n must be 1"},
		{"min_tokens negative", "/v1/completions", map[string]any{"prompt": "a", "min_tokens": -1}, 400, "BadRequestError", "min_tokens", "greater than or equal"},
		{"min_tokens above max_tokens", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 2, "min_tokens": 3}, 400, "BadRequestError", "min_tokens", "less than or equal"},
		{"tokenize nothing", "/tokenize", map[string]any{}, 400, "BadRequestError", "prompt", "prompt or messages"},
		{"tokenize unknown model", "/tokenize", map[string]any{"model": "x", "prompt": "a"}, 404, "NotFoundError", "model", "does not exist"},
		{"detokenize out of range", "/detokenize", map[string]any{"tokens": []int{-1}}, 400, "BadRequestError", "tokens", "out of vocabulary"},
		{"detokenize missing tokens", "/detokenize", map[string]any{}, 400, "BadRequestError", "tokens", "tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out struct {
				Error *struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    int     `json:"code"`
				} `json:"error"`
			}
			postJSON(t, base+tt.path, tt.body, tt.status, &out)
			e := out.Error
			if e == nil {
				t.Fatal("no error object")
			}
			param := ""
			if e.Param != nil {
				param = *e.Param
			}
			if e.Type != tt.errType || e.Code != tt.status || param != tt.param || !strings.Contains(e.Message, tt.msgSubstr) {
				t.Errorf("error %+v (param %q), want type %s code %d param %q message containing %q",
					*e, param, tt.errType, tt.status, tt.param, tt.msgSubstr)
			}
		})
	}
}

// TestGarbageNeverPanics throws malformed bodies at every POST endpoint: each
// must get a 4xx and the server must keep serving.
func TestGarbageNeverPanics(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	bodies := []string{"", "null", "{", "}", `"x"`, "[]", "123", `{"prompt":null}`, `{"messages":null}`,
		`{"messages":[null]}`, `{"messages":[{"role":"user","content":123}]}`, `{"prompt":[[1],[2]]}`, `{"prompt":[]}`,
		`{"prompt":[[]]}`, `{"tokens":"abc"}`, "\x00\xff", strings.Repeat("[", 10000)}
	// Bad only for generation: /tokenize ignores these fields.
	genBodies := []string{`{"max_tokens":1e99,"prompt":"a"}`, `{"prompt":"a","stream":"yes"}`, `{"prompt":"a","min_tokens":1e3}`,
		`{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":-1}`}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"} {
		all := bodies
		if strings.HasPrefix(path, "/v1/") {
			all = append(all, genBodies...)
		}
		for _, b := range all {
			resp := post(t, base+path, b)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("POST %s %q: status %d, body %s", path, b, resp.StatusCode, raw)
			}
			var e map[string]any
			if err := json.Unmarshal(raw, &e); err != nil || e["error"] == nil {
				t.Errorf("POST %s %q: not a vLLM error body: %s", path, b, raw)
			}
		}
	}
	resp, err := http.Get(base + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("server unhealthy after garbage: %v", err)
	}
	resp.Body.Close()
}

func TestModelsVersionHealth(t *testing.T) {
	cfg := fastConfig()
	cfg.Model = "my-model"
	base, _ := simtest.Start(t, cfg)
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	getJSON(t, base+"/v1/models", &models)
	if models.Object != "list" || len(models.Data) != 1 {
		t.Fatalf("models: %+v", models)
	}
	m := models.Data[0]
	if m.ID != "my-model" || m.Object != "model" || m.OwnedBy != "vllm" || m.Root != "my-model" || m.MaxModelLen != 256 {
		t.Errorf("model card %+v", m)
	}
	var v struct{ Version string }
	getJSON(t, base+"/version", &v)
	if v.Version != simulator.Version {
		t.Errorf("version %q", v.Version)
	}
	getJSON(t, base+"/health", nil)
	var out struct{ Usage usageJSON }
	postJSON(t, base+"/v1/completions", map[string]any{"model": "my-model", "prompt": "x", "max_tokens": 1}, 200, &out)
	resp, err := http.Get(base + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

func TestGeneratedRequestID(t *testing.T) {
	// firstID starts a fresh simulator and returns the id of its first
	// request without an x-request-id header.
	firstID := func(deterministic bool) string {
		cfg := fastConfig()
		cfg.Seed, cfg.DeterministicIDs = 7, deterministic
		base, _ := simtest.Start(t, cfg)
		resp := post(t, base+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1})
		var out struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		rid := resp.Header.Get("X-Request-Id")
		if len(rid) != 32 || out.ID != "cmpl-"+rid {
			t.Errorf("generated X-Request-Id %q, id %q", rid, out.ID)
		}
		return rid
	}
	tests := []struct {
		name          string
		deterministic bool
		wantSame      bool
	}{
		{name: "restarts draw new ids", deterministic: false, wantSame: false},
		{name: "explicit seed repeats ids", deterministic: true, wantSame: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := firstID(tt.deterministic)
			time.Sleep(time.Millisecond) // a different start time
			if b := firstID(tt.deterministic); (a == b) != tt.wantSame {
				t.Errorf("two runs with the same seed gave ids %s and %s", a, b)
			}
		})
	}
}
