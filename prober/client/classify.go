package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// ctxClass classifies a failure when ctx is done: by the timer that
// cancelled it, else as canceled by the caller.
func ctxClass(ctx, parent context.Context, m *measurer) (prober.ErrorClass, string, bool) {
	if ctx.Err() == nil {
		return prober.ClassNone, "", false
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errTimeout):
		return prober.ClassTimeout, fmt.Sprintf("no complete response within timeout %v", m.timeout), true
	case errors.Is(cause, errTTFTTimeout):
		return prober.ClassTTFTTimeout, fmt.Sprintf("no token event within ttft_timeout %v", m.ttftTimeout), true
	case errors.Is(cause, errStall):
		return prober.ClassStall, fmt.Sprintf("no event for stall_timeout %v after %d token events", m.stallTimeout, m.rec.Events), true
	}
	if parent.Err() != nil {
		return prober.ClassCanceled, "canceled: " + context.Cause(parent).Error(), true
	}
	return prober.ClassCanceled, "canceled: " + cause.Error(), true
}

// statusError classifies a non-200 response and extracts a short message
// from a bounded part of its body.
func statusError(resp *http.Response) (prober.ErrorClass, string, bool) {
	class := prober.ClassForStatus(resp.StatusCode)
	buf := make([]byte, maxErrorBody)
	n, _ := readFull(resp.Body, buf)
	msg := "HTTP " + resp.Status
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		msg += " (redirect to " + trimTo(redact.Text(loc), 120) + "; redirects are not followed: fix base_url)"
	} else if detail := errorBodyMessage(buf[:n]); detail != "" {
		msg += ": " + detail
	}
	return class, msg, true
}

// readFull reads into buf until it is full, EOF or an error.
func readFull(r interface{ Read([]byte) (int, error) }, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// errorBodyMessage extracts the message of an OpenAI/vLLM/FastAPI error
// body, or falls back to the body's first line.
func errorBodyMessage(b []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &v) == nil {
		var s string
		var e struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case json.Unmarshal(v.Error, &e) == nil && e.Message != "":
			return e.Message
		case v.Message != "":
			return v.Message
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			return s
		case len(v.Detail) > 0 && string(v.Detail) != "null":
			return string(v.Detail)
		}
	}
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}

// clean makes an error message safe and short: the API key and the other
// secrets are redacted, a
// server message that echoes the prompt loses every echoed piece
// (redact.ScrubPrompt),
// control characters become spaces, and the length is bounded.
func (c *Client) clean(msg string, req *Request, fromServer bool) string {
	redacted := false
	for _, sec := range c.secrets {
		if strings.Contains(msg, sec) {
			msg, redacted = strings.ReplaceAll(msg, sec, "<secret>"), true
		}
	}
	if redacted {
		msg = strings.ReplaceAll(msg, "Bearer <secret>", "<secret>")
	}
	msg = c.red.RedactLiterals(msg)
	if fromServer {
		msg = redact.ScrubPrompt(msg, req.Prompt)
		for _, m := range req.Messages {
			msg = redact.ScrubPrompt(msg, m.Content)
		}
	}
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	return trimTo(msg, maxErrorMessage)
}

// trimTo bounds s to n bytes at a rune boundary, marking the cut.
func trimTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}
