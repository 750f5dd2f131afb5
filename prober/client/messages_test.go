package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// msgView is the comparable view of a msgEvent.
type msgView struct {
	Kind                           msgKind
	Index                          int
	Tool                           bool
	Name, Delta, Stop, ErrType     string
	ErrMsg, ID, Model              string
	DKind                          deltaKind
	HasInput, HasOutput, HasCached bool
	Input, Output, Cached          int
}

func viewMsg(e *msgEvent) msgView {
	return msgView{Kind: e.kind, Index: e.index, Tool: e.toolBlock, Name: rawString(e.name, e.nameEsc),
		Delta: rawString(e.delta, e.deltaEsc), Stop: rawString(e.stop, e.stopEsc), ErrType: string(e.errType),
		ErrMsg: rawString(e.errMsg, e.errEsc), ID: rawString(e.id, e.idEsc), Model: rawString(e.model, e.modelEsc),
		DKind: e.dkind, HasInput: e.hasInput, HasOutput: e.hasOutput, HasCached: e.hasCached,
		Input: e.input, Output: e.output, Cached: e.cached}
}

// The events are vLLM's (vllm/entrypoints/anthropic/serving.py,
// model_dump_json(exclude_unset=True)) and Anthropic's documented ones.
func TestDecodeMsgEvent(t *testing.T) {
	tests := []struct {
		name, data string
		want       msgView
		wantErr    bool
	}{
		{name: "message_start", data: `{"type":"message_start","message":{"id":"chatcmpl-1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":0,"cache_read_input_tokens":4}}}`,
			want: msgView{Kind: msgStart, ID: "chatcmpl-1", Model: "m", HasInput: true, Input: 12, HasOutput: true, HasCached: true, Cached: 4}},
		{name: "text block start", data: `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			want: msgView{Kind: msgBlockStart}},
		{name: "tool_use block start", data: `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"get_\u0077eather","input":{}}}`,
			want: msgView{Kind: msgBlockStart, Index: 2, Tool: true, Name: "get_weather"}},
		{name: "text delta", data: `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" Paris\n"}}`,
			want: msgView{Kind: msgDelta, Index: 1, DKind: deltaText, Delta: " Paris\n"}},
		{name: "type after delta", data: `{"delta":{"text":"x","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
			want: msgView{Kind: msgDelta, DKind: deltaText, Delta: "x"}},
		{name: "thinking delta", data: `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" hm"}}`,
			want: msgView{Kind: msgDelta, DKind: deltaThinking, Delta: " hm"}},
		{name: "input json delta", data: `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
			want: msgView{Kind: msgDelta, Index: 1, DKind: deltaToolArgs, Delta: `{"city":`}},
		{name: "signature delta carries no token", data: `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}`,
			want: msgView{Kind: msgDelta, DKind: deltaOther}},
		{name: "message_delta", data: `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":12,"output_tokens":40}}`,
			want: msgView{Kind: msgMessageDelta, Stop: "max_tokens", HasInput: true, Input: 12, HasOutput: true, Output: 40}},
		{name: "message_stop", data: `{"type":"message_stop"}`, want: msgView{Kind: msgStop}},
		{name: "ping", data: `{"type": "ping"}`, want: msgView{Kind: msgOther}},
		{name: "block stop", data: `{"type":"content_block_stop","index":3}`, want: msgView{Kind: msgOther, Index: 3}},
		{name: "error", data: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			want: msgView{Kind: msgError, ErrType: "overloaded_error", ErrMsg: "Overloaded"}},
		{name: "unknown event type", data: `{"type":"future_event","x":[1,{"y":2}]}`, want: msgView{Kind: msgOther}},
		{name: "truncated", data: `{"type":"content_block_delta","delta":{"type":"text_delta","text":"`, wantErr: true},
		{name: "usage not an object", data: `{"type":"message_delta","usage":3}`, wantErr: true},
		{name: "fractional token count", data: `{"type":"message_delta","usage":{"output_tokens":1.5}}`, wantErr: true},
		{name: "trailing data", data: `{"type":"ping"} x`, wantErr: true},
		{name: "not an object", data: `[1]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecode(t, tt.data, decodeMsgEvent, viewMsg, tt.want, tt.wantErr)
		})
	}
}

// TestMessagesOverSimulator measures the Messages API against the
// simulator's /v1/messages (its reasoning persona and tool calls), over
// loopback HTTP: reasoning, tool use, the faults, not streamed.
func TestMessagesOverSimulator(t *testing.T) {
	const reasoning, maxTokens = 16, 40
	tests := []struct {
		name      string
		faults    simulator.Faults
		noThink   bool
		req       Request
		wantClass prober.ErrorClass
		wantMsg   string
		check     func(t *testing.T, rec prober.Record)
	}{
		{
			name: "reasoning then answer",
			check: func(t *testing.T, rec prober.Record) {
				// The Messages API's usage has no reasoning split: reasoning
				// tokens are counted, one per thinking delta (as chat's
				// without reasoning_tokens), a delta may carry several.
				if rec.ReasoningTokens <= 0 || rec.ReasoningTokens > reasoning || !rec.ReasoningTokensCounted ||
					rec.CompletionTokens != maxTokens || rec.TokensCounted ||
					rec.PromptTokens <= 0 {
					t.Errorf("reasoning %d (counted %v), completion %d (counted %v), prompt %d", rec.ReasoningTokens,
						rec.ReasoningTokensCounted, rec.CompletionTokens, rec.TokensCounted, rec.PromptTokens)
				}
				if rec.TTFR != rec.TTFT || rec.TTFTText < rec.TTFR || rec.ThinkingTime != rec.TTFTText-rec.TTFR {
					t.Errorf("TTFT %v, TTFR %v, TTFTText %v, thinking %v", rec.TTFT, rec.TTFR, rec.TTFTText, rec.ThinkingTime)
				}
				if rec.Events < 2 || len(rec.ITL) != rec.Events-1 || rec.E2E != rec.TTFT+sum(rec.ITL) || rec.Done < rec.E2E {
					t.Errorf("events %d, ITL %d, E2E %v, done %v", rec.Events, len(rec.ITL), rec.E2E, rec.Done)
				}
				if rec.FinishReason != "length" || !strings.HasPrefix(rec.ResponseID, "msg_") {
					t.Errorf("finish %q, response id %q", rec.FinishReason, rec.ResponseID)
				}
			},
		},
		{
			name: "system prompt and answer", noThink: true,
			req: Request{Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "what is the weather in Paris?"}}},
			check: func(t *testing.T, rec prober.Record) {
				if rec.Reasoned() || rec.TTFTText != rec.TTFT || rec.CompletionTokens != maxTokens {
					t.Errorf("reasoning %d, TTFT %v, TTFTText %v, completion %d", rec.ReasoningTokens, rec.TTFT, rec.TTFTText, rec.CompletionTokens)
				}
			},
		},
		{
			name:  "tool use",
			req:   Request{Tools: []Tool{weatherTool}, ToolChoice: "auto"},
			check: checkToolAfterThinking,
		},
		{
			name: "tool named", req: Request{Tools: []Tool{{Name: "other"}, weatherTool}, ToolChoice: "get_weather"},
			check: func(t *testing.T, rec prober.Record) {
				if rec.ToolCalls != 1 || rec.FinishReason != "tool_calls" {
					t.Errorf("tool calls %d, finish %q", rec.ToolCalls, rec.FinishReason)
				}
			},
		},
		{
			name: "tool required", req: Request{Tools: []Tool{weatherTool}, ToolChoice: "required"},
			check: func(t *testing.T, rec prober.Record) {
				if rec.ToolCalls != 1 {
					t.Errorf("tool calls %d", rec.ToolCalls)
				}
			},
		},
		{
			name: "tool choice none sends no tools", req: Request{Tools: []Tool{weatherTool}, ToolChoice: "none"},
			check: func(t *testing.T, rec prober.Record) {
				if rec.ToolCalls != 0 || rec.FinishReason != "length" || rec.TTFTText <= 0 {
					t.Errorf("tool calls %d, finish %q, TTFTText %v", rec.ToolCalls, rec.FinishReason, rec.TTFTText)
				}
			},
		},
		{
			name: "broken tool call", faults: simulator.Faults{BrokenToolCall: 1}, req: Request{Tools: []Tool{weatherTool}},
			wantClass: prober.ClassInvalidResponse, wantMsg: "tool call 0 (get_weather): arguments are not JSON",
		},
		{
			name: "error event", faults: simulator.Faults{ErrorEvent: 1},
			wantClass: prober.ClassStream, wantMsg: "server error event internal_error: simulated fault: error during generation",
		},
		{
			name: "cut stream", faults: simulator.Faults{CutStream: 1},
			wantClass: prober.ClassStream, wantMsg: "stream ended before message_stop",
		},
		{
			name: "malformed event", faults: simulator.Faults{MalformedEvent: 1},
			wantClass: prober.ClassStream, wantMsg: "malformed event",
		},
		{
			name: "empty answer", faults: simulator.Faults{EmptyAnswer: 1},
			wantClass: prober.ClassInvalidResponse, wantMsg: "stream finished without a token event",
		},
		{
			name: "HTTP 429 in Anthropic's error shape", faults: simulator.Faults{HTTP429: 1},
			wantClass: prober.ClassHTTP429, wantMsg: "HTTP 429 Too Many Requests: simulated fault: too many requests",
		},
		{
			name: "not streamed", req: Request{NoStream: true},
			check: func(t *testing.T, rec prober.Record) {
				if rec.CompletionTokens != maxTokens || rec.ReasoningTokens != 0 || rec.E2E <= 0 || rec.TTFT != 0 || !rec.NoStream ||
					rec.FinishReason != "length" || rec.PromptTokens <= 0 {
					t.Errorf("completion %d, reasoning %d, E2E %v, TTFT %v, finish %q, prompt %d", rec.CompletionTokens,
						rec.ReasoningTokens, rec.E2E, rec.TTFT, rec.FinishReason, rec.PromptTokens)
				}
			},
		},
		{
			name: "not streamed tool use", req: Request{NoStream: true, Tools: []Tool{weatherTool}},
			check: func(t *testing.T, rec prober.Record) {
				if rec.ToolCalls != 1 || rec.FinishReason != "tool_calls" {
					t.Errorf("tool calls %d, finish %q", rec.ToolCalls, rec.FinishReason)
				}
			},
		},
		{
			name: "not streamed empty answer", faults: simulator.Faults{EmptyAnswer: 1}, req: Request{NoStream: true},
			wantClass: prober.ClassInvalidResponse, wantMsg: EmptyAnswer,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simtest.Fast()
			if !tt.noThink {
				cfg.ReasoningTokens = reasoning
			}
			cfg.Faults = tt.faults
			url, _ := simtest.Start(t, cfg)
			req := tt.req
			req.ID, req.MaxTokens, req.IgnoreEOS = "sim-m", maxTokens, true
			if req.Messages == nil {
				req.Messages = []Message{{Role: "user", Content: "what is the weather in Paris?"}}
			}
			rec := checkOutcome(t, url, Options{API: APIMessages}, 0, req, tt.wantClass, tt.wantMsg, 0)
			if tt.check != nil {
				tt.check(t, rec)
			}
		})
	}
}

// vllmMessagesStream is a streamed answer as vLLM's message_stream_converter
// writes it (serving.py): named events, then data: [DONE].
const vllmMessagesStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"chatcmpl-9\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":7,\"output_tokens\":0}}}\n\n" +
	"event: content_block_start\ndata: {\"index\":0,\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"index\":0,\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n" +
	"event: content_block_delta\ndata: {\"index\":0,\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n" +
	"event: content_block_stop\ndata: {\"index\":0,\"type\":\"content_block_stop\"}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":7,\"output_tokens\":2}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n" +
	"data: [DONE]\n\n"

// TestMessagesRequest checks what the client sends on the Messages API
// (path, headers, body) and how it reads vLLM's stream, with a handler
// that records the request.
func TestMessagesRequest(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, vllmMessagesStream)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, Options{BaseURL: srv.URL + "/v1", API: APIMessages, Model: "m", APIKey: "sk-secret-1"})
	rec := do(t, context.Background(), c, Request{ID: "r1", Messages: []Message{{Role: "system", Content: "be brief"},
		{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}, {Role: "user", Content: "again"}},
		Tools: []Tool{{Name: "f"}}, ToolChoice: "required"})
	if !rec.OK() {
		t.Fatalf("%s: %s", rec.Error, rec.ErrorMessage)
	}
	if got.URL.Path != "/v1/messages" || got.Header.Get("Anthropic-Version") != "2023-06-01" ||
		got.Header.Get("X-Api-Key") != "sk-secret-1" || got.Header.Get("Authorization") != "Bearer sk-secret-1" {
		t.Errorf("path %s, headers %v", got.URL.Path, got.Header)
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	wantBody := `{"max_tokens":4096,"messages":[{"content":"hi","role":"user"},{"content":"hello","role":"assistant"},{"content":"again","role":"user"}],` +
		`"model":"m","stream":true,"system":"be brief","tool_choice":{"type":"any"},"tools":[{"input_schema":{"type":"object"},"name":"f"}]}`
	if b, _ := json.Marshal(p); string(b) != wantBody {
		t.Errorf("body\n%s\nwant\n%s", b, wantBody)
	}
	if rec.CompletionTokens != 2 || rec.TokensCounted || rec.PromptTokens != 7 || rec.Events != 2 || len(rec.ITL) != 1 ||
		rec.FinishReason != "stop" || rec.ResponseID != "chatcmpl-9" || rec.ResponseModel != "m" || rec.Done < rec.E2E {
		t.Errorf("record %+v", rec)
	}
}

// TestMessagesHTTPError: Anthropic's error body is read like the others,
// and the key sent as x-api-key never reaches the message.
func TestMessagesHTTPError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+r.Header.Get("X-Api-Key")+`"}}`)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, Options{BaseURL: srv.URL, API: APIMessages, APIKey: "sk-secret-2"})
	rec := do(t, context.Background(), c, Request{ID: "r1", Prompt: "hi", MaxTokens: 8})
	if rec.Error != prober.ClassHTTP4xx || rec.ErrorMessage != "HTTP 401 Unauthorized: invalid x-api-key <secret>" {
		t.Errorf("class %s, message %q", rec.Error, rec.ErrorMessage)
	}
}

// TestMessagesSameFiguresAsChat: the same simulated stream measured over
// chat and over the Messages API gives the same token counts, and TTFT and
// TPOT within the simulator's timing noise (an engine step is 20ms here;
// the medians of 3 requests are compared). Chat's role chunk is one more
// token event than the Messages API has (it counts for TTFT, vLLM's rule;
// message_start does not), so chat has one more event.
func TestMessagesSameFiguresAsChat(t *testing.T) {
	const maxTokens = 24
	step := 20 * time.Millisecond
	cfg := simtest.Fast()
	cfg.StepBase = step
	cfg.ReasoningTokens = 8
	cfg.TraceFile = filepath.Join(t.TempDir(), "trace.jsonl")
	url, _ := simtest.Start(t, cfg)
	var recs []prober.Record
	measure := func(api string) (ttft, tpot time.Duration, rec prober.Record) {
		c := newClient(t, Options{BaseURL: url, API: api})
		var ttfts, tpots []time.Duration
		for i := range 3 {
			rec = do(t, context.Background(), c, Request{ID: api + string(rune('a'+i)), MaxTokens: maxTokens, IgnoreEOS: true,
				Messages: []Message{{Role: "user", Content: "what is the weather in Paris?"}}})
			if !rec.OK() {
				t.Fatalf("%s: %s %s", api, rec.Error, rec.ErrorMessage)
			}
			recs = append(recs, rec)
			tp, _ := rec.TPOT()
			ttfts, tpots = append(ttfts, rec.TTFT), append(tpots, tp)
		}
		slices.Sort(ttfts)
		slices.Sort(tpots)
		return ttfts[1], tpots[1], rec
	}
	chatTTFT, chatTPOT, chat := measure(APIChat)
	msgTTFT, msgTPOT, msg := measure(APIMessages)
	// The simulator's trace holds the token-bearing events it sent each
	// request. One that falls behind on a busy host sends the tokens of
	// late steps together (so a stream can only lose events): the client
	// must count what was sent, and each API's framing (chat's role chunk,
	// the Messages API's reasoning counted from thinking events) is
	// compared on the streams sent a token per event.
	truth := simTrace(t, cfg.TraceFile, len(recs))
	whole := map[string]int{} // each API's streams sent a token per event
	for _, rec := range recs {
		sent, api := len(truth[rec.RequestID].EventsNS), strings.TrimRight(rec.RequestID, "abc")
		if rec.Events != sent {
			t.Errorf("%s: the client counted %d token events, the simulator sent %d", rec.RequestID, rec.Events, sent)
		}
		tokenEvents := maxTokens // the Messages API: one event per token
		if api == APIChat {
			tokenEvents++ // chat: and the role chunk
		}
		switch {
		case sent == tokenEvents:
			whole[api]++
			if api == APIMessages && rec.ReasoningTokens != cfg.ReasoningTokens {
				t.Errorf("%s: %d reasoning tokens counted from a stream of one token per event, want %d", rec.RequestID, rec.ReasoningTokens, cfg.ReasoningTokens)
			}
		case sent > tokenEvents:
			t.Errorf("%s: %d token events for %d tokens", rec.RequestID, sent, maxTokens)
		}
	}
	t.Logf("streams sent a token per event: %v", whole)
	if chat.CompletionTokens != maxTokens || msg.CompletionTokens != chat.CompletionTokens || msg.PromptTokens != chat.PromptTokens ||
		chat.ReasoningTokens != cfg.ReasoningTokens || msg.ReasoningTokens > chat.ReasoningTokens ||
		msg.TokensCounted || chat.TokensCounted || msg.FinishReason != chat.FinishReason {
		t.Errorf("chat: completion %d, prompt %d, reasoning %d, finish %q; messages: completion %d, prompt %d, reasoning %d, finish %q",
			chat.CompletionTokens, chat.PromptTokens, chat.ReasoningTokens, chat.FinishReason,
			msg.CompletionTokens, msg.PromptTokens, msg.ReasoningTokens, msg.FinishReason)
	}
	// Timing is compared where the simulator kept its schedule: every
	// stream of both APIs sent a token per event. A busy host delays its
	// steps (and merges their events) differently on each request.
	if whole[APIChat] == 3 && whole[APIMessages] == 3 {
		if d := (msgTTFT - chatTTFT).Abs(); d > step {
			t.Errorf("TTFT: chat %v, messages %v (%v apart, more than a step)", chatTTFT, msgTTFT, d)
		}
		if d := (msgTPOT - chatTPOT).Abs(); d > step/4 {
			t.Errorf("TPOT: chat %v, messages %v (%v apart)", chatTPOT, msgTPOT, d)
		}
		if d := (msg.ThinkingTime - chat.ThinkingTime).Abs(); d > 2*step {
			t.Errorf("thinking time: chat %v, messages %v", chat.ThinkingTime, msg.ThinkingTime)
		}
	} else {
		t.Logf("timing not compared: the simulator fell behind on this host (streams merged)")
	}
	t.Logf("median TTFT chat %v messages %v; median TPOT chat %v messages %v", chatTTFT, msgTTFT, chatTPOT, msgTPOT)
}
