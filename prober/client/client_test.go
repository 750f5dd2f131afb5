package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/config"
	"go.uber.org/goleak"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/redact"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testKey = "sk-test-0123456789abcdef"

// part is one step of a scripted SSE response: wait delay, write data, flush.
type part struct {
	delay time.Duration
	data  string
}

func after(d time.Duration, data string) part { return part{delay: d, data: data} }
func now(data string) part                    { return part{data: data} }

func tok(text string) string {
	b, _ := json.Marshal(text)
	return `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":` +
		string(b) + `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

func tokFinish(text, finish string) string {
	return `data: {"choices":[{"index":0,"text":"` + text + `","finish_reason":"` + finish + `"}]}` + "\n\n"
}

func usage(prompt, completion int) string {
	return fmt.Sprintf(`data: {"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n",
		prompt, prompt+completion, completion)
}

func chatDelta(delta string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
}

const done = "data: [DONE]\n\n"

// wait sleeps d or until the client went away; it reports whether to go on.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// script serves a scripted event stream.
func script(parts ...part) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for _, p := range parts {
			if !wait(r, p.delay) {
				return
			}
			_, _ = io.WriteString(w, p.data)
			w.(http.Flusher).Flush()
		}
	}
}

// seen is what the server saw of the last request.
type seen struct {
	mu      sync.Mutex
	header  http.Header
	payload map[string]any
	remotes []string
}

func (s *seen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		s.mu.Lock()
		s.header = r.Header.Clone()
		s.payload = p
		s.remotes = append(s.remotes, r.RemoteAddr)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *seen) get() (http.Header, map[string]any, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header, s.payload, append([]string(nil), s.remotes...)
}

func startServer(t *testing.T, h http.Handler) (string, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(s.wrap(h))
	t.Cleanup(srv.Close)
	return srv.URL, s
}

func newClient(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// do runs one request and returns its Record.
func do(t *testing.T, ctx context.Context, c *Client, req Request) prober.Record {
	t.Helper()
	rec := prober.Record{Target: "t", Probe: "p", Scheduled: time.Now()}
	c.Do(ctx, req, &rec)
	return rec
}

func sum(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

func TestCompletionsMeasurement(t *testing.T) {
	const gap = 30 * time.Millisecond
	url, s := startServer(t, script(
		after(gap, tok("Hello")),
		after(gap, tok(" wor")),
		after(gap, tok("ld")),
		after(gap, tokFinish("!", "length")),
		now(usage(7, 4)),
		after(gap, done),
	))
	c := newClient(t, Options{
		BaseURL: url + "/", Model: "m", APIKey: testKey,
		ExtraBody: map[string]any{"temperature": 0.5, "seed": 3},
	})
	rec := do(t, context.Background(), c, Request{ID: "req-1", Prompt: "say hello", MaxTokens: 4, MinTokens: 2, IgnoreEOS: true, InputTokens: 3})
	if !rec.OK() {
		t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
	}
	if rec.Target != "t" || rec.Probe != "p" || rec.RequestID != "req-1" || rec.Model != "m" {
		t.Errorf("identity fields = %q %q %q %q", rec.Target, rec.Probe, rec.RequestID, rec.Model)
	}
	if rec.HTTPStatus != 200 || rec.Events != 4 || len(rec.ITL) != 3 {
		t.Fatalf("status %d events %d itl %v", rec.HTTPStatus, rec.Events, rec.ITL)
	}
	if rec.PromptTokens != 7 || rec.CompletionTokens != 4 || rec.TokensCounted {
		t.Errorf("tokens = %d/%d counted=%v, want 7/4 from usage", rec.PromptTokens, rec.CompletionTokens, rec.TokensCounted)
	}
	if rec.InputTokens != 3 || rec.OutputTokensRequested != 4 {
		t.Errorf("requested = %d/%d", rec.InputTokens, rec.OutputTokensRequested)
	}
	if rec.FinishReason != "length" {
		t.Errorf("finish reason %q", rec.FinishReason)
	}
	// Server-controlled sleeps give lower bounds; the identities are exact.
	if rec.TTFT < gap {
		t.Errorf("TTFT %v < server delay %v", rec.TTFT, gap)
	}
	for i, d := range rec.ITL {
		if d < gap/2 {
			t.Errorf("ITL[%d] = %v, want >= %v", i, d, gap/2)
		}
	}
	if rec.E2E != rec.TTFT+sum(rec.ITL) {
		t.Errorf("E2E %v != TTFT %v + sum(ITL) %v", rec.E2E, rec.TTFT, sum(rec.ITL))
	}
	if rec.TTFTText != rec.TTFT {
		t.Errorf("TTFTText %v != TTFT %v for text in the first event", rec.TTFTText, rec.TTFT)
	}
	if rec.Done < rec.E2E+gap/2 {
		t.Errorf("Done %v, want >= E2E %v + %v (the [DONE] came later)", rec.Done, rec.E2E, gap/2)
	}
	if rec.HeadersTime <= 0 || rec.HeadersTime > rec.TTFT {
		t.Errorf("HeadersTime %v not in (0, TTFT %v]", rec.HeadersTime, rec.TTFT)
	}
	if rec.Sent.Before(rec.Scheduled) || rec.SendLag != rec.Sent.Sub(rec.Scheduled) || rec.WallStart.IsZero() {
		t.Errorf("Sent %v Scheduled %v SendLag %v", rec.Sent, rec.Scheduled, rec.SendLag)
	}
	if tpot, ok := rec.TPOT(); !ok || tpot != (rec.E2E-rec.TTFT)/3 {
		t.Errorf("TPOT = %v, %v", tpot, ok)
	}

	h, p, _ := s.get()
	if got := h.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	if got := h.Get("X-Request-Id"); got != "req-1" {
		t.Errorf("x-request-id = %q", got)
	}
	if got := h.Get("Accept"); got != "text/event-stream" {
		t.Errorf("Accept = %q", got)
	}
	want := map[string]any{
		"model": "m", "prompt": "say hello", "max_tokens": 4.0, "min_tokens": 2.0, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "temperature": 0.5, "seed": 3.0,
	}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("payload\n got %v\nwant %v", p, want)
	}
}

func TestChatMeasurement(t *testing.T) {
	const gap = 30 * time.Millisecond
	url, s := startServer(t, script(
		after(gap, chatDelta(`{"role":"assistant","content":""}`)),
		after(gap, chatDelta(`{"content":"Hi"}`)),
		after(gap, chatDelta(`{"content":" there"}`)),
		now(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"),
		now(done),
	))
	c := newClient(t, Options{BaseURL: url + "/v1", API: APIChat})
	rec := do(t, context.Background(), c, Request{ID: "c1", Model: "override", Messages: []Message{{Role: "user", Content: "hello"}}, MaxTokens: 8})
	if !rec.OK() {
		t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
	}
	// vLLM's TTFT counts the role-only chunk; TTFTText waits for content.
	if rec.TTFTText < rec.TTFT+gap/2 {
		t.Errorf("TTFTText %v, want >= TTFT %v + %v", rec.TTFTText, rec.TTFT, gap/2)
	}
	if rec.Events != 4 || len(rec.ITL) != 3 {
		t.Errorf("events %d itl %d, want 4 and 3", rec.Events, len(rec.ITL))
	}
	// No usage: counted, without the role-only and the finish-only chunks.
	if !rec.TokensCounted || rec.CompletionTokens != 2 {
		t.Errorf("tokens %d counted=%v, want 2 counted", rec.CompletionTokens, rec.TokensCounted)
	}
	if rec.FinishReason != "stop" || rec.Model != "override" {
		t.Errorf("finish reason %q model %q", rec.FinishReason, rec.Model)
	}
	_, p, _ := s.get()
	if p["max_completion_tokens"] != 8.0 || p["max_tokens"] != nil || p["model"] != "override" || p["prompt"] != nil {
		t.Errorf("payload %v", p)
	}
	if msgs, _ := json.Marshal(p["messages"]); string(msgs) != `[{"content":"hello","role":"user"}]` {
		t.Errorf("messages %s", msgs)
	}
}

func TestFinishOnlyChunkIsNotAToken(t *testing.T) {
	// A stream without usage (llama.cpp, TGI, proxies that drop
	// stream_options): 12 tokens, then an empty chunk with finish_reason.
	// It used to be counted as a 13th token, so TPOT was divided by 12.
	const gap = 2 * time.Millisecond
	tests := []struct {
		name  string
		api   string
		first []part
		token func(i int) string
		last  string
	}{
		{
			name:  "completions",
			token: func(i int) string { return tok(fmt.Sprint(" t", i)) },
			last:  tokFinish("", "length"),
		},
		{
			name:  "chat",
			api:   APIChat,
			first: []part{now(chatDelta(`{"role":"assistant","content":""}`))},
			token: func(i int) string { return chatDelta(fmt.Sprintf(`{"content":" t%d"}`, i)) },
			last:  `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n",
		},
		{
			name:  "chat, empty content with the finish",
			api:   APIChat,
			token: func(i int) string { return chatDelta(fmt.Sprintf(`{"content":" t%d"}`, i)) },
			last:  `data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}` + "\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := append([]part{}, tt.first...)
			for i := range 12 {
				parts = append(parts, after(gap, tt.token(i)))
			}
			parts = append(parts, after(gap, tt.last), now(done))
			url, _ := startServer(t, script(parts...))
			c := newClient(t, Options{BaseURL: url, API: tt.api})
			req := Request{Prompt: "p", MaxTokens: 12}
			if tt.api == APIChat {
				req = Request{Messages: []Message{{Role: "user", Content: "p"}}, MaxTokens: 12}
			}
			rec := do(t, context.Background(), c, req)
			if !rec.OK() {
				t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
			}
			if !rec.TokensCounted || rec.CompletionTokens != 12 {
				t.Fatalf("tokens %d counted=%v, want 12 counted", rec.CompletionTokens, rec.TokensCounted)
			}
			if want := len(tt.first) + 13; rec.Events != want || len(rec.ITL) != want-1 {
				t.Errorf("events %d, ITL %d: want %d events (the finish-only chunk is still an event)", rec.Events, len(rec.ITL), want)
			}
			if tpot, ok := rec.TPOT(); !ok || tpot != (rec.E2E-rec.TTFT)/11 {
				t.Errorf("TPOT %v, want (E2E - TTFT) / 11 = %v", tpot, (rec.E2E-rec.TTFT)/11)
			}
		})
	}
}

func TestStreamShapes(t *testing.T) {
	tests := []struct {
		name       string
		parts      []part
		wantEvents int
		wantTokens int
		wantCount  bool
		wantFinish string
	}{
		{
			name:       "no usage chunk counts token events",
			parts:      []part{now(tok("a")), now(tok("b")), now(tokFinish("c", "stop")), now(done)},
			wantEvents: 3, wantTokens: 3, wantCount: true, wantFinish: "stop",
		},
		{
			name:       "multi-token chunks: one event, usage tokens",
			parts:      []part{now(tok("a b c")), now(tok("d e")), now(usage(1, 5)), now(done)},
			wantEvents: 2, wantTokens: 5,
		},
		{
			name: "keep-alive comments, CRLF, no space after data",
			parts: []part{
				now(": ping\r\n\r\n"), now("data:" + strings.TrimSuffix(strings.TrimPrefix(tok("a"), "data: "), "\n\n") + "\r\n\r\n"),
				now(":\n"), now(tok("b")), now(usage(2, 2)), now("data:[DONE]\r\n\r\n"),
			},
			wantEvents: 2, wantTokens: 2,
		},
		{
			name:       "several events in one write",
			parts:      []part{now(tok("a") + tok("b") + tok("c") + usage(1, 3) + done)},
			wantEvents: 3, wantTokens: 3,
		},
		{
			name:       "event split across writes",
			parts:      []part{now(tok("a")[:10]), after(5*time.Millisecond, tok("a")[10:]), now(usage(1, 1)), now(done[:5]), now(done[5:])},
			wantEvents: 1, wantTokens: 1,
		},
		{
			name:       "continuous usage stats: last usage wins",
			parts:      []part{now(`data: {"choices":[{"text":"a"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}` + "\n\n"), now(`data: {"choices":[{"text":"b"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\n"), now(done)},
			wantEvents: 2, wantTokens: 2,
		},
		{
			name:       "finish-only chunk is not a token",
			parts:      []part{now(tok("a")), now(tok("b")), now(tokFinish("", "length")), now(done)},
			wantEvents: 3, wantTokens: 2, wantCount: true, wantFinish: "length",
		},
		{
			name:       "empty-text token event still counts (special token)",
			parts:      []part{now(tok("")), now(tok("x")), now(done)},
			wantEvents: 2, wantTokens: 2, wantCount: true,
		},
		{
			name:       "unknown events without choices are ignored",
			parts:      []part{now(`data: {"object":"ping"}` + "\n\n"), now(tok("x")), now(done)},
			wantEvents: 1, wantTokens: 1, wantCount: true,
		},
		{
			name:       "[DONE] without its blank line before EOF",
			parts:      []part{now(tok("x")), now("data: [DONE]")},
			wantEvents: 1, wantTokens: 1, wantCount: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, _ := startServer(t, script(tt.parts...))
			c := newClient(t, Options{BaseURL: url})
			rec := do(t, context.Background(), c, Request{Prompt: "p"})
			if !rec.OK() {
				t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
			}
			if rec.Events != tt.wantEvents || rec.CompletionTokens != tt.wantTokens || rec.TokensCounted != tt.wantCount {
				t.Errorf("events %d tokens %d counted %v, want %d %d %v",
					rec.Events, rec.CompletionTokens, rec.TokensCounted, tt.wantEvents, tt.wantTokens, tt.wantCount)
			}
			if rec.FinishReason != tt.wantFinish {
				t.Errorf("finish reason %q, want %q", rec.FinishReason, tt.wantFinish)
			}
			if len(rec.ITL) != rec.Events-1 || rec.E2E != rec.TTFT+sum(rec.ITL) {
				t.Errorf("ITL %v TTFT %v E2E %v inconsistent", rec.ITL, rec.TTFT, rec.E2E)
			}
		})
	}
}

// hijack serves by writing raw bytes on the connection and closing it.
func hijack(raw string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST instead of FIN
		}
		_ = conn.Close()
	}
}

func status(code int, ct, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func sleepHeaders(d time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if wait(r, d) {
			script(now(tok("late")), now(done))(w, r)
		}
	}
}

func closedPortURL(t *testing.T) string {
	t.Helper()
	return "http://" + testutil.RefusedAddr(t)
}

func TestErrorClasses(t *testing.T) {
	const long = 2 * time.Second // server delays a failing request never waits for
	tests := []struct {
		name      string
		handler   http.Handler
		opts      Options
		url       string // overrides the server
		cancelIn  time.Duration
		wantClass prober.ErrorClass
		wantMsg   string // substring of ErrorMessage
		check     func(t *testing.T, rec prober.Record)
	}{
		{
			name: "timeout mid-stream",
			// 1 s, not less: the first token must be read within it on
			// a busy machine (80 ms missed it at load 17).
			handler:   script(now(tok("a")), after(long, tok("b")), now(done)),
			opts:      Options{Timeout: time.Second},
			wantClass: prober.ClassTimeout, wantMsg: "timeout 1s",
			check: func(t *testing.T, rec prober.Record) {
				if rec.Events != 1 || rec.TTFT <= 0 {
					t.Errorf("partial measurement lost: events %d TTFT %v", rec.Events, rec.TTFT)
				}
			},
		},
		{
			name:      "timeout before headers",
			handler:   sleepHeaders(long),
			opts:      Options{Timeout: 50 * time.Millisecond},
			wantClass: prober.ClassTimeout,
		},
		{
			name:      "ttft timeout after headers",
			handler:   script(after(long, tok("a")), now(done)),
			opts:      Options{TTFTTimeout: 50 * time.Millisecond, Timeout: time.Minute},
			wantClass: prober.ClassTTFTTimeout, wantMsg: "ttft_timeout 50ms",
		},
		{
			name:      "ttft timeout before headers",
			handler:   sleepHeaders(long),
			opts:      Options{TTFTTimeout: 50 * time.Millisecond},
			wantClass: prober.ClassTTFTTimeout,
		},
		{
			name:      "ttft timeout with only keep-alives",
			handler:   script(after(20*time.Millisecond, ": ping\n\n"), after(20*time.Millisecond, ": ping\n\n"), after(long, tok("a"))),
			opts:      Options{TTFTTimeout: 80 * time.Millisecond},
			wantClass: prober.ClassTTFTTimeout,
		},
		{
			name:      "stall mid-stream",
			handler:   script(now(tok("a")), after(10*time.Millisecond, tok("b")), after(long, tok("c")), now(done)),
			opts:      Options{StallTimeout: 60 * time.Millisecond, TTFTTimeout: time.Minute},
			wantClass: prober.ClassStall, wantMsg: "after 2 token events",
			check: func(t *testing.T, rec prober.Record) {
				if rec.Events != 2 || len(rec.ITL) != 1 {
					t.Errorf("events %d ITL %v", rec.Events, rec.ITL)
				}
			},
		},
		{
			name: "stall despite keep-alive comments",
			handler: script(now(tok("a")), after(30*time.Millisecond, ": ping\n\n"), after(30*time.Millisecond, ": ping\n\n"),
				after(30*time.Millisecond, ": ping\n\n"), after(long, tok("b"))),
			opts:      Options{StallTimeout: 70 * time.Millisecond},
			wantClass: prober.ClassStall,
		},
		{
			name:      "slow but steady stream is not a stall",
			handler:   script(now(tok("a")), after(30*time.Millisecond, tok("b")), after(30*time.Millisecond, tok("c")), after(30*time.Millisecond, tok("d")), now(done)),
			opts:      Options{StallTimeout: 200 * time.Millisecond},
			wantClass: prober.ClassNone,
		},
		{
			name:      "connection refused",
			url:       closedPortURL(t),
			wantClass: prober.ClassConnect, wantMsg: "refused",
		},
		{
			name:      "connection reset before headers",
			handler:   hijack(""),
			wantClass: prober.ClassConnect,
		},
		{
			name:      "http 400 with vLLM error body",
			handler:   status(400, "application/json", `{"error":{"message":"max_tokens is too large","type":"BadRequestError","code":400}}`),
			wantClass: prober.ClassHTTP4xx, wantMsg: "HTTP 400 Bad Request: max_tokens is too large",
		},
		{
			name:      "http 404 old vLLM error form",
			handler:   status(404, "application/json", `{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`),
			wantClass: prober.ClassHTTP4xx, wantMsg: "The model does not exist.",
		},
		{
			name:      "http 429",
			handler:   status(429, "text/plain", "slow down\nsecond line"),
			wantClass: prober.ClassHTTP429, wantMsg: "HTTP 429 Too Many Requests: slow down",
		},
		{
			name:      "http 500",
			handler:   status(500, "application/json", `{"detail":"boom"}`),
			wantClass: prober.ClassHTTP5xx, wantMsg: "HTTP 500 Internal Server Error: boom",
		},
		{
			name:      "http 503 huge body is read bounded",
			handler:   status(503, "text/plain", strings.Repeat("x", 1<<20)),
			wantClass: prober.ClassHTTP5xx, wantMsg: "HTTP 503",
			check: func(t *testing.T, rec prober.Record) {
				if len(rec.ErrorMessage) > maxErrorMessage {
					t.Errorf("message length %d", len(rec.ErrorMessage))
				}
			},
		},
		{
			name:      "stream cut before [DONE]",
			handler:   script(now(tok("a")), now(tok("b"))),
			wantClass: prober.ClassStream, wantMsg: "ended before [DONE] after 2 token events",
		},
		{
			name: "connection reset mid-stream",
			handler: hijack("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
				fmt.Sprintf("%x\r\n%s\r\n", len(tok("a")), tok("a")) + "5\r\ndata:"),
			wantClass: prober.ClassStream,
		},
		{
			name:      "stream cut mid-event",
			handler:   script(now(tok("a")), now(`data: {"choices":[{"te`)),
			wantClass: prober.ClassStream, wantMsg: "middle of an event",
		},
		{
			name:      "malformed event mid-stream",
			handler:   script(now(tok("a")), now("data: {not json}\n\n"), now(done)),
			wantClass: prober.ClassStream, wantMsg: "malformed event",
		},
		{
			name:      "server error event mid-stream",
			handler:   script(now(tok("a")), now(`data: {"error":{"message":"engine dead","code":500}}`+"\n\n"), now(done)),
			wantClass: prober.ClassStream, wantMsg: "server error event: engine dead",
		},
		{
			name:      "server error event typed",
			handler:   script(now(tok("a")), now("event: error\ndata: overloaded\n\n")),
			wantClass: prober.ClassStream, wantMsg: "server error event: overloaded",
		},
		{
			name:      "body over MaxBodyBytes after tokens",
			handler:   script(now(tok("a")), now(": "+strings.Repeat("x", 4000)+"\n"), now(done)),
			opts:      Options{MaxBodyBytes: 2000},
			wantClass: prober.ClassStream, wantMsg: "too large",
		},
		{
			name:      "body over MaxBodyBytes before tokens",
			handler:   script(now("data: "+strings.Repeat("x", 4000)+"\n\n"), now(done)),
			opts:      Options{MaxBodyBytes: 2000},
			wantClass: prober.ClassInvalidResponse, wantMsg: "too large",
		},
		{
			name:      "wrong content type",
			handler:   status(200, "application/json", `{"choices":[{"text":"a"}]}`),
			wantClass: prober.ClassInvalidResponse, wantMsg: `content type "application/json"`,
		},
		{
			name:      "no token event before [DONE]",
			handler:   script(now(usage(1, 0)), now(done)),
			wantClass: prober.ClassInvalidResponse, wantMsg: "without a token event",
		},
		{
			name:      "bad JSON in the first event",
			handler:   script(now("data: <html>\n\n"), now(done)),
			wantClass: prober.ClassInvalidResponse, wantMsg: "first event: invalid JSON",
		},
		{
			name:      "unexpected 2xx status",
			handler:   status(204, "text/event-stream", ""),
			wantClass: prober.ClassInvalidResponse, wantMsg: "HTTP 204",
		},
		{
			name:      "canceled by the caller",
			handler:   script(now(tok("a")), after(long, tok("b"))),
			opts:      Options{Timeout: time.Minute, TTFTTimeout: time.Minute, StallTimeout: time.Minute},
			cancelIn:  50 * time.Millisecond,
			wantClass: prober.ClassCanceled, wantMsg: "canceled",
		},
		{
			name:      "canceled before headers",
			handler:   sleepHeaders(long),
			cancelIn:  30 * time.Millisecond,
			wantClass: prober.ClassCanceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := tt.url
			if url == "" {
				url, _ = startServer(t, tt.handler)
			}
			req := Request{ID: "e1", Prompt: "a prompt that is long enough to be recognised"}
			rec := checkOutcome(t, url, tt.opts, tt.cancelIn, req, tt.wantClass, tt.wantMsg, long)
			if tt.check != nil {
				tt.check(t, rec)
			}
		})
	}
}

// checkOutcome sends req with o to url (API key testKey), canceled after
// cancelIn when that is set, and holds the record to wantClass and a
// message that contains wantMsg and not the key, the outcome reached
// within limit when that is set; it returns the record.
func checkOutcome(t *testing.T, url string, o Options, cancelIn time.Duration, req Request, wantClass prober.ErrorClass, wantMsg string, limit time.Duration) prober.Record {
	t.Helper()
	o.BaseURL = url
	o.APIKey = testKey
	c := newClient(t, o)
	ctx := context.Background()
	if cancelIn > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		time.AfterFunc(cancelIn, cancel)
		defer cancel()
	}
	start := time.Now()
	rec := do(t, ctx, c, req)
	if rec.Error != wantClass {
		t.Fatalf("class %q (%s), want %q", rec.Error, rec.ErrorMessage, wantClass)
	}
	if !strings.Contains(rec.ErrorMessage, wantMsg) {
		t.Errorf("message %q does not contain %q", rec.ErrorMessage, wantMsg)
	}
	if strings.Contains(rec.ErrorMessage, testKey) {
		t.Errorf("message leaks the API key: %q", rec.ErrorMessage)
	}
	if elapsed := time.Since(start); limit > 0 && elapsed >= limit {
		t.Errorf("took %v: the failure was not detected within %v", elapsed, limit)
	}
	return rec
}

func TestErrorMessageRedaction(t *testing.T) {
	const prompt = "My very secret prompt text that must never show up in an error message"
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		msg, _ := json.Marshal("bad key " + r.Header.Get("Authorization") + " for request " + string(body))
		_, _ = fmt.Fprintf(w, `{"error":{"message":%s}}`, msg)
	})
	url, _ := startServer(t, echo)
	c := newClient(t, Options{BaseURL: url, APIKey: testKey})
	rec := do(t, context.Background(), c, Request{Prompt: prompt})
	if rec.Error != prober.ClassHTTP4xx {
		t.Fatalf("class %q", rec.Error)
	}
	if strings.Contains(rec.ErrorMessage, testKey) || strings.Contains(rec.ErrorMessage, prompt[:20]) {
		t.Fatalf("message leaks: %q", rec.ErrorMessage)
	}
	if !strings.Contains(rec.ErrorMessage, "bad key <secret>") || !strings.Contains(rec.ErrorMessage, redact.PromptEcho) {
		t.Fatalf("message %q lacks the redaction markers", rec.ErrorMessage)
	}
}

type panicTransport struct{}

func (panicTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("boom in transport") }

func TestPanicBecomesFailedRecord(t *testing.T) {
	c := newClient(t, Options{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: panicTransport{}}})
	rec := do(t, context.Background(), c, Request{ID: "x"})
	if rec.Error != prober.ClassInvalidResponse || !strings.Contains(rec.ErrorMessage, "internal error: boom in transport") {
		t.Fatalf("record %q %q", rec.Error, rec.ErrorMessage)
	}
	if rec.RequestID != "x" || rec.Sent.IsZero() {
		t.Fatalf("record lost its identity: %+v", rec)
	}
}

func TestConnectionReuseAndTrace(t *testing.T) {
	url, s := startServer(t, script(now(tok("a")), now(usage(1, 1)), now(done)))
	c := newClient(t, Options{BaseURL: url, Trace: true})
	first := do(t, context.Background(), c, Request{Prompt: "p"})
	second := do(t, context.Background(), c, Request{Prompt: "p"})
	if !first.OK() || !second.OK() {
		t.Fatalf("errors %q %q", first.ErrorMessage, second.ErrorMessage)
	}
	if first.ConnectTime <= 0 {
		t.Errorf("first request ConnectTime = %v, want > 0", first.ConnectTime)
	}
	if second.ConnectTime != 0 {
		t.Errorf("second request ConnectTime = %v, want 0 on a reused connection", second.ConnectTime)
	}
	if _, _, remotes := s.get(); len(remotes) != 2 || remotes[0] != remotes[1] {
		t.Errorf("remote addresses %v: connection not reused after [DONE]", remotes)
	}
}

func TestConcurrentRequests(t *testing.T) {
	url, _ := startServer(t, script(now(tok("a")), after(5*time.Millisecond, tok("b")), now(usage(1, 2)), now(done)))
	c := newClient(t, Options{BaseURL: url, StallTimeout: time.Second, TTFTTimeout: time.Second, Timeout: 5 * time.Second})
	var wg sync.WaitGroup
	recs := make([]prober.Record, 32)
	for i := range recs {
		wg.Go(func() { c.Do(context.Background(), Request{ID: fmt.Sprint(i), Prompt: "p"}, &recs[i]) })
	}
	wg.Wait()
	for i, rec := range recs {
		if !rec.OK() || rec.CompletionTokens != 2 || rec.RequestID != fmt.Sprint(i) {
			t.Errorf("request %d: %q %q tokens %d", i, rec.Error, rec.ErrorMessage, rec.CompletionTokens)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantURL string
		wantErr string
	}{
		{name: "completions default", opts: Options{BaseURL: "http://h:8000"}, wantURL: "http://h:8000/v1/completions"},
		{name: "trailing slash and v1", opts: Options{BaseURL: "http://h:8000/v1/"}, wantURL: "http://h:8000/v1/completions"},
		{name: "path prefix", opts: Options{BaseURL: "https://gw/llm", API: APIChat}, wantURL: "https://gw/llm/v1/chat/completions"},
		{name: "bad api", opts: Options{BaseURL: "http://h", API: "images"}, wantErr: `api must be completions, chat, responses, embeddings, rerank or messages, got "images"`},
		{name: "no scheme", opts: Options{BaseURL: "h:8000"}, wantErr: "want http(s)://"},
		{name: "password redacted", opts: Options{BaseURL: "ftp://u:pw@h"}, wantErr: `base url "ftp://u:xxxxx@h"`},
		{name: "negative timeout", opts: Options{BaseURL: "http://h", StallTimeout: -1}, wantErr: "stall_timeout must not be negative"},
		{name: "negative body cap", opts: Options{BaseURL: "http://h", MaxBodyBytes: -1}, wantErr: "max body bytes"},
		{name: "reserved extra key", opts: Options{BaseURL: "http://h", ExtraBody: map[string]any{"stream": false}}, wantErr: `extra body may not set "stream"`},
		{name: "unencodable extra", opts: Options{BaseURL: "http://h", ExtraBody: map[string]any{"f": func() {}}}, wantErr: `extra body "f"`},
		{name: "key with newline", opts: Options{BaseURL: "http://h", APIKey: config.Secret("a\nb")}, wantErr: "line breaks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.URL() != tt.wantURL {
				t.Fatalf("URL %q, want %q", c.URL(), tt.wantURL)
			}
		})
	}
}

func TestPayloadExtraBodyDeterministic(t *testing.T) {
	c := newClient(t, Options{BaseURL: "http://h", Model: "m", ExtraBody: map[string]any{"top_p": 0.9, "temperature": 0, "stop": []string{"\n"}}})
	b, err := c.payload(&Request{Prompt: "x", MaxTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","prompt":"x","max_tokens":2,"stream":true,"stream_options":{"include_usage":true},"stop":["\n"],"temperature":0,"top_p":0.9}`
	if string(b) != want {
		t.Fatalf("payload\n got %s\nwant %s", b, want)
	}
	if !json.Valid(b) {
		t.Fatal("payload is not valid JSON")
	}
	// No model anywhere: the field is omitted (the server's default model).
	c = newClient(t, Options{BaseURL: "http://h"})
	if b, _ = c.payload(&Request{Prompt: "x"}); string(b) != `{"prompt":"x","stream":true,"stream_options":{"include_usage":true}}` {
		t.Fatalf("payload without model: %s", b)
	}
}

func TestCanceledCause(t *testing.T) {
	// A caller cancelling with a cause (e.g. config reload) is canceled, and
	// the cause is in the message.
	url, _ := startServer(t, sleepHeaders(2*time.Second))
	c := newClient(t, Options{BaseURL: url})
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(20*time.Millisecond, func() { cancel(errors.New("config reload")) })
	rec := do(t, ctx, c, Request{})
	if rec.Error != prober.ClassCanceled || !strings.Contains(rec.ErrorMessage, "config reload") {
		t.Fatalf("record %q %q", rec.Error, rec.ErrorMessage)
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example/v1/completions", http.StatusMovedPermanently)
	}))
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var rec prober.Record
	c.Do(context.Background(), Request{ID: "r", Prompt: "hi", MaxTokens: 2}, &rec)
	if rec.Error != prober.ClassInvalidResponse || rec.HTTPStatus != 301 || !strings.Contains(rec.ErrorMessage, "elsewhere.example") {
		t.Errorf("redirect: class %q status %d message %q", rec.Error, rec.HTTPStatus, rec.ErrorMessage)
	}
}

func TestAuthorize(t *testing.T) {
	h := http.Header{}
	Authorize(h, "")
	if len(h) != 0 {
		t.Errorf("empty key set %v", h)
	}
	Authorize(h, "k-1")
	if got := h.Values("Authorization"); len(got) != 1 || got[0] != "Bearer k-1" {
		t.Errorf("Authorization = %q", got)
	}
}
