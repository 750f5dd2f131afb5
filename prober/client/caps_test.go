package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// endlessToolCalls is a chat server that streams tool-call chunks until
// the client goes away: each a new call (new) or more arguments of the
// first one.
func endlessToolCalls(new bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		args := `"` + strings.Repeat("x", 4096) + `"`
		for i := 0; r.Context().Err() == nil; i++ {
			var delta string
			switch {
			case new:
				delta = fmt.Sprintf(`{"index":%d,"function":{"name":"f","arguments":"{}"}}`, i)
			case i == 0:
				delta = `{"index":0,"function":{"name":"f","arguments":"{\"a\":"}}`
			default:
				delta = `{"index":0,"function":{"arguments":` + args + `}}`
			}
			if _, err := fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[%s]}}]}\n\n", delta); err != nil {
				return
			}
			fl.Flush()
		}
	})
}

// TestToolCallCapsEndTheRequest: a server that streams tool calls without
// end is cut off when a cap passes, as invalid_response naming the cap
// (issue 34: it read on until the timeout and was classed timeout). The
// client's timeout is a minute: a timeout class would mean the cap did
// not end the request.
func TestToolCallCapsEndTheRequest(t *testing.T) {
	for _, c := range []struct {
		name string
		new  bool
		want string
	}{
		{"calls", true, "more than 64 tool calls"},
		{"argument bytes", false, "tool call arguments larger than 1048576 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, _ := startServer(t, endlessToolCalls(c.new))
			cl := newClient(t, Options{BaseURL: url, API: APIChat, Timeout: time.Minute})
			rec := do(t, context.Background(), cl, Request{ID: "r", Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: 8,
				Tools: []Tool{{Name: "f"}}, ToolChoice: "auto"})
			if rec.Error != prober.ClassInvalidResponse || rec.ErrorMessage != c.want {
				t.Errorf("class %q message %q, want invalid_response %q", rec.Error, rec.ErrorMessage, c.want)
			}
		})
	}
}

// TestResponseHeaderTooLarge: a 20 MB header block is refused by the
// transport (net/http's 10 MB MaxResponseHeaderBytes) and classed invalid_response, not
// connect (issue 34): the server answered. So is a response that is not
// HTTP at all.
func TestResponseHeaderTooLarge(t *testing.T) {
	url, _ := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		big := strings.Repeat("a", 1<<20)
		for i := range 20 {
			w.Header().Set(fmt.Sprintf("X-Big-%d", i), big)
		}
		w.WriteHeader(http.StatusOK)
	}))
	cl := newClient(t, Options{BaseURL: url, Timeout: time.Minute})
	rec := do(t, context.Background(), cl, Request{ID: "r", Prompt: "hi", MaxTokens: 2})
	if rec.Error != prober.ClassInvalidResponse || !strings.Contains(rec.ErrorMessage, "server response headers exceeded") {
		t.Errorf("20 MB of headers: class %q message %q, want invalid_response", rec.Error, rec.ErrorMessage)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = conn.Read(buf)
			_, _ = conn.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n\r\n"))
			conn.Close()
		}
	}()
	cl = newClient(t, Options{BaseURL: "http://" + ln.Addr().String(), Timeout: time.Minute})
	rec = do(t, context.Background(), cl, Request{ID: "r", Prompt: "hi", MaxTokens: 2})
	if rec.Error != prober.ClassInvalidResponse || !strings.Contains(rec.ErrorMessage, "malformed HTTP") {
		t.Errorf("not HTTP: class %q message %q, want invalid_response", rec.Error, rec.ErrorMessage)
	}
}
