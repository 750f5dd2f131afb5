package client

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCollect: Request.Collect receives the generated text of both APIs,
// unescaped and in order, and nothing from role-only, finish-only or usage
// chunks.
func TestCollect(t *testing.T) {
	t.Run("completions", func(t *testing.T) {
		url, _ := startServer(t, script(now(tok("Hello")), now(tok(", \"wor\\ld\"\n")), now(tokFinish("", "length")),
			now(usage(3, 2)), now(done)))
		c := newClient(t, Options{BaseURL: url})
		var buf bytes.Buffer
		rec := do(t, context.Background(), c, Request{ID: "r1", Collect: &buf})
		if rec.Error != "" {
			t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
		}
		if got, want := buf.String(), "Hello, \"wor\\ld\"\n"; got != want {
			t.Errorf("collected %q, want %q", got, want)
		}
	})
	t.Run("chat", func(t *testing.T) {
		url, _ := startServer(t, script(now(chatDelta(`{"role":"assistant","content":""}`)),
			now(chatDelta(`{"content":"{\"a\":"}`)), now(chatDelta(`{"content":"1}"}`)),
			now(usage(3, 2)), now(done)))
		c := newClient(t, Options{BaseURL: url, API: APIChat})
		var buf bytes.Buffer
		rec := do(t, context.Background(), c, Request{ID: "r2", Collect: &buf})
		if rec.Error != "" {
			t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
		}
		if got, want := buf.String(), `{"a":1}`; got != want {
			t.Errorf("collected %q, want %q", got, want)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		big := strings.Repeat("x", 512<<10)
		parts := []part{}
		for range 10 {
			parts = append(parts, now(tok(big)))
		}
		parts = append(parts, now(done))
		url, _ := startServer(t, script(parts...))
		c := newClient(t, Options{BaseURL: url})
		var buf bytes.Buffer
		rec := do(t, context.Background(), c, Request{ID: "r3", Collect: &buf})
		if rec.Error != "" {
			t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
		}
		if buf.Len() != MaxCollect {
			t.Errorf("collected %d bytes, want the bound %d", buf.Len(), MaxCollect)
		}
	})
}
