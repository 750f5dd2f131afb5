package client

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// weatherTool has a schema with a required string property.
var weatherTool = Tool{Name: "get_weather", Description: "the weather of a city",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","minLength":3}},"required":["city"]}`)}

// TestReasoningAndToolsOverSimulator measures reasoning, tool calls and the
// Responses API against the simulator's reasoning persona
// (--reasoning-tokens) and its tool calls, over loopback HTTP.
func TestReasoningAndToolsOverSimulator(t *testing.T) {
	const reasoning, maxTokens = 16, 40
	tests := []struct {
		name      string
		api       string
		field     string // --reasoning-field; "" is reasoning_content
		faults    simulator.Faults
		req       Request
		wantClass prober.ErrorClass
		wantMsg   string
		check     func(t *testing.T, rec prober.Record)
	}{
		{
			name: "chat reasoning then answer",
			api:  APIChat,
			check: func(t *testing.T, rec prober.Record) {
				if rec.ReasoningTokens != reasoning || rec.ReasoningTokensCounted || rec.AnswerTokens() != maxTokens-reasoning {
					t.Errorf("reasoning tokens %d (counted %v), answer tokens %d", rec.ReasoningTokens, rec.ReasoningTokensCounted, rec.AnswerTokens())
				}
				// A busy machine may deliver the last reasoning and the first
				// answer tokens in one event: thinking time 0 is then right.
				if rec.TTFR <= 0 || rec.TTFR < rec.TTFT || rec.TTFTText < rec.TTFR || rec.ThinkingTime != rec.TTFTText-rec.TTFR {
					t.Errorf("TTFT %v, TTFR %v, TTFTText %v, thinking %v", rec.TTFT, rec.TTFR, rec.TTFTText, rec.ThinkingTime)
				}
				if rec.FinishReason != "length" || rec.CompletionTokens != maxTokens {
					t.Errorf("finish %q, completion tokens %d", rec.FinishReason, rec.CompletionTokens)
				}
			},
		},
		{
			name: "chat enable_thinking false does not think",
			api:  APIChat,
			req:  Request{Body: []byte(`,"chat_template_kwargs":{"enable_thinking":false}`)},
			check: func(t *testing.T, rec prober.Record) {
				if rec.Reasoned() || rec.ThinkingTime != 0 || rec.AnswerTokens() != maxTokens {
					t.Errorf("reasoning %d, TTFR %v, thinking %v", rec.ReasoningTokens, rec.TTFR, rec.ThinkingTime)
				}
			},
		},
		{
			name: "chat reasoning_effort none does not think",
			api:  APIChat,
			req:  Request{ReasoningEffort: "none"},
			check: func(t *testing.T, rec prober.Record) {
				if rec.Reasoned() {
					t.Errorf("reasoning %d, TTFR %v", rec.ReasoningTokens, rec.TTFR)
				}
			},
		},
		{
			name:  "chat tool call",
			api:   APIChat,
			req:   Request{Tools: []Tool{weatherTool}, ToolChoice: "auto"},
			check: checkToolAfterThinking,
		},
		{
			name:      "chat broken tool call is invalid_response",
			api:       APIChat,
			faults:    simulator.Faults{BrokenToolCall: 1},
			req:       Request{Tools: []Tool{weatherTool}},
			wantClass: prober.ClassInvalidResponse, wantMsg: "tool call 0 (get_weather): arguments are not JSON",
			check: func(t *testing.T, rec prober.Record) {
				if rec.FirstToolCall <= 0 {
					t.Errorf("first tool call %v", rec.FirstToolCall)
				}
			},
		},
		{
			name: "chat tool call against the schema check",
			api:  APIChat,
			req: Request{Tools: []Tool{weatherTool}, CheckTool: func(name string, args []byte) error {
				return errors.New("do not match the schema: city too short")
			}},
			wantClass: prober.ClassInvalidResponse, wantMsg: "tool call 0 (get_weather): arguments: do not match the schema",
		},
		{
			name: "responses reasoning then answer",
			api:  APIResponses,
			check: func(t *testing.T, rec prober.Record) {
				if rec.ReasoningTokens != reasoning || rec.CompletionTokens != maxTokens || rec.TokensCounted || rec.PromptTokens <= 0 {
					t.Errorf("reasoning %d, completion %d (counted %v), prompt %d", rec.ReasoningTokens, rec.CompletionTokens, rec.TokensCounted, rec.PromptTokens)
				}
				if rec.TTFR != rec.TTFT || rec.TTFTText < rec.TTFR || rec.ThinkingTime != rec.TTFTText-rec.TTFR {
					t.Errorf("TTFT %v, TTFR %v, TTFTText %v, thinking %v", rec.TTFT, rec.TTFR, rec.TTFTText, rec.ThinkingTime)
				}
				if rec.Events < 2 || len(rec.ITL) != rec.Events-1 || rec.E2E != rec.TTFT+sum(rec.ITL) || rec.Done < rec.E2E {
					t.Errorf("events %d, ITL %d, E2E %v, done %v", rec.Events, len(rec.ITL), rec.E2E, rec.Done)
				}
				if rec.FinishReason != "length" {
					t.Errorf("finish %q", rec.FinishReason)
				}
			},
		},
		{
			name: "responses tool call",
			api:  APIResponses,
			req:  Request{Tools: []Tool{weatherTool}, ToolChoice: "get_weather"},
			check: func(t *testing.T, rec prober.Record) {
				if rec.ToolCalls != 1 || rec.FirstToolCall <= 0 || rec.FinishReason != "tool_calls" {
					t.Errorf("tool calls %d, first %v, finish %q", rec.ToolCalls, rec.FirstToolCall, rec.FinishReason)
				}
			},
		},
		{
			name: "responses broken tool call", api: APIResponses, faults: simulator.Faults{BrokenToolCall: 1},
			req:       Request{Tools: []Tool{weatherTool}},
			wantClass: prober.ClassInvalidResponse, wantMsg: "arguments are not JSON",
		},
		{
			name: "responses error event", api: APIResponses, faults: simulator.Faults{ErrorEvent: 1},
			wantClass: prober.ClassStream, wantMsg: "server error event: simulated fault",
		},
		{
			name: "responses cut stream", api: APIResponses, faults: simulator.Faults{CutStream: 1},
			wantClass: prober.ClassStream, wantMsg: "before response.completed",
		},
		{
			name: "responses malformed event", api: APIResponses, faults: simulator.Faults{MalformedEvent: 1},
			wantClass: prober.ClassStream, wantMsg: "malformed event",
		},
		{
			name: "responses not streamed", api: APIResponses, req: Request{NoStream: true},
			check: func(t *testing.T, rec prober.Record) {
				if rec.CompletionTokens != maxTokens || rec.ReasoningTokens != reasoning || rec.E2E <= 0 || rec.TTFT != 0 {
					t.Errorf("completion %d, reasoning %d, E2E %v, TTFT %v", rec.CompletionTokens, rec.ReasoningTokens, rec.E2E, rec.TTFT)
				}
			},
		},
	}
	// The newer spelling of the thinking field is measured the same way.
	tests = append(tests, struct {
		name      string
		api       string
		field     string
		faults    simulator.Faults
		req       Request
		wantClass prober.ErrorClass
		wantMsg   string
		check     func(t *testing.T, rec prober.Record)
	}{name: "chat reasoning field then answer", api: APIChat, field: simulator.ReasoningField, check: tests[0].check})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simtest.Fast()
			cfg.ReasoningTokens = reasoning
			cfg.ReasoningField = tt.field
			cfg.Faults = tt.faults
			url, _ := simtest.Start(t, cfg)
			req := tt.req
			req.ID, req.MaxTokens, req.IgnoreEOS = "sim-r", maxTokens, true
			req.Messages = []Message{{Role: "user", Content: "what is the weather in Paris?"}}
			rec := checkOutcome(t, url, Options{API: tt.api}, 0, req, tt.wantClass, tt.wantMsg, 0)
			if tt.check != nil {
				tt.check(t, rec)
			}
		})
	}
}

// checkToolAfterThinking holds a record of one tool call that came after
// the reasoning and no answer text: its finish, TTFR, first tool call and
// thinking time.
func checkToolAfterThinking(t *testing.T, rec prober.Record) {
	if rec.ToolCalls != 1 || rec.FinishReason != "tool_calls" {
		t.Errorf("tool calls %d, finish %q", rec.ToolCalls, rec.FinishReason)
	}
	if rec.TTFR <= 0 || rec.FirstToolCall < rec.TTFR || rec.ThinkingTime != rec.FirstToolCall-rec.TTFR || rec.TTFTText != 0 {
		t.Errorf("first tool call %v, TTFR %v, thinking %v, TTFTText %v", rec.FirstToolCall, rec.TTFR, rec.ThinkingTime, rec.TTFTText)
	}
}
