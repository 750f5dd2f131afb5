package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/bounded"
)

// The non-streamed request ("stream": false, Request.NoStream): one JSON
// response, read whole within MaxBodyBytes. E2E is t0 to the end of the
// body; TTFT, TTFTText, ITL and Events stay 0 (Record.NoStream marks the
// Record, Record.TPOT reports none). Tokens come from usage. This path is
// per request, not per token, so it decodes with encoding/json.

// response is what the measurement needs of a non-streamed completion
// (completions: choices[0].text; chat: choices[0].message.content).
type response struct {
	Choices []struct {
		Text    *string `json:"text"`
		Message *struct {
			Content *string `json:"content"`
			// ReasoningContent (vLLM before 0.10) and Reasoning are
			// the thinking of a reasoning model.
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			ToolCalls        []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string         `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        *int            `json:"prompt_tokens"`
		CompletionTokens    *int            `json:"completion_tokens"`
		PromptTokensDetails json.RawMessage `json:"prompt_tokens_details"`
		CompletionDetails   json.RawMessage `json:"completion_tokens_details"`
	} `json:"usage"`
	Timings json.RawMessage `json:"timings"` // llama-server's; see draftFigures
	Metrics json.RawMessage `json:"metrics"` // vLLM's per-request timing; see serverFigures
	Error   json.RawMessage `json:"error"`
}

// draftFigures reads llama-server's timings.draft_n and
// timings.draft_n_accepted into rec when timings is an object carrying
// both as non-negative integers; anything else is ignored (servers differ),
// as the streamed decoder does.
func draftFigures(raw json.RawMessage, rec *prober.Record) {
	var t struct {
		Drafted  json.RawMessage `json:"draft_n"`
		Accepted json.RawMessage `json:"draft_n_accepted"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &t) != nil {
		return
	}
	drafted, ok1 := nonNegative[int](t.Drafted)
	accepted, ok2 := nonNegative[int](t.Accepted)
	if ok1 && ok2 {
		rec.DraftTokens, rec.DraftAccepted, rec.DraftReported = drafted, accepted, true
	}
}

// serverFigures reads vLLM's per-request metrics object (queue_time_ms,
// time_to_first_token_ms, generation_time_ms) into rec when it is an
// object; each figure is kept when a finite non-negative number, anything
// else is ignored, as the streamed decoder does.
func serverFigures(raw json.RawMessage, rec *prober.Record) {
	var m struct {
		Queue json.RawMessage `json:"queue_time_ms"`
		TTFT  json.RawMessage `json:"time_to_first_token_ms"`
		Gen   json.RawMessage `json:"generation_time_ms"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return
	}
	q, okQ := nonNegative[float64](m.Queue)
	t, okT := nonNegative[float64](m.TTFT)
	g, okG := nonNegative[float64](m.Gen)
	serverTiming(rec, okQ, q, okT, t, okG, g)
}

// answerError classifies a 200 answer whose body carries an error:
// invalid_response, with the server's message when it has one.
func answerError(body []byte) (prober.ErrorClass, string, bool) {
	if msg := errorBodyMessage(body); msg != "" {
		return prober.ClassInvalidResponse, "server error in a 200 response: " + msg, true
	}
	return prober.ClassInvalidResponse, "server error in a 200 response", false
}

// setTokens sets rec's prompt and completion tokens from a non-streamed
// answer's usage counts where they are given.
func setTokens(rec *prober.Record, prompt, completion *int) {
	if prompt != nil {
		rec.PromptTokens = *prompt
	}
	if completion != nil {
		rec.CompletionTokens = *completion
	}
}

// collectString appends a non-streamed answer's text to Request.Collect
// until it holds MaxCollect bytes.
func (m *measurer) collectString(s string) {
	if m.collect != nil && m.collect.Len() < MaxCollect {
		m.collect.WriteString(s[:min(len(s), MaxCollect-m.collect.Len())])
	}
}

// isSet reports whether a JSON member is present and not null.
func isSet(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// nonNegative decodes raw as a non-negative number of type T; false when
// it is absent, null, not a T or negative.
func nonNegative[T int | float64](raw json.RawMessage) (T, bool) {
	var v T
	if !isSet(raw) || json.Unmarshal(raw, &v) != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// responsesResponse is what the measurement needs of a non-streamed
// Responses API answer: its status, output text and usage.
type responsesResponse struct {
	Status *string `json:"status"`
	Output []struct {
		Type      string `json:"type"`
		Name      string `json:"name"`      // function_call
		Arguments string `json:"arguments"` // function_call
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens  *int            `json:"input_tokens"`
		OutputTokens *int            `json:"output_tokens"`
		InputDetails json.RawMessage `json:"input_tokens_details"`
		OutputDetail json.RawMessage `json:"output_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// detailInt reads the integer key of a usage details object (null, or an
// object; anything else: not known).
func detailInt(raw json.RawMessage, key string) (int, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return 0, false
	}
	var n *int
	if v, ok := m[key]; !ok || json.Unmarshal(v, &n) != nil || n == nil {
		return 0, false
	}
	return *n, true
}

// measureResponses measures a non-streamed Responses API answer.
func (m *measurer) measureResponses(body []byte, end time.Time) (prober.ErrorClass, string, bool) {
	rec := m.rec
	var r responsesResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return prober.ClassInvalidResponse, "response body: " + err.Error(), false
	}
	if isSet(r.Error) {
		return answerError(body)
	}
	if r.Status == nil || r.Output == nil {
		return prober.ClassInvalidResponse, "response without status or output", false
	}
	rec.E2E = end.Sub(m.t0)
	rec.FinishReason = "stop"
	if *r.Status != "completed" {
		rec.FinishReason = trimTo(*r.Status, 64)
	}
	for i, o := range r.Output {
		if o.Type == "function_call" && m.tools != nil {
			m.tools.add(i, o.Name, o.Arguments)
		}
		for _, c := range o.Content {
			if o.Type == "message" && c.Type == "output_text" {
				m.collectString(c.Text)
			}
		}
	}
	if u := r.Usage; u != nil {
		setTokens(rec, u.InputTokens, u.OutputTokens)
		rec.CachedTokens, rec.CachedTokensReported = detailInt(u.InputDetails, "cached_tokens")
		rec.ReasoningTokens, _ = detailInt(u.OutputDetail, "reasoning_tokens")
	}
	return m.checkTools()
}

// checkTools counts and checks the tool calls of a non-streamed answer.
func (m *measurer) checkTools() (prober.ErrorClass, string, bool) {
	if m.tools == nil {
		return prober.ClassNone, "", false
	}
	m.rec.ToolCalls = len(m.tools.calls)
	if why := m.tools.check(m.toolList, m.checkTool); why != "" {
		return prober.ClassInvalidResponse, why, true
	}
	return prober.ClassNone, "", false
}

// readResponse reads and measures a 200 answer to a non-streamed request.
func (c *Client) readResponse(ctx, parent context.Context, resp *http.Response, m *measurer) (prober.ErrorClass, string, bool) {
	rec := m.rec
	if ct := resp.Header.Get("Content-Type"); !isJSON(ct) {
		return prober.ClassInvalidResponse, fmt.Sprintf("content type %q, want application/json", trimTo(ct, 64)), false
	}
	if ce := resp.Header.Get("Content-Encoding"); !isIdentity(ce) {
		return prober.ClassInvalidResponse, fmt.Sprintf("unsolicited content encoding %q, want none", trimTo(ce, 64)), false
	}
	// Refused on its Content-Length before a byte is read, the buffer sized
	// from it, capped while read (prober/bounded).
	body, err := bounded.ReadBody(resp, "response body", c.o.MaxBodyBytes)
	end := time.Now()
	var tl *bounded.TooLargeError
	if errors.As(err, &tl) {
		return prober.ClassInvalidResponse, tl.Error(), false
	}
	if err != nil {
		if class, msg, ok := ctxClass(ctx, parent, m); ok {
			return class, msg, false
		}
		return prober.ClassStream, "read: " + err.Error(), false
	}
	if int64(len(body)) > c.o.MaxBodyBytes {
		return prober.ClassInvalidResponse, fmt.Sprintf("response body larger than %d bytes", c.o.MaxBodyBytes), false
	}
	if m.timeout > 0 && end.Sub(m.t0) > m.timeout {
		return prober.ClassTimeout, "no complete response within timeout " + m.timeout.String(), false
	}
	switch m.api.decode {
	case decodeResponses:
		return m.measureResponses(body, end)
	case decodePooling:
		return m.measurePooling(body, end) // pooling.go
	case decodeMessages:
		return m.measureMessages(body, end) // messages.go
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return prober.ClassInvalidResponse, "response body: " + err.Error(), false
	}
	if isSet(r.Error) {
		return answerError(body)
	}
	if len(r.Choices) == 0 {
		return prober.ClassInvalidResponse, "response without choices", false
	}
	rec.E2E = end.Sub(m.t0)
	ch := r.Choices[0]
	var text string
	switch {
	case ch.Text != nil:
		text = *ch.Text
	case ch.Message != nil && ch.Message.Content != nil:
		text = *ch.Message.Content
	}
	if ch.FinishReason != nil {
		rec.FinishReason = *ch.FinishReason
	}
	rec.Logprobs = len(ch.Logprobs) > 0 && string(ch.Logprobs) != "null"
	if m.collect != nil {
		m.collect.WriteString(text[:min(len(text), MaxCollect)])
	}
	if ch.Message != nil && m.tools != nil {
		for i, tc := range ch.Message.ToolCalls {
			m.tools.add(i, tc.Function.Name, tc.Function.Arguments)
		}
	}
	if u := r.Usage; u != nil {
		setTokens(rec, u.PromptTokens, u.CompletionTokens)
		var details struct {
			CachedTokens *int `json:"cached_tokens"`
		}
		// prompt_tokens_details is null, or an object (anything else: not known).
		if len(u.PromptTokensDetails) > 0 && json.Unmarshal(u.PromptTokensDetails, &details) == nil && details.CachedTokens != nil {
			rec.CachedTokens, rec.CachedTokensReported = *details.CachedTokens, true
		}
		rec.ReasoningTokens, _ = detailInt(u.CompletionDetails, "reasoning_tokens")
	}
	draftFigures(r.Timings, rec)
	serverFigures(r.Metrics, rec)
	if text == "" && (ch.Message == nil || len(ch.Message.ToolCalls) == 0 &&
		nonEmpty(ch.Message.ReasoningContent) == "" && nonEmpty(ch.Message.Reasoning) == "") {
		return prober.ClassInvalidResponse, EmptyAnswer, false
	}
	return m.checkTools()
}

// nonEmpty is *s, "" for nil.
func nonEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}
