package client

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestPhasesOverHTTP measures the HTTP phases of three requests in a row
// over real HTTP against the simulator: the first on a new connection
// (connect; TLS over https; resolve when the host is a name), the next two
// on the kept-alive connection, which have no resolve, connect or TLS
// phase. Every request writes, waits, gets its first token and transfers
// (unless its whole stream arrived with the first token), and the phases
// before the first token fit in its TTFT.
func TestPhasesOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tls, hostname bool
	}{
		{name: "http"},
		{name: "https by name", tls: true, hostname: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simtest.Fast()
			var hcfg config.HTTPClientConfig
			if tc.tls {
				certs := simtest.Certs(t)
				cfg.TLSCertFile, cfg.TLSKeyFile = certs.CertFile, certs.KeyFile
				hcfg.TLSConfig.CAFile = certs.CAFile
			}
			base, _ := simtest.Start(t, cfg)
			if tc.hostname {
				base = strings.Replace(base, "127.0.0.1", "localhost", 1)
			}
			hc, err := NewHTTPClient(hcfg, "test", nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(hc.CloseIdleConnections)
			c := newClient(t, Options{BaseURL: base, Model: cfg.Model, HTTPClient: hc, Trace: true})
			for i := range 3 {
				rec := do(t, context.Background(), c, Request{ID: "phases", Prompt: "hello there", MaxTokens: 8, IgnoreEOS: true})
				if !rec.OK() {
					t.Fatalf("request %d: %s %s", i, rec.Error, rec.ErrorMessage)
				}
				newConn := i == 0
				checkPhase(t, i, &rec, prober.PhaseConnect, newConn)
				checkPhase(t, i, &rec, prober.PhaseTLS, newConn && tc.tls)
				checkPhase(t, i, &rec, prober.PhaseResolve, newConn && tc.hostname)
				for _, p := range []prober.Phase{prober.PhaseRequest, prober.PhaseWait, prober.PhaseFirstToken} {
					checkPhase(t, i, &rec, p, true)
				}
				// A reader that a busy machine kept waiting finds the whole
				// stream in the read that brings its first token: the
				// transfer then took no measurable time and is not observed.
				checkPhase(t, i, &rec, prober.PhaseTransfer, max(rec.Done, rec.E2E) > rec.TTFT)
				var before time.Duration
				for _, p := range prober.Phases[:5] {
					before += rec.PhaseTime(p)
				}
				if before+rec.FirstTokenTime > rec.TTFT {
					t.Errorf("request %d: phases to the first token sum to %v, over TTFT %v", i, before+rec.FirstTokenTime, rec.TTFT)
				}
				if end := max(rec.Done, rec.E2E); rec.TTFT+rec.TransferTime != end {
					t.Errorf("request %d: TTFT %v + transfer %v != end of stream %v", i, rec.TTFT, rec.TransferTime, end)
				}
			}
		})
	}
}

// checkPhase fails t unless phase p of request i was observed exactly when
// want says it happened.
func checkPhase(t *testing.T, i int, rec *prober.Record, p prober.Phase, want bool) {
	t.Helper()
	if got := rec.PhaseTime(p); (got > 0) != want {
		t.Errorf("request %d: phase %s = %v, want observed=%v", i, p, got, want)
	}
}

// TestPhasesNoStream: a non-streamed request waits for its response and
// transfers its body; it has no first token.
func TestPhasesNoStream(t *testing.T) {
	cfg := simtest.Fast()
	base, _ := simtest.Start(t, cfg)
	c := newClient(t, Options{BaseURL: base, Model: cfg.Model, Trace: true})
	rec := do(t, context.Background(), c, Request{ID: "nostream", Prompt: "hello", MaxTokens: 4, IgnoreEOS: true, NoStream: true})
	if !rec.OK() || !rec.NoStream {
		t.Fatalf("%s %s (no_stream %v)", rec.Error, rec.ErrorMessage, rec.NoStream)
	}
	checkPhase(t, 0, &rec, prober.PhaseConnect, true)
	checkPhase(t, 0, &rec, prober.PhaseWait, true)
	checkPhase(t, 0, &rec, prober.PhaseFirstToken, false)
	checkPhase(t, 0, &rec, prober.PhaseTransfer, true)
	if sum := rec.ConnectTime + rec.WriteTime + rec.WaitTime + rec.TransferTime; sum > rec.E2E {
		t.Errorf("phases sum to %v, over E2E %v", sum, rec.E2E)
	}
}

// TestPhasesOff: without Options.Trace no phase is measured.
func TestPhasesOff(t *testing.T) {
	cfg := simtest.Fast()
	base, _ := simtest.Start(t, cfg)
	c := newClient(t, Options{BaseURL: base, Model: cfg.Model})
	rec := do(t, context.Background(), c, Request{ID: "off", Prompt: "hello", MaxTokens: 4, IgnoreEOS: true})
	if !rec.OK() {
		t.Fatalf("%s %s", rec.Error, rec.ErrorMessage)
	}
	for _, p := range prober.Phases {
		if d := rec.PhaseTime(p); d != 0 {
			t.Errorf("phase %s = %v with tracing off", p, d)
		}
	}
}

// BenchmarkMeasurePhases is BenchmarkMeasure's per-event hot path with the
// HTTP phases on: the same 256-token stream through the measurer, then the
// streaming phases derived from the Record (setStreamPhases) as an attempt
// with Options.Trace does. Compare its allocs/event with BenchmarkMeasure's:
// the phases add nothing per token.
func BenchmarkMeasurePhases(b *testing.B) {
	const tokens = 256
	evs := benchStream(tokens, false)
	rec := measureBench{api: &apis[0], tokens: tokens, next: func() io.Reader { return &eventReader{evs: evs} }, unit: "event", perRun: len(evs), phases: true}.run(b)
	if rec.FirstTokenTime <= 0 || rec.TransferTime <= 0 {
		b.Fatalf("phases not set: first_token %v transfer %v", rec.FirstTokenTime, rec.TransferTime)
	}
}
