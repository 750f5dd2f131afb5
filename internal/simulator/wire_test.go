package simulator_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// object is one decoded JSON object: its keys in wire order and raw values.
type object struct {
	keys []string
	raw  map[string]json.RawMessage
}

func decodeObject(t *testing.T, data []byte) object {
	t.Helper()
	o := object{raw: map[string]json.RawMessage{}}
	if err := json.Unmarshal(data, &o.raw); err != nil {
		t.Fatalf("not a JSON object: %s: %v", data, err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.Token() // {
	for d.More() {
		k, _ := d.Token()
		o.keys = append(o.keys, k.(string))
		var skip json.RawMessage
		d.Decode(&skip)
	}
	return o
}

// check requires exactly the keys want, in order, and null values for the
// keys in nulls.
func (o object) check(t *testing.T, what string, want []string, nulls ...string) {
	t.Helper()
	if !slices.Equal(o.keys, want) {
		t.Errorf("%s: keys %v, want %v", what, o.keys, want)
	}
	for _, k := range nulls {
		if v, ok := o.raw[k]; ok && string(v) != "null" {
			t.Errorf("%s: %s = %s, want null", what, k, v)
		}
	}
}

func (o object) child(t *testing.T, key string) object {
	t.Helper()
	return decodeObject(t, o.raw[key])
}

func (o object) firstChoice(t *testing.T) object {
	t.Helper()
	var choices []json.RawMessage
	if err := json.Unmarshal(o.raw["choices"], &choices); err != nil || len(choices) != 1 {
		t.Fatalf("choices %s", o.raw["choices"])
	}
	return decodeObject(t, choices[0])
}

// TestStreamingWireFields pins which fields each event carries and which are
// null, as vLLM 0.11 serialises them: completions chunks are dumped in full
// (exclude_unset=False), chat chunks only with the fields set
// (exclude_unset=True), usage chunks without None fields.
func TestStreamingWireFields(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	var tok struct{ Tokens []int }
	postJSON(t, base+"/tokenize", map[string]any{"prompt": "one two three"}, 200, &tok)
	wantIDs, _ := json.Marshal(tok.Tokens)
	top := []string{"id", "object", "created", "model", "choices"}
	usageKeys := []string{"prompt_tokens", "total_tokens", "completion_tokens"}
	msgs := []any{map[string]any{"role": "user", "content": "one two three"}}
	tests := []struct {
		name       string
		path       string
		body       map[string]any
		continuous bool
	}{
		{name: "completions", path: "/v1/completions", body: map[string]any{"prompt": "one two three"}},
		{name: "completions continuous usage", path: "/v1/completions", continuous: true, body: map[string]any{"prompt": "one two three"}},
		{name: "chat", path: "/v1/chat/completions", body: map[string]any{"messages": msgs}},
		{name: "chat continuous usage", path: "/v1/chat/completions", continuous: true, body: map[string]any{"messages": msgs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := strings.Contains(tt.path, "chat")
			tt.body["max_tokens"], tt.body["ignore_eos"], tt.body["stream"] = 4, true, true
			tt.body["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": tt.continuous}
			s := readSSE(t, post(t, base+tt.path, tt.body))
			if !s.done || len(s.events) < 2 {
				t.Fatalf("%d events, done %v", len(s.events), s.done)
			}
			last := len(s.events) - 1
			for i, e := range s.events[:last] {
				o := decodeObject(t, []byte(e))
				ch := o.firstChoice(t)
				finishing := string(ch.raw["finish_reason"]) != "null"
				what := "event " + itoa(i) + " " + e
				switch {
				case !chat:
					keys := append(slices.Clone(top), "usage")
					o.check(t, what, keys)
					if tt.continuous {
						o.child(t, "usage").check(t, what+" usage", append(slices.Clone(usageKeys), "prompt_tokens_details"), "prompt_tokens_details")
					} else if string(o.raw["usage"]) != "null" {
						t.Errorf("%s: usage %s, want null", what, o.raw["usage"])
					}
					ch.check(t, what+" choice", []string{"index", "text", "logprobs", "finish_reason", "stop_reason", "prompt_token_ids", "token_ids"},
						"logprobs", "stop_reason", "token_ids")
					// vLLM 0.10.2-0.11.0 put the prompt's ids in the first chunk.
					if want := map[bool]string{true: string(wantIDs), false: "null"}[i == 0]; string(ch.raw["prompt_token_ids"]) != want {
						t.Errorf("%s: prompt_token_ids %s, want %s", what, ch.raw["prompt_token_ids"], want)
					}
				case i == 0: // the role chunk
					keys := slices.Clone(top)
					if tt.continuous {
						keys = append(keys, "usage")
					}
					o.check(t, what, append(keys, "prompt_token_ids"), "prompt_token_ids")
					ch.check(t, what+" choice", []string{"index", "delta", "logprobs", "finish_reason"}, "logprobs", "finish_reason")
					ch.child(t, "delta").check(t, what+" delta", []string{"role", "content"})
				default:
					keys := slices.Clone(top)
					if tt.continuous {
						keys = append(keys, "usage")
						o.child(t, "usage").check(t, what+" usage", usageKeys)
					}
					o.check(t, what, keys)
					want := []string{"index", "delta", "logprobs", "finish_reason", "token_ids"}
					if finishing {
						want = []string{"index", "delta", "logprobs", "finish_reason", "stop_reason", "token_ids"}
					}
					ch.check(t, what+" choice", want, "logprobs", "stop_reason", "token_ids")
					ch.child(t, "delta").check(t, what+" delta", []string{"content"})
				}
				if finishing != (i == last-1) {
					t.Errorf("%s: finish_reason on event %d of %d", what, i, last)
				}
			}
			u := decodeObject(t, []byte(s.events[last]))
			u.check(t, "usage chunk", append(slices.Clone(top), "usage"))
			if string(u.raw["choices"]) != "[]" {
				t.Errorf("usage chunk choices %s", u.raw["choices"])
			}
			u.child(t, "usage").check(t, "usage chunk usage", usageKeys)
		})
	}
}

// TestNonStreamingWireFields pins the fields of non-streaming answers, which
// vLLM writes with model_dump(): every field, unset ones as null.
func TestNonStreamingWireFields(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	usageKeys := []string{"prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details"}
	t.Run("completions", func(t *testing.T) {
		resp := post(t, base+"/v1/completions", map[string]any{"prompt": "a b", "max_tokens": 3, "ignore_eos": true})
		o := decodeObject(t, readAll(t, resp))
		o.check(t, "response", []string{"id", "object", "created", "model", "choices", "service_tier", "system_fingerprint", "usage", "kv_transfer_params"},
			"service_tier", "system_fingerprint", "kv_transfer_params")
		o.firstChoice(t).check(t, "choice", []string{"index", "text", "logprobs", "finish_reason", "stop_reason", "token_ids", "prompt_logprobs", "prompt_token_ids"},
			"logprobs", "stop_reason", "token_ids", "prompt_logprobs", "prompt_token_ids")
		o.child(t, "usage").check(t, "usage", usageKeys, "prompt_tokens_details")
	})
	t.Run("chat", func(t *testing.T) {
		resp := post(t, base+"/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "a b"}},
			"max_tokens": 3, "ignore_eos": true})
		o := decodeObject(t, readAll(t, resp))
		o.check(t, "response", []string{"id", "object", "created", "model", "choices", "service_tier", "system_fingerprint", "usage",
			"prompt_logprobs", "prompt_token_ids", "kv_transfer_params"},
			"service_tier", "system_fingerprint", "prompt_logprobs", "prompt_token_ids", "kv_transfer_params")
		ch := o.firstChoice(t)
		ch.check(t, "choice", []string{"index", "message", "logprobs", "finish_reason", "stop_reason", "token_ids"}, "logprobs", "stop_reason", "token_ids")
		msg := ch.child(t, "message")
		msg.check(t, "message", []string{"role", "content", "refusal", "annotations", "audio", "function_call", "tool_calls", "reasoning_content"},
			"refusal", "annotations", "audio", "function_call", "reasoning_content")
		if string(msg.raw["tool_calls"]) != "[]" {
			t.Errorf("tool_calls %s, want []", msg.raw["tool_calls"])
		}
		o.child(t, "usage").check(t, "usage", usageKeys, "prompt_tokens_details")
	})
}
