package simulator_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// rustConfig is fastConfig as vLLM's Rust frontend.
func rustConfig() simulator.Config {
	c := fastConfig()
	c.VLLMFrontend = simulator.VLLMFrontendRust
	return c
}

// TestRustFrontendMetrics: --vllm-frontend rust serves /metrics as
// OpenMetrics whatever Accept says, with the Rust frontend's families (no
// token counters, no cache_config_info, no _created samples, request_success
// by finish_reason) and the engine's figures underneath: a finished
// request's tokens in the per-request histograms' sums, the HTTP families
// counted for the generation route and not for the excluded ones.
func TestRustFrontendMetrics(t *testing.T) {
	base, _ := simtest.Start(t, rustConfig())
	var out struct {
		Usage usageJSON `json:"usage"`
	}
	postJSON(t, base+"/v1/completions", map[string]any{"model": "llmprobe-sim", "prompt": words("w", 20),
		"max_tokens": 6, "ignore_eos": true}, http.StatusOK, &out)
	getOK(t, base+"/version").Body.Close()

	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Fatalf("Content-Type %q, want OpenMetrics 1.0 whatever Accept says", ct)
	}
	s := string(body)
	for _, w := range []string{"# TYPE vllm:request_success counter\n", "# TYPE vllm:request_prompt_tokens histogram\n",
		"# TYPE vllm:request_prefill_kv_computed_tokens histogram\n", "# TYPE http_requests counter\n",
		"# TYPE http_request_duration_highr_seconds histogram\n", `le="131072.0"`, "\n# EOF\n"} {
		if !strings.Contains(s, w) {
			t.Errorf("Rust frontend exposition lacks %q", w)
		}
	}
	for _, w := range []string{"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:cache_config_info",
		"vllm:num_preemptions", "vllm:iteration_tokens", "finished_reason", "_created"} {
		if strings.Contains(s, w) {
			t.Errorf("Rust frontend exposition has %q, which it does not register", w)
		}
	}
	// sample is the value of the first name{...} sample whose labels
	// hold every one of with.
	sample := func(name string, with ...string) string {
		for _, line := range strings.Split(s, "\n") {
			if !strings.HasPrefix(line, name+"{") {
				continue
			}
			ok := true
			for _, w := range with {
				ok = ok && strings.Contains(line, w)
			}
			if ok {
				return strings.TrimSuffix(line[strings.LastIndexByte(line, ' ')+1:], ".0")
			}
		}
		return ""
	}
	if got := sample("vllm:request_prompt_tokens_sum"); got != itoa(out.Usage.PromptTokens) {
		t.Errorf("vllm:request_prompt_tokens_sum %q, want %d (the answer's usage)", got, out.Usage.PromptTokens)
	}
	if got := sample("vllm:request_generation_tokens_sum"); got != "6" {
		t.Errorf("vllm:request_generation_tokens_sum %q, want 6", got)
	}
	if got := sample("vllm:request_success_total", `finish_reason="length"`, `model_name="llmprobe-sim"`, `engine="0"`); got != "1" {
		t.Errorf("finished by length %q, want 1:\n%s", got, grepLines(s, "request_success"))
	}
	if got := sample("http_requests_total", `method="POST"`, `status="2xx"`, `handler="/v1/completions"`); got != "1" {
		t.Errorf("completions counted %q in http_requests, want 1:\n%s", got, grepLines(s, "http_requests"))
	}
	if got := sample("http_request_duration_seconds_count", `handler="/v1/completions"`); got != "1" {
		t.Errorf("completions timed %q times in http_request_duration_seconds, want 1", got)
	}
	if strings.Contains(s, `handler="/version"`) {
		t.Errorf("/version is counted, but the Rust frontend excludes it:\n%s", grepLines(s, "http_request"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRustFrontendStreams: the Rust frontend's framing on completions and
// chat: no null field anywhere, the chat role chunk with the role alone,
// text chunks without finish_reason, then a finish chunk of its own (chat:
// empty delta; completions: empty text), the usage chunk with empty
// choices, [DONE].
func TestRustFrontendStreams(t *testing.T) {
	base, _ := simtest.Start(t, rustConfig())
	for _, api := range []string{"completions", "chat"} {
		t.Run(api, func(t *testing.T) {
			body := map[string]any{"model": "llmprobe-sim", "max_tokens": 5, "ignore_eos": true, "stream": true,
				"stream_options": map[string]any{"include_usage": true}}
			path := "/v1/completions"
			if api == "chat" {
				path = "/v1/chat/completions"
				body["messages"] = []map[string]string{{"role": "user", "content": "hello there"}}
			} else {
				body["prompt"] = "hello there"
			}
			st := readSSE(t, post(t, base+path, body))
			if !st.done {
				t.Fatal("no [DONE]")
			}
			for i, e := range st.events {
				if strings.Contains(e, "null") {
					t.Errorf("event %d has a null field: %s", i, e)
				}
			}
			chunks := decodeChunks(t, st)
			n := len(chunks)
			if n < 3 {
				t.Fatalf("%d chunks: %v", n, st.events)
			}
			use, fin := chunks[n-1], chunks[n-2]
			if len(use.Choices) != 0 || use.Usage == nil || use.Usage.CompletionTokens != 5 {
				t.Errorf("last chunk %s, want the usage chunk with empty choices and 5 completion tokens", st.events[n-1])
			}
			if len(fin.Choices) != 1 || fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "length" {
				t.Fatalf("finish chunk %s, want finish_reason length", st.events[n-2])
			}
			var raw map[string]any
			_ = json.Unmarshal([]byte(st.events[n-2]), &raw)
			choice := raw["choices"].([]any)[0].(map[string]any)
			if api == "chat" {
				if d, _ := choice["delta"].(map[string]any); d == nil || len(d) != 0 {
					t.Errorf("chat finish chunk delta %v, want {}", choice["delta"])
				}
				role := chunks[0].Choices[0].Delta
				if role == nil || role.Role == nil || *role.Role != "assistant" || role.Content != nil {
					t.Errorf("first chat chunk %s, want delta {role: assistant} alone", st.events[0])
				}
			} else if choice["text"] != "" {
				t.Errorf("completion finish chunk text %v, want \"\"", choice["text"])
			}
			var text bytes.Buffer
			for i, c := range chunks[:n-2] {
				if len(c.Choices) != 1 || c.Choices[0].FinishReason != nil {
					t.Errorf("chunk %d %s: a text chunk carries no finish_reason", i, st.events[i])
				}
				text.WriteString(c.Choices[0].Text)
			}
			if api == "completions" && text.Len() == 0 {
				t.Error("no text streamed")
			}
		})
	}
}

// TestToolCallStartChunk: both vLLM frontends stream a tool call as their
// sources do: first a chunk with the call's id, type and name alone (the
// Rust frontend's tool_call_start_chunk), then chunks with argument
// fragments alone, then the finish chunk with tool_calls; the fragments
// join into the JSON arguments.
func TestToolCallStartChunk(t *testing.T) {
	for name, cfg := range map[string]simulator.Config{"python": fastConfig(), "rust": rustConfig()} {
		t.Run(name, func(t *testing.T) { checkToolCallStart(t, cfg) })
	}
}

func checkToolCallStart(t *testing.T, cfg simulator.Config) {
	base, _ := simtest.Start(t, cfg)
	body := map[string]any{"model": "llmprobe-sim", "max_tokens": 64, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "What is the weather in Paris?"}},
		"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather",
			"parameters": map[string]any{"type": "object", "required": []string{"city"},
				"properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}}
	st := readSSE(t, post(t, base+"/v1/chat/completions", body))
	type call struct {
		ID       *string `json:"id"`
		Function struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
	}
	var calls []call
	finish := ""
	for i, e := range st.events {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []call `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %d %q: %v", i, e, err)
		}
		for _, ch := range c.Choices {
			calls = append(calls, ch.Delta.ToolCalls...)
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if len(calls) < 2 {
		t.Fatalf("%d tool call deltas, want the start and argument fragments: %v", len(calls), st.events)
	}
	start := calls[0]
	if start.ID == nil || start.Function.Name == nil || *start.Function.Name != "get_weather" || start.Function.Arguments != nil {
		t.Errorf("first tool call delta %+v, want id and name alone", start)
	}
	var args strings.Builder
	for i, c := range calls[1:] {
		if c.ID != nil || c.Function.Name != nil || c.Function.Arguments == nil {
			t.Errorf("tool call delta %d %+v, want an arguments fragment alone", i+1, c)
			continue
		}
		args.WriteString(*c.Function.Arguments)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(args.String()), &v); err != nil || v["city"] == nil {
		t.Errorf("arguments %q: %v, want a JSON object with city", args.String(), err)
	}
	if finish != "tool_calls" {
		t.Errorf("finish_reason %q, want tool_calls", finish)
	}
}

// TestRustFrontendModels: the Rust frontend's /v1/models card is owned by
// vllm-frontend-rs and carries no max_model_len, root or permission.
func TestRustFrontendModels(t *testing.T) {
	base, _ := simtest.Start(t, rustConfig())
	var out struct {
		Data []map[string]any `json:"data"`
	}
	getJSON(t, base+"/v1/models", &out)
	if len(out.Data) != 1 {
		t.Fatalf("%d cards, want 1", len(out.Data))
	}
	card := out.Data[0]
	if card["owned_by"] != "vllm-frontend-rs" || card["id"] != "llmprobe-sim" {
		t.Errorf("card %v, want id llmprobe-sim owned by vllm-frontend-rs", card)
	}
	for _, k := range []string{"max_model_len", "root", "parent", "permission"} {
		if _, ok := card[k]; ok {
			t.Errorf("card has %s: %v", k, card)
		}
	}
}
