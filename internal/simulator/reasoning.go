package simulator

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// Reasoning, tool calls and the Responses API, as vLLM serves them with a
// reasoning parser (--reasoning-parser) and a tool parser
// (--enable-auto-tool-choice --tool-call-parser):
//
//   - with --reasoning-tokens N, the first N output tokens of a chat or
//     Responses request are the model's thinking: streamed as
//     delta.reasoning_content (chat; vLLM 0.11's field) or
//     response.reasoning_text.delta events, counted in
//     usage.completion_tokens_details.reasoning_tokens
//     (output_tokens_details for the Responses API) and in
//     completion_tokens. A request with chat_template_kwargs
//     {"enable_thinking": false} or a reasoning effort "none" does not
//     think;
//   - a request with tools (and tool_choice other than "none") answers with
//     one call of its first tool (or the one tool_choice names) whose
//     arguments are a minimal JSON object valid against the tool's
//     parameters, spread over the answer tokens as tool_calls deltas
//     (finish_reason "tool_calls"); the fault broken-tool-call drops the
//     arguments' opening brace, so they are not JSON.

// The two spellings of a chat reply's thinking (--reasoning-field).
const (
	ReasoningContentField = "reasoning_content"
	ReasoningField        = "reasoning"
)

// MaxReasoningTokens bounds --reasoning-tokens.
const MaxReasoningTokens = 1 << 20

// maxTools bounds the tools of one request (vLLM has no bound; the
// simulator keeps the request's memory small).
const maxTools = 128

// addReasoningFlags registers --reasoning-tokens.
func addReasoningFlags(cmd *kingpin.CmdClause, c *Config) {
	cmd.Flag("reasoning-tokens", "Reasoning persona: the first N output tokens of a chat or Responses request are "+
		"streamed as reasoning (delta.reasoning_content; response.reasoning_text.delta) and counted as usage "+
		"reasoning_tokens; 0 (default) is a model that does not think. Requests with chat_template_kwargs "+
		"{enable_thinking: false} or reasoning effort none do not think.").
		Default(fmt.Sprint(c.ReasoningTokens)).IntVar(&c.ReasoningTokens)
	cmd.Flag("reasoning-field", "The chat field that carries the thinking: reasoning_content (vLLM up to 0.10) or reasoning "+
		"(newer vLLM and other servers).").Default(c.ReasoningField).EnumVar(&c.ReasoningField, ReasoningContentField, ReasoningField)
}

// reasoningFields are the request body fields of reasoning and tools.
type reasoningFields struct {
	ReasoningEffort    *string         `json:"reasoning_effort"`
	ChatTemplateKwargs map[string]any  `json:"chat_template_kwargs"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	// The Responses API's fields.
	Input           json.RawMessage `json:"input"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Reasoning       *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
}

// simTool is one tool of a request: its name and the arguments the
// simulator calls it with (a minimal JSON object valid against its
// parameters).
type simTool struct {
	name string
	args []byte
}

// parseReasoning reads the reasoning and tool fields of a chat or Responses
// request into g: whether it thinks, and the tool it calls.
func (s *Simulator) parseReasoning(body *genRequestJSON, g *genRequest) *apiError {
	f := body.reasoningFields
	effort := f.ReasoningEffort
	if f.Reasoning != nil && f.Reasoning.Effort != nil {
		effort = f.Reasoning.Effort
	}
	if effort != nil {
		switch *effort {
		case "none", "minimal", "low", "medium", "high", "xhigh":
		default:
			return badRequest("reasoning_effort", "reasoning effort must be one of none, minimal, low, medium, high, xhigh, got %q", *effort)
		}
	}
	g.thinks = s.cfg.ReasoningTokens > 0 && g.kind != kindCompletion && (effort == nil || *effort != "none")
	if v, ok := f.ChatTemplateKwargs["enable_thinking"]; ok && v == false {
		g.thinks = false
	}
	if len(f.Tools) == 0 || string(f.Tools) == "null" || s.cfg.Engine != "" && s.cfg.Engine != EngineVLLM {
		return nil // the other personas ignore tools
	}
	if g.kind == kindCompletion {
		return badRequest("tools", "tools are not supported by /v1/completions")
	}
	var tools []struct {
		Type     string          `json:"type"`
		Name     string          `json:"name"` // Responses API: flat
		Params   json.RawMessage `json:"parameters"`
		Function *struct {
			Name   string          `json:"name"`
			Params json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(f.Tools, &tools); err != nil {
		return badRequest("tools", "tools: %v", err)
	}
	if len(tools) > maxTools {
		return badRequest("tools", "at most %d tools, got %d", maxTools, len(tools))
	}
	var list []simTool
	for i, t := range tools {
		name, params := t.Name, t.Params
		if g.kind == kindChat {
			if t.Function == nil {
				return badRequest("tools", "tools[%d].function is required", i)
			}
			name, params = t.Function.Name, t.Function.Params
		}
		if t.Type != "function" || name == "" {
			return badRequest("tools", "tools[%d] must be of type function with a name", i)
		}
		args := []byte("{}")
		if len(params) > 0 && string(params) != "null" {
			var schema any
			if err := json.Unmarshal(params, &schema); err != nil {
				return badRequest("tools", "tools[%d].parameters: %v", i, err)
			}
			b, err := json.Marshal(minimalJSON(schema, 0))
			if err != nil || len(b) > maxStructuredBytes || len(b) == 0 || b[0] != '{' {
				return badRequest("tools", "tools[%d].parameters: the simulator cannot build arguments for this schema", i)
			}
			args = b
		}
		list = append(list, simTool{name: name, args: args})
	}
	if len(list) == 0 {
		return nil
	}
	call := &list[0]
	if tc := f.ToolChoice; len(tc) > 0 && string(tc) != "null" {
		var choice string
		var named struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(tc, &choice) == nil:
			switch choice {
			case "none":
				return nil
			case "auto", "required":
			default:
				return badRequest("tool_choice", "tool_choice must be none, auto, required or a named function, got %q", choice)
			}
		case json.Unmarshal(tc, &named) == nil:
			want := named.Function.Name
			if want == "" {
				want = named.Name
			}
			call = nil
			for i := range list {
				if list[i].name == want {
					call = &list[i]
				}
			}
			if call == nil {
				return badRequest("tool_choice", "tool_choice names %q, which is not one of the tools", want)
			}
		default:
			return badRequest("tool_choice", "tool_choice must be a string or an object")
		}
	}
	g.tool = call
	return nil
}

// parseInput reads the Responses API's input: a string (one user message)
// or a list of messages ({role, content}), rendered as chat is.
func parseInput(raw json.RawMessage) ([]int, []chatImage, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, badRequest("input", "input is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		r, _ := renderChat([]chatMessage{{Role: "user", Content: mustJSON(text)}}, true)
		return tokenize(r), nil, nil
	}
	var msgs []chatMessage
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
		return nil, nil, badRequest("input", "input must be a string or a non-empty list of messages")
	}
	r, images, err := renderChatImages(msgs, true)
	if err != nil {
		return nil, nil, badRequest("input", "%v", err)
	}
	return tokenize(r), images, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// reasoningLen is the number of the sequence's output tokens that are
// reasoning (0 when the request does not think).
func (s *Simulator) reasoningLen(g *genRequest) int {
	if !g.thinks {
		return 0
	}
	return s.cfg.ReasoningTokens
}

// parts splits output tokens [from, to) of seq into its reasoning text and
// its answer text (the tool call's arguments for a tool-calling request).
func parts(seq *sequence, from, to int) (reasoning, answer string) {
	r := seq.reasoning
	if from < r {
		var b strings.Builder
		for i := from; i < min(to, r); i++ {
			b.WriteByte(' ')
			b.WriteString(vocabWord(int(hash2(seq.textSeed, uint64(i)+1) % VocabSize)))
		}
		reasoning = b.String()
	}
	if to > r {
		answer = outputText(seq, max(from, r), to)
	}
	return reasoning, answer
}

// completionDetails is usage.completion_tokens_details of a request that
// thinks ({"reasoning_tokens": n}), nil (absent) otherwise.
func completionDetails(g *genRequest, seq *sequence, completion int) json.RawMessage {
	if !g.thinks {
		return nil
	}
	return mustJSON(map[string]int{"reasoning_tokens": reasoningDone(seq, completion)})
}

// nullIfEmpty is s, or nil (JSON null) when s is empty.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// reasoningDone is the number of reasoning tokens among the first produced.
func reasoningDone(seq *sequence, produced int) int { return min(produced, seq.reasoning) }
