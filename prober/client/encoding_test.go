package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober"
)

// TestUnsolicitedContentEncoding: the client never asks for compression
// (no Accept-Encoding), so a body the server encoded anyway is not the
// stream it was asked for: invalid_response naming the encoding, never
// "stream" (as if the server had cut a good stream).
func TestUnsolicitedContentEncoding(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, tok("a")+tok("b")+usage(3, 2)+done)
	_ = zw.Close()
	for _, tc := range []struct {
		name, encoding string
		body           []byte
		wantClass      prober.ErrorClass
	}{
		{"gzip", "gzip", gz.Bytes(), prober.ClassInvalidResponse},
		{"gzip upper case with spaces", " GZIP ", gz.Bytes(), prober.ClassInvalidResponse},
		{"br label on a plain body", "br", []byte(tok("a") + done), prober.ClassInvalidResponse},
		{"identity is no encoding", "identity", []byte(tok("a") + usage(3, 1) + done), prober.ClassNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var accept []string
			base, _ := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				accept = r.Header.Values("Accept-Encoding")
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", tc.encoding)
				_, _ = w.Write(tc.body)
			}))
			c := newClient(t, Options{BaseURL: base})
			rec := do(t, context.Background(), c, Request{Prompt: "p", MaxTokens: 2})
			if rec.Error != tc.wantClass {
				t.Fatalf("class %q (%s), want %q", rec.Error, rec.ErrorMessage, tc.wantClass)
			}
			if tc.wantClass != prober.ClassNone && !strings.Contains(rec.ErrorMessage, "content encoding") {
				t.Errorf("message %q does not name the content encoding", rec.ErrorMessage)
			}
			if len(accept) != 0 {
				t.Errorf("client sent Accept-Encoding %q; the check assumes it asks for none", accept)
			}
		})
	}
}

// echoPanicTransport panics with the request's Authorization header (and
// an error wrapping it), as a buggy transport or middleware might.
type echoPanicTransport struct{ asError bool }

func (e echoPanicTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if e.asError {
		panic(fmt.Errorf("middleware: header %s", r.Header.Get("Authorization")))
	}
	panic("bad header " + r.Header.Get("Authorization"))
}

// TestPanicMessageIsRedacted: a panic inside a request becomes a failed
// Record whose message never holds the API key, whatever the panic value
// (the secrets surface "panics" of docs/security.md).
func TestPanicMessageIsRedacted(t *testing.T) {
	for _, asError := range []bool{false, true} {
		c := newClient(t, Options{BaseURL: "http://127.0.0.1:1", APIKey: testKey,
			HTTPClient: &http.Client{Transport: echoPanicTransport{asError}}})
		rec := do(t, context.Background(), c, Request{ID: "x"})
		if rec.Error != prober.ClassInvalidResponse || !strings.Contains(rec.ErrorMessage, "internal error") {
			t.Fatalf("record %q %q", rec.Error, rec.ErrorMessage)
		}
		if strings.Contains(rec.ErrorMessage, testKey) || !strings.Contains(rec.ErrorMessage, "<secret>") {
			t.Errorf("panic message not redacted: %q", rec.ErrorMessage)
		}
	}
}
