package simulator_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// msgSSE reads a named-event stream: the event names, their data, and
// whether [DONE] ended it; each event's JSON type must repeat its name.
func msgSSE(t *testing.T, resp *http.Response) (names []string, data []map[string]any, done bool) {
	t.Helper()
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case line == "data: [DONE]":
			done = true
		case strings.HasPrefix(line, "data: "):
			var v map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v); err != nil {
				t.Fatalf("event %s: %v", name, err)
			}
			if v["type"] != name {
				t.Errorf("event %s has type %v", name, v["type"])
			}
			names, data = append(names, name), append(data, v)
			name = ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return names, data, done
}

// TestMessagesStream: /v1/messages streams vLLM's event sequence for a
// reasoning model answering with text: message_start (input tokens), ping,
// a thinking block closed after its signature, a text block, message_delta
// (max_tokens, output tokens), message_stop, then [DONE].
func TestMessagesStream(t *testing.T) {
	cfg := fastConfig()
	cfg.ReasoningTokens = 3
	base, _ := simtest.Start(t, cfg)
	resp := post(t, base+"/v1/messages", map[string]any{"max_tokens": 8, "ignore_eos": true, "stream": true, "system": "be brief",
		"messages": []map[string]any{{"role": "user", "content": "hello"}}}, "anthropic-version", "2023-06-01")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	names, data, done := msgSSE(t, resp)
	var seq []string
	thinking, text := 0, 0
	for i, n := range names {
		if n == "content_block_delta" {
			d := data[i]["delta"].(map[string]any)
			switch d["type"] {
			case "thinking_delta":
				thinking++
			case "text_delta":
				text++
			}
			if len(seq) > 0 && seq[len(seq)-1] == "delta" {
				continue
			}
			n = "delta"
		}
		seq = append(seq, n)
	}
	want := "message_start ping content_block_start delta content_block_stop content_block_start delta content_block_stop message_delta message_stop"
	if got := strings.Join(seq, " "); got != want || !done || thinking == 0 || text == 0 {
		t.Fatalf("events %s (done %v, %d thinking and %d text deltas), want %s", got, done, thinking, text, want)
	}
	start := data[0]["message"].(map[string]any)
	if u := start["usage"].(map[string]any); u["input_tokens"].(float64) <= 0 || !strings.HasPrefix(start["id"].(string), "msg_") {
		t.Errorf("message_start %v", start)
	}
	md := data[len(data)-2]
	if md["delta"].(map[string]any)["stop_reason"] != "max_tokens" || md["usage"].(map[string]any)["output_tokens"].(float64) != 8 {
		t.Errorf("message_delta %v", md)
	}
}

// TestMessagesStreamSGLang: the SGLang persona streams SGLang's converted
// sequence: message_start with input_tokens 0, no ping, one text block,
// message_delta with input, output and cache-read tokens and no
// stop_sequence, message_stop, and no [DONE]. (The persona has no
// reasoning, whose chat deltas SGLang would not convert.)
func TestMessagesStreamSGLang(t *testing.T) {
	data := personaMessages(t, simulator.EngineSGLang, func(n string, ev map[string]any) {
		if n == "content_block_delta" {
			if typ := ev["delta"].(map[string]any)["type"]; typ != "text_delta" {
				t.Errorf("delta of type %v: SGLang streams text and tool input only", typ)
			}
		}
	})
	start := data[0]["message"].(map[string]any)
	if _, ok := start["stop_reason"]; ok || start["usage"].(map[string]any)["input_tokens"].(float64) != 0 {
		t.Errorf("message_start %v: want input_tokens 0 and no null fields", start)
	}
	md := data[len(data)-2]
	delta, usage := md["delta"].(map[string]any), md["usage"].(map[string]any)
	if _, ok := delta["stop_sequence"]; ok || delta["stop_reason"] != "max_tokens" || usage["output_tokens"].(float64) != 8 ||
		usage["input_tokens"].(float64) <= 0 || usage["cache_read_input_tokens"] == nil {
		t.Errorf("message_delta %v", md)
	}
}

// TestMessagesStreamOllama: the Ollama persona streams Ollama's converted
// sequence: message_start with the prompt's input tokens, no ping, one
// text block, message_delta with input and output tokens and no
// stop_sequence, message_stop, no [DONE], and no null field anywhere.
func TestMessagesStreamOllama(t *testing.T) {
	data := personaMessages(t, simulator.EngineOllama, func(n string, ev map[string]any) {
		for k, v := range ev {
			if v == nil {
				t.Errorf("event %s has a null %s", n, k)
			}
		}
	})
	start := data[0]["message"].(map[string]any)
	if _, ok := start["stop_reason"]; ok || start["usage"].(map[string]any)["input_tokens"].(float64) <= 0 {
		t.Errorf("message_start %v: want input_tokens > 0 and no stop_reason", start)
	}
	md := data[len(data)-2]
	if delta := md["delta"].(map[string]any); len(delta) != 1 || delta["stop_reason"] != "max_tokens" ||
		md["usage"].(map[string]any)["output_tokens"].(float64) != 8 {
		t.Errorf("message_delta %v", md)
	}
}

// TestMessagesErrors: the Messages API's errors are in Anthropic's shape
// {"type": "error", "error": {"type", "message"}}: max_tokens is required,
// roles are user and assistant, an unknown model is a 404.
func TestMessagesErrors(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	for _, tt := range []struct {
		name   string
		body   map[string]any
		status int
		msg    string
	}{
		{"no max_tokens", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}}, 400, "max_tokens: Field required"},
		{"system role", map[string]any{"max_tokens": 4, "messages": []map[string]any{{"role": "system", "content": "hi"}}}, 400,
			`messages[0].role must be user or assistant, got "system"`},
		{"unknown model", map[string]any{"model": "nope", "max_tokens": 4, "messages": []map[string]any{{"role": "user", "content": "hi"}}}, 404,
			"The model `nope` does not exist."},
		{"tool_choice none", map[string]any{"max_tokens": 4, "messages": []map[string]any{{"role": "user", "content": "hi"}},
			"tools": []map[string]any{{"name": "f", "input_schema": map[string]any{"type": "object"}}}, "tool_choice": map[string]any{"type": "none"}}, 400,
			`tool_choice.type must be auto, any or tool, got "none"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			postJSON(t, base+"/v1/messages", tt.body, tt.status, &e)
			if e.Type != "error" || e.Error.Type == "" || e.Error.Message != tt.msg {
				t.Errorf("error %+v, want message %q", e, tt.msg)
			}
		})
	}
}

// TestMessagesNotStreamed: a non-streamed answer is one message with its
// content blocks, stop_reason and usage; with a tool, one tool_use block
// whose input is the arguments.
func TestMessagesNotStreamed(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	var m struct {
		Type    string `json:"type"`
		Content []struct {
			Type  string         `json:"type"`
			Text  string         `json:"text"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	postJSON(t, base+"/v1/messages", map[string]any{"max_tokens": 6, "ignore_eos": true,
		"messages": []map[string]any{{"role": "user", "content": "hi"}}}, 200, &m)
	if m.Type != "message" || len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text == "" ||
		m.StopReason != "max_tokens" || m.Usage.OutputTokens != 6 || m.Usage.InputTokens <= 0 {
		t.Errorf("message %+v", m)
	}
	postJSON(t, base+"/v1/messages", map[string]any{"max_tokens": 64, "messages": []map[string]any{{"role": "user", "content": "hi"}},
		"tools": []map[string]any{{"name": "get_weather", "input_schema": map[string]any{"type": "object", "required": []string{"city"},
			"properties": map[string]any{"city": map[string]any{"type": "string"}}}}}, "tool_choice": map[string]any{"type": "any"}}, 200, &m)
	if len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].Name != "get_weather" || m.Content[0].Input["city"] == nil ||
		m.StopReason != "tool_use" {
		t.Errorf("tool use %+v", m)
	}
}

// personaMessages streams a Messages API request of 8 tokens from a
// simulator of engine, checks each event with check, and requires the
// converted sequence of SGLang and Ollama: message_start, one text block
// (its deltas as one), message_delta, message_stop and no [DONE]. It
// returns the events' data.
func personaMessages(t *testing.T, engine string, check func(name string, ev map[string]any)) []map[string]any {
	t.Helper()
	cfg := fastConfig()
	cfg.Engine = engine
	base, _ := simtest.Start(t, cfg)
	resp := post(t, base+"/v1/messages", map[string]any{"max_tokens": 8, "ignore_eos": true, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": "hello"}}}, "anthropic-version", "2023-06-01")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	names, data, done := msgSSE(t, resp)
	var seq []string
	for i, n := range names {
		check(n, data[i])
		if n == "content_block_delta" {
			if len(seq) > 0 && seq[len(seq)-1] == "delta" {
				continue
			}
			n = "delta"
		}
		seq = append(seq, n)
	}
	want := "message_start content_block_start delta content_block_stop message_delta message_stop"
	if got := strings.Join(seq, " "); got != want || done {
		t.Fatalf("events %s (done %v), want %s and no [DONE]", got, done, want)
	}
	return data
}
