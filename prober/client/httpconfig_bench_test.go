package client

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// BenchmarkTransport is one whole request of 64 token events over loopback
// against the simulator's light mode (no delays), through the tuned
// NewTransport and through NewHTTPClient's prometheus/common round tripper
// (a zero config, and one with a header and a bearer token): what building
// every target's client from its HTTPClientConfig costs per request.
func BenchmarkTransport(b *testing.B) {
	cfg := simtest.Fast()
	cfg.Light.Enabled, cfg.Light.TTFT, cfg.Light.Gap, cfg.Light.Tokens = true, 0, 0, 64
	base, _ := simtest.Start(b, cfg)
	withAuth := config.HTTPClientConfig{
		Authorization: &config.Authorization{Type: "Bearer", Credentials: "tok"},
		HTTPHeaders:   &config.Headers{Headers: map[string]config.Header{"X-Gateway-Key": {Secrets: []config.Secret{"s"}}}},
	}
	for _, tc := range []struct {
		name string
		hc   func() *http.Client
	}{
		{"NewTransport", func() *http.Client { return &http.Client{Transport: NewTransport(), CheckRedirect: NoRedirects} }},
		{"NewHTTPClient", func() *http.Client { c, _ := NewHTTPClient(config.HTTPClientConfig{}, "bench", nil); return c }},
		{"NewHTTPClient+auth+header", func() *http.Client { c, _ := NewHTTPClient(withAuth, "bench", nil); return c }},
		// With the Redactor every target's client has: the hook that
		// registers each credential header as it is written.
		{"NewHTTPClient+auth+header+redactor", func() *http.Client {
			c, _ := NewHTTPClient(withAuth, "bench", redact.New())
			return c
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hc := tc.hc()
			defer hc.CloseIdleConnections()
			c, err := New(Options{BaseURL: base, Model: cfg.Model, HTTPClient: hc})
			if err != nil {
				b.Fatal(err)
			}
			req := Request{ID: "bench", Prompt: "a prompt of a few words", MaxTokens: 64, IgnoreEOS: true}
			ctx := context.Background()
			b.ReportAllocs()
			cpu := testutil.ProcessCPU()
			for b.Loop() {
				rec := prober.Record{Scheduled: time.Now()}
				c.Do(ctx, req, &rec)
				if !rec.OK() {
					b.Fatalf("%s: %s", rec.Error, rec.ErrorMessage)
				}
			}
			b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
