package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// refChunk is the comparable view of a chunk.
type refChunk struct {
	Choices                  int
	HasText, HasRole         bool
	HasFinish                bool
	Finish                   string
	HasUsage                 bool
	HasPrompt, HasCompletion bool
	Prompt, Completion       int
	HasCached                bool
	Cached                   int
	HasReasoning             bool
	ToolCalls                string // the raw tool_calls array, compacted
	HasReasonTokens          bool
	ReasonTokens             int
	HasDraft, HasDraftAcc    bool
	Draft, DraftAcc          int
	HasSrvQueue, HasSrvTTFT  bool
	HasSrvGen                bool
	SrvQueue, SrvTTFT        float64
	SrvGen                   float64
	IsError                  bool
	ErrMsg                   string
}

func viewChunk(c *chunk) refChunk {
	r := refChunk{
		Choices: c.choices, HasText: c.hasText, HasRole: c.hasRole, HasFinish: c.hasFinish,
		HasUsage: c.hasUsage, HasPrompt: c.hasPrompt, HasCompletion: c.hasCompletion,
		Prompt: c.promptTokens, Completion: c.completionTokens, IsError: c.isError,
		HasCached: c.hasCached, Cached: c.cachedTokens,
		HasReasoning: c.hasReasoning, HasReasonTokens: c.hasReasonTokens, ReasonTokens: c.reasonTokens,
		HasDraft: c.hasDraft, Draft: c.draftTokens, HasDraftAcc: c.hasDraftAccepted, DraftAcc: c.draftAccepted,
		HasSrvQueue: c.hasSrvQueue, HasSrvTTFT: c.hasSrvTTFT, HasSrvGen: c.hasSrvGen,
	}
	if c.hasSrvQueue {
		r.SrvQueue = c.srvQueue
	}
	if c.hasSrvTTFT {
		r.SrvTTFT = c.srvTTFT
	}
	if c.hasSrvGen {
		r.SrvGen = c.srvGen
	}
	// A figure not known (its has flag false) is read by no one: its
	// leftover value from an earlier duplicate key is not compared.
	for _, f := range []struct {
		has bool
		v   *int
	}{{c.hasPrompt, &r.Prompt}, {c.hasCompletion, &r.Completion}, {c.hasCached, &r.Cached},
		{c.hasReasonTokens, &r.ReasonTokens}, {c.hasDraft, &r.Draft}, {c.hasDraftAccepted, &r.DraftAcc}} {
		if !f.has {
			*f.v = 0
		}
	}
	if c.toolCalls != nil {
		r.ToolCalls = compact(c.toolCalls)
	}
	if c.hasFinish {
		r.Finish = rawString(c.finish, c.finishEscaped)
	}
	if c.errMsg != nil {
		r.ErrMsg = rawString(c.errMsg, c.errMsgEscaped)
	}
	return r
}

// compact is raw JSON without insignificant space.
func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "invalid: " + err.Error()
	}
	return b.String()
}

// checkDecode holds one decoder table case: decoding data fails with an
// error wrapping errSyntax when wantErr, else its view is want. The chunk,
// Responses and Messages decoders' tables share it.
func checkDecode[E any, V comparable](t *testing.T, data string, decode func([]byte, *E) error, view func(*E) V, want V, wantErr bool) {
	t.Helper()
	var e E
	err := decode([]byte(data), &e)
	if (err != nil) != wantErr {
		t.Fatalf("error = %v, wantErr %v", err, wantErr)
	}
	if err != nil {
		if !errors.Is(err, errSyntax) {
			t.Fatalf("error %v does not wrap errSyntax", err)
		}
		return
	}
	if got := view(&e); got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// refDecode is the oracle: the semantics documented on chunk, implemented
// with encoding/json.
func refDecode(data []byte) (refChunk, error) {
	var r refChunk
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		if !json.Valid(data) {
			return r, errors.New("invalid")
		}
		return r, errors.New("not an object")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return r, err
	}
	isNull := func(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
	first := func(raw json.RawMessage) byte { return bytes.TrimSpace(raw)[0] }
	optString := func(raw json.RawMessage, ok bool) (string, bool, error) {
		if !ok || isNull(raw) {
			return "", false, nil
		}
		if first(raw) != '"' {
			return "", false, errors.New("not a string")
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, true, err
	}
	optInt := func(raw json.RawMessage, ok bool) (int, bool, error) {
		if !ok || isNull(raw) {
			return 0, false, nil
		}
		var n int
		err := json.Unmarshal(raw, &n)
		return n, err == nil, err
	}
	if raw, ok := top["choices"]; ok && !isNull(raw) {
		if first(raw) != '[' {
			return r, errors.New("choices not an array")
		}
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return r, err
		}
		r.Choices = len(arr)
		if len(arr) > 0 {
			if first(arr[0]) != '{' {
				return r, errors.New("choices[0] not an object")
			}
			var ch map[string]json.RawMessage
			if err := json.Unmarshal(arr[0], &ch); err != nil {
				return r, err
			}
			raw, ok := ch["text"]
			text, _, err := optString(raw, ok)
			if err != nil {
				return r, err
			}
			raw, ok = ch["finish_reason"]
			if r.Finish, r.HasFinish, err = optString(raw, ok); err != nil {
				return r, err
			}
			content := ""
			if raw, ok := ch["delta"]; ok && !isNull(raw) {
				if first(raw) != '{' {
					return r, errors.New("delta not an object")
				}
				var delta map[string]json.RawMessage
				if err := json.Unmarshal(raw, &delta); err != nil {
					return r, err
				}
				raw, ok := delta["content"]
				if content, _, err = optString(raw, ok); err != nil {
					return r, err
				}
				raw, ok = delta["role"]
				r.HasRole = ok && !isNull(raw)
				for _, k := range []string{"reasoning_content", "reasoning"} {
					var s string
					if raw, ok := delta[k]; ok && first(raw) == '"' && json.Unmarshal(raw, &s) == nil && s != "" {
						r.HasReasoning = true
					}
				}
				if raw, ok := delta["tool_calls"]; ok && first(raw) == '[' {
					var arr []json.RawMessage
					if json.Unmarshal(raw, &arr) == nil && len(arr) > 0 {
						r.ToolCalls = compact(raw)
					}
				}
			}
			r.HasText = text != "" || content != ""
		}
	}
	if raw, ok := top["usage"]; ok && !isNull(raw) {
		if first(raw) != '{' {
			return r, errors.New("usage not an object")
		}
		var u map[string]json.RawMessage
		if err := json.Unmarshal(raw, &u); err != nil {
			return r, err
		}
		r.HasUsage = true
		var err error
		raw, ok := u["prompt_tokens"]
		if r.Prompt, r.HasPrompt, err = optInt(raw, ok); err != nil {
			return r, err
		}
		raw, ok = u["completion_tokens"]
		if r.Completion, r.HasCompletion, err = optInt(raw, ok); err != nil {
			return r, err
		}
		// detail reads the integer key of the details object name (none
		// when it is absent or no object).
		detail := func(name, key string) (int, bool, error) {
			raw, ok := u[name]
			if !ok || isNull(raw) || first(raw) != '{' {
				return 0, false, nil
			}
			var d map[string]json.RawMessage
			if err := json.Unmarshal(raw, &d); err != nil {
				return 0, false, err
			}
			raw, ok = d[key]
			return optInt(raw, ok)
		}
		if r.Cached, r.HasCached, err = detail("prompt_tokens_details", "cached_tokens"); err != nil {
			return r, err
		}
		if r.ReasonTokens, r.HasReasonTokens, err = detail("completion_tokens_details", "reasoning_tokens"); err != nil {
			return r, err
		}
	}
	if raw, ok := top["timings"]; ok && first(raw) == '{' {
		var tm map[string]json.RawMessage
		if err := json.Unmarshal(raw, &tm); err != nil {
			return r, err
		}
		r.Draft, r.HasDraft = refNonNegative[int](tm, "draft_n")
		r.DraftAcc, r.HasDraftAcc = refNonNegative[int](tm, "draft_n_accepted")
	}
	if raw, ok := top["metrics"]; ok && first(raw) == '{' {
		var sm map[string]json.RawMessage
		if err := json.Unmarshal(raw, &sm); err != nil {
			return r, err
		}
		r.SrvQueue, r.HasSrvQueue = refNonNegative[float64](sm, "queue_time_ms")
		r.SrvTTFT, r.HasSrvTTFT = refNonNegative[float64](sm, "time_to_first_token_ms")
		r.SrvGen, r.HasSrvGen = refNonNegative[float64](sm, "generation_time_ms")
	}
	if raw, ok := top["error"]; ok && !isNull(raw) {
		r.IsError = true
		switch first(raw) {
		case '"':
			_ = json.Unmarshal(raw, &r.ErrMsg)
		case '{':
			var e map[string]json.RawMessage
			if err := json.Unmarshal(raw, &e); err != nil {
				return r, err
			}
			if m, ok := e["message"]; ok && first(m) == '"' {
				_ = json.Unmarshal(m, &r.ErrMsg)
			}
		}
	} else if raw, ok := top["object"]; ok && first(raw) == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		if s == "error" {
			r.IsError = true
			if m, ok := top["message"]; ok && first(m) == '"' {
				_ = json.Unmarshal(m, &r.ErrMsg)
			}
		}
	}
	return r, nil
}

// refNonNegative is refDecode's reading of member key of m (llama.cpp's
// timings, vLLM's metrics): a non-negative T, or false when it is absent,
// null, not a T or negative.
func refNonNegative[T int | float64](m map[string]json.RawMessage, key string) (T, bool) {
	var v T
	raw, ok := m[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" || json.Unmarshal(raw, &v) != nil || v < 0 {
		return 0, false
	}
	return v, true
}

func TestDecodeChunk(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    refChunk
		wantErr bool
	}{
		{
			name: "vllm completion token",
			data: `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`,
			want: refChunk{Choices: 1, HasText: true},
		},
		{
			name: "completion empty text still a token event",
			data: `{"choices":[{"index":0,"text":"","finish_reason":"length"}]}`,
			want: refChunk{Choices: 1, HasFinish: true, Finish: "length"},
		},
		{
			name: "chat role-only first chunk",
			data: `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			want: refChunk{Choices: 1, HasRole: true},
		},
		{
			name: "chat content",
			data: `{"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}`,
			want: refChunk{Choices: 1, HasText: true, HasFinish: true, Finish: "stop"},
		},
		{
			name: "usage chunk",
			data: `{"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":128,"total_tokens":384,"completion_tokens":256,"prompt_tokens_details":null}}`,
			want: refChunk{HasUsage: true, HasPrompt: true, Prompt: 128, HasCompletion: true, Completion: 256},
		},
		{
			name: "usage with cached tokens (llama.cpp, vLLM --enable-prompt-tokens-details)",
			data: `{"choices":[],"usage":{"prompt_tokens":128,"completion_tokens":2,"prompt_tokens_details":{"audio":null,"cached_tokens":96}}}`,
			want: refChunk{HasUsage: true, HasPrompt: true, Prompt: 128, HasCompletion: true, Completion: 2, HasCached: true, Cached: 96},
		},
		{
			name: "llama.cpp timings with speculative decoding",
			data: `{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"usage":{"completion_tokens":8,"prompt_tokens":4},"timings":{"cache_n":0,"prompt_n":4,"prompt_ms":1.25,"predicted_n":8,"predicted_per_second":99.5,"draft_n":12,"draft_n_accepted":7}}`,
			want: refChunk{Choices: 1, HasFinish: true, Finish: "stop", HasUsage: true, HasPrompt: true, Prompt: 4, HasCompletion: true, Completion: 8,
				HasDraft: true, Draft: 12, HasDraftAcc: true, DraftAcc: 7},
		},
		{
			name: "timings without draft figures",
			data: `{"choices":[],"timings":{"prompt_n":4,"predicted_n":8}}`,
			want: refChunk{},
		},
		{
			name: "timings draft figures a string and a float are ignored",
			data: `{"choices":[],"timings":{"draft_n":"12","draft_n_accepted":7.5}}`,
			want: refChunk{},
		},
		{
			name: "timings draft figures negative, exponent, null, nested are ignored",
			data: `{"timings":{"draft_n":-3,"draft_n_accepted":1e2,"x":{"draft_n":5}}}`,
			want: refChunk{},
		},
		{
			name: "timings draft figures nested or null are ignored",
			data: `{"timings":{"draft_n":{"n":5},"draft_n_accepted":null}}`,
			want: refChunk{},
		},
		{
			name: "timings draft figure overflowing is ignored",
			data: `{"timings":{"draft_n":99999999999999999999999,"draft_n_accepted":3}}`,
			want: refChunk{HasDraftAcc: true, DraftAcc: 3},
		},
		{
			name: "timings not an object is ignored",
			data: `{"timings":[{"draft_n":5}],"choices":[]}`,
			want: refChunk{},
		},
		{
			name: "last timings wins",
			data: `{"timings":{"draft_n":5,"draft_n_accepted":4},"timings":{"draft_n":6}}`,
			want: refChunk{HasDraft: true, Draft: 6},
		},
		{
			name: "vLLM per-request metrics on the final usage chunk",
			data: `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":8},"metrics":{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12.3,"mean_itl_ms":9.1,"tokens_per_second":103.2}}`,
			want: refChunk{HasUsage: true, HasPrompt: true, Prompt: 4, HasCompletion: true, Completion: 8,
				HasSrvQueue: true, SrvQueue: 12.3, HasSrvTTFT: true, SrvTTFT: 85.2, HasSrvGen: true, SrvGen: 1240.5},
		},
		{
			name: "metrics with nulls, strings, negatives and out-of-range figures are not known",
			data: `{"choices":[],"metrics":{"time_to_first_token_ms":null,"generation_time_ms":"5","queue_time_ms":-1,"mean_itl_ms":null}}`,
			want: refChunk{},
		},
		{
			name: "metrics overflowing, nested, integer zero",
			data: `{"metrics":{"queue_time_ms":0,"time_to_first_token_ms":1e400,"generation_time_ms":{"v":1},"x":{"queue_time_ms":5}}}`,
			want: refChunk{HasSrvQueue: true},
		},
		{
			name: "metrics not an object is ignored; the last metrics wins",
			data: `{"metrics":{"queue_time_ms":3},"metrics":[1],"choices":[]}`,
			want: refChunk{},
		},
		{
			name:    "metrics with invalid JSON inside is an error",
			data:    `{"metrics":{"queue_time_ms":1.}}`,
			wantErr: true,
		},
		{
			name:    "timings with invalid JSON inside is an error",
			data:    `{"timings":{"draft_n":01}}`,
			wantErr: true,
		},
		{
			name: "prompt_tokens_details not an object",
			data: `{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens_details":[1,{"cached_tokens":3}]}}`,
			want: refChunk{HasUsage: true, HasPrompt: true, Prompt: 1},
		},
		{
			name: "continuous usage on a token chunk",
			data: `{"choices":[{"text":"a"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`,
			want: refChunk{Choices: 1, HasText: true, HasUsage: true, HasPrompt: true, Prompt: 5, HasCompletion: true, Completion: 1},
		},
		{
			name: "multi-choice counts elements",
			data: `{"choices":[{"text":""},{"text":"x"},7]}`,
			want: refChunk{Choices: 3},
		},
		{
			name: "error object",
			data: `{"error":{"message":"boom \"quoted\"","type":"InternalServerError","code":500}}`,
			want: refChunk{IsError: true, ErrMsg: `boom "quoted"`},
		},
		{
			name: "old vllm error form",
			data: `{"object":"error","message":"bad","type":"BadRequestError","code":400}`,
			want: refChunk{IsError: true, ErrMsg: "bad"},
		},
		{
			name: "error string",
			data: `{"error":"oops"}`,
			want: refChunk{IsError: true, ErrMsg: "oops"},
		},
		{
			name: "null error is no error",
			data: `{"error":null,"choices":[{"text":"a"}]}`,
			want: refChunk{Choices: 1, HasText: true},
		},
		{
			name: "escaped key matches",
			data: `{"ch\u006fices":[{"t\u0065xt":"a"}]}`,
			want: refChunk{Choices: 1, HasText: true},
		},
		{
			name: "keys are case sensitive",
			data: `{"Choices":[{"text":"a"}]}`,
		},
		{
			name: "last duplicate key wins",
			data: `{"choices":[{"text":"a"}],"choices":[]}`,
		},
		{
			name: "escaped finish reason",
			data: `{"choices":[{"finish_reason":"st\u006fp"}]}`,
			want: refChunk{Choices: 1, HasFinish: true, Finish: "stop"},
		},
		{
			name: "reasoning_content delta (vLLM's reasoning parsers)",
			data: `{"choices":[{"index":0,"delta":{"reasoning_content":"Let me think"},"logprobs":null,"finish_reason":null}]}`,
			want: refChunk{Choices: 1, HasReasoning: true},
		},
		{
			name: "reasoning delta (the newer spelling)",
			data: `{"choices":[{"index":0,"delta":{"reasoning":"hmm","content":null}}]}`,
			want: refChunk{Choices: 1, HasReasoning: true},
		},
		{
			name: "both spellings, one empty",
			data: `{"choices":[{"delta":{"reasoning":"","reasoning_content":"x"}}]}`,
			want: refChunk{Choices: 1, HasReasoning: true},
		},
		{
			name: "empty or non-string reasoning is no reasoning",
			data: `{"choices":[{"delta":{"reasoning":"","reasoning_content":{"a":[1]},"content":"a"}}]}`,
			want: refChunk{Choices: 1, HasText: true},
		},
		{
			name: "reasoning and content on one delta",
			data: `{"choices":[{"delta":{"reasoning_content":"\u0041","content":"B"}}]}`,
			want: refChunk{Choices: 1, HasText: true, HasReasoning: true},
		},
		{
			name: "tool_calls first fragment",
			data: `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
			want: refChunk{Choices: 1, ToolCalls: `[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]`},
		},
		{
			name: "tool_calls argument fragment",
			data: `{"choices":[{"delta":{"tool_calls":[ {"index":0,"function":{"arguments":"{\"city\": \"Pa"}} ]}}]}`,
			want: refChunk{Choices: 1, ToolCalls: `[{"index":0,"function":{"arguments":"{\"city\": \"Pa"}}]`},
		},
		{
			name: "empty or null tool_calls is none",
			data: `{"choices":[{"delta":{"tool_calls":[ ],"content":""}}]}`,
			want: refChunk{Choices: 1},
		},
		{
			name: "tool_calls finish",
			data: `{"choices":[{"delta":{"tool_calls":null},"finish_reason":"tool_calls"}]}`,
			want: refChunk{Choices: 1, HasFinish: true, Finish: "tool_calls"},
		},
		{
			name: "usage with reasoning tokens",
			data: `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":96,"completion_tokens_details":{"reasoning_tokens":64,"accepted_prediction_tokens":null}}}`,
			want: refChunk{HasUsage: true, HasPrompt: true, Prompt: 10, HasCompletion: true, Completion: 96, HasReasonTokens: true, ReasonTokens: 64},
		},
		{
			name: "completion_tokens_details null",
			data: `{"choices":[],"usage":{"completion_tokens":3,"completion_tokens_details":null}}`,
			want: refChunk{HasUsage: true, HasCompletion: true, Completion: 3},
		},
		{name: "reasoning_tokens not an integer", data: `{"usage":{"completion_tokens_details":{"reasoning_tokens":"5"}}}`, wantErr: true},
		{name: "not an object", data: `[1]`, wantErr: true},
		{name: "empty", data: ``, wantErr: true},
		{name: "truncated", data: `{"choices":[{"text":"a"`, wantErr: true},
		{name: "trailing garbage", data: `{"choices":[]} x`, wantErr: true},
		{name: "choices wrong type", data: `{"choices":{}}`, wantErr: true},
		{name: "choices[0] null", data: `{"choices":[null]}`, wantErr: true},
		{name: "text wrong type", data: `{"choices":[{"text":1}]}`, wantErr: true},
		{name: "usage float", data: `{"usage":{"completion_tokens":1.5}}`, wantErr: true},
		{name: "usage exponent", data: `{"usage":{"completion_tokens":1e2}}`, wantErr: true},
		{name: "control char in string", data: "{\"a\":\"\x01\"}", wantErr: true},
		{name: "bad escape", data: `{"a":"\x"}`, wantErr: true},
		{name: "leading zero", data: `{"a":01}`, wantErr: true},
		{name: "single quotes", data: `{'a':1}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecode(t, tt.data, decodeChunk, viewChunk, tt.want, tt.wantErr)
			if tt.wantErr {
				return
			}
			ref, rerr := refDecode([]byte(tt.data))
			if rerr != nil || ref != tt.want {
				t.Fatalf("oracle disagrees with the table: %+v, %v", ref, rerr)
			}
		})
	}
}

func TestDecodeChunkDepth(t *testing.T) {
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			// The top object is one level; depth-1 nested arrays inside.
			data := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
			var c chunk
			err := decodeChunk([]byte(data), &c)
			if valid := json.Valid([]byte(data)); valid != (err == nil) {
				t.Fatalf("json.Valid = %v, decodeChunk error = %v", valid, err)
			}
		})
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8,"x":[{}]},"prompt_tokens_details":{"cached_tokens":null}}}`,
		`{"error":{"message":"x","code":500}}`,
		`{"object":"error","message":"m"}`,
		`{"a":[1,-2.5e+3,true,false,null,"\u00e9\n",{}]}`,
		`{"choices":[{"delta":{"reasoning_content":"think","reasoning":null}}]}`,
		`{"choices":[{"delta":{"reasoning":"a","content":"b"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\""}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":7}}}`,
		`{"choices":[],"timings":{"prompt_n":3,"predicted_ms":1.5,"draft_n":12,"draft_n_accepted":9}}`,
		`{"timings":{"draft_n":"12","draft_n_accepted":-1,"draft_n":1e1},"timings":{"draft_n_accepted":2.0,"x":{"draft_n":1}}}`,
		`{"choices":[],"usage":{"completion_tokens":3},"metrics":{"time_to_first_token_ms":8.5,"generation_time_ms":20,"queue_time_ms":1.25e1,"mean_itl_ms":null}}`,
		`{"metrics":{"queue_time_ms":-0,"queue_time_ms":"1","time_to_first_token_ms":1e-400,"generation_time_ms":1e309}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c chunk
		err := decodeChunk(data, &c)
		ref, rerr := refDecode(data)
		if (err == nil) != (rerr == nil) {
			// With duplicate keys (RFC 8259: their meaning is
			// unpredictable) the decoder rejects a bad value in an earlier
			// occurrence that the oracle's maps never see, as they keep
			// only the last.
			if err != nil && hasDuplicateKeys(data) {
				return
			}
			t.Fatalf("decodeChunk error %v, oracle error %v", err, rerr)
		}
		if err == nil && rerr == nil {
			if got := viewChunk(&c); got != ref {
				t.Fatalf("got  %+v\nwant %+v", got, ref)
			}
		}
	})
}

// hasDuplicateKeys reports whether some object of the JSON document data
// has a key twice (false for data that is not JSON).
func hasDuplicateKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys  map[string]bool
		isKey bool // the next string token of this object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.keys != nil {
					top.isKey = true // the object is this key's value
				}
				stack = append(stack, &frame{keys: map[string]bool{}, isKey: true})
				continue
			case '[':
				if top != nil && top.keys != nil {
					top.isKey = true
				}
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			if top != nil && top.keys != nil && top.isKey {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.isKey = false
				continue
			}
		}
		if top != nil && top.keys != nil {
			top.isKey = true // a scalar value: the next string is a key
		}
	}
}

// TestDecodeChunkStringBoundaries puts each byte that ends a plain string
// run ('"', '\\', a control character) and a multi-byte rune at every
// position of strings of every length around the 8-byte scan width, and
// holds decodeChunk to the encoding/json oracle.
func TestDecodeChunkStringBoundaries(t *testing.T) {
	for n := range 20 {
		for pos := range n {
			for _, special := range []string{`\"`, `\\`, "\x01", "\x1f", `\u00e9`, "é", " ", "\x7f", `\x`, `\u12`} {
				s := strings.Repeat("a", pos) + special + strings.Repeat("b", n-pos)
				for _, data := range []string{
					`{"choices":[{"text":"` + s + `","finish_reason":"` + s + `"}]}`,
					`{"id":"` + s + `","choices":null}`,
					`{"error":"` + s + `"}`,
					`{"x":"` + s, // unterminated
				} {
					var c chunk
					err := decodeChunk([]byte(data), &c)
					ref, rerr := refDecode([]byte(data))
					if (err == nil) != (rerr == nil) {
						t.Fatalf("%q: decodeChunk error %v, oracle error %v", data, err, rerr)
					}
					if err == nil {
						if got := viewChunk(&c); got != ref {
							t.Fatalf("%q:\ngot  %+v\nwant %+v", data, got, ref)
						}
					}
				}
			}
		}
	}
}

// decodeChunkNoAllocs decodes data into a chunk, failing the test when the
// decoder allocates.
func decodeChunkNoAllocs(t *testing.T, data []byte) chunk {
	t.Helper()
	var c chunk
	if n := testing.AllocsPerRun(100, func() {
		if err := decodeChunk(data, &c); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
	return c
}
