package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober"
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
		} `json:"message"`
		FinishReason *string         `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        *int            `json:"prompt_tokens"`
		CompletionTokens    *int            `json:"completion_tokens"`
		PromptTokensDetails json.RawMessage `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.o.MaxBodyBytes+1))
	end := time.Now()
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
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return prober.ClassInvalidResponse, "response body: " + err.Error(), false
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		if msg := errorBodyMessage(body); msg != "" {
			return prober.ClassInvalidResponse, "server error in a 200 response: " + msg, true
		}
		return prober.ClassInvalidResponse, "server error in a 200 response", false
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
	if u := r.Usage; u != nil {
		if u.PromptTokens != nil {
			rec.PromptTokens = *u.PromptTokens
		}
		if u.CompletionTokens != nil {
			rec.CompletionTokens = *u.CompletionTokens
		}
		var details struct {
			CachedTokens *int `json:"cached_tokens"`
		}
		// prompt_tokens_details is null, or an object (anything else: not known).
		if len(u.PromptTokensDetails) > 0 && json.Unmarshal(u.PromptTokensDetails, &details) == nil && details.CachedTokens != nil {
			rec.CachedTokens, rec.CachedTokensReported = *details.CachedTokens, true
		}
	}
	return prober.ClassNone, "", false
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}
