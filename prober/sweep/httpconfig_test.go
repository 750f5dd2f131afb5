package sweep

import (
	"strings"
	"testing"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestSweepOverTLSWithHeader sweeps a TLS simulator that requires a header
// (as a gateway does) with an HTTP config holding its CA file and the
// header: every request succeeds, and /metrics was read through the same
// client (the header is required there too).
func TestSweepOverTLSWithHeader(t *testing.T) {
	certs := simtest.Certs(t)
	sim := simtest.Fast()
	sim.TLSCertFile, sim.TLSKeyFile = certs.CertFile, certs.KeyFile
	sim.RequireHeaders = "X-Gateway-Key: gw-secret-1"
	url, _ := simtest.Start(t, sim)
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{20}, "20", 10
	cfg.HTTPConfig = config.HTTPClientConfig{
		TLSConfig:   config.TLSConfig{CAFile: certs.CAFile},
		HTTPHeaders: &config.Headers{Headers: map[string]config.Header{"X-Gateway-Key": {Secrets: []config.Secret{"gw-secret-1"}}}},
	}
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	if !res.Complete || len(res.Steps) != 1 || res.Steps[0].Stats.Completed != 10 {
		t.Fatalf("complete %v, steps %+v", res.Complete, res.Steps)
	}
	bodies := 0
	for _, s := range sink.snaps {
		if len(s.Body) > 0 {
			bodies++
		}
		if strings.Contains(string(s.Body), "gw-secret-1") {
			t.Errorf("snapshot %s holds the header secret", s.Phase)
		}
	}
	if bodies == 0 {
		t.Errorf("no /metrics snapshot was read over TLS with the header: %+v", sink.snaps)
	}
}

// TestSweepMetricsRedirectNotFollowed: a target whose /metrics redirects
// to another port of the same host is swept with server figures
// not-recorded; nothing reaches the other port, the API key least of all.
func TestSweepMetricsRedirectNotFollowed(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	front, elsewhere := simtest.RedirectFront(t, base, "/metrics")
	cfg := testConfig(t, front)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{20}, "20", 10
	cfg.APIKey = "sk-sweep-redirect-secret"
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	if !res.Complete || res.Steps[0].Stats.Completed != 10 {
		for _, r := range sink.recs {
			if r.Record.Error != "" {
				t.Logf("failed request %s: %s: %s", r.Record.RequestID, r.Record.Error, r.Record.ErrorMessage)
			}
		}
		t.Fatalf("complete %v, steps %+v", res.Complete, res.Steps)
	}
	if got := elsewhere.Requests(); len(got) != 0 {
		t.Errorf("the sweep followed the /metrics redirect: %v", got)
	}
	found := false
	for _, s := range sink.snaps {
		found = found || strings.Contains(s.NotRecorded, "redirect to "+elsewhere.URL+"/metrics")
	}
	if !found {
		t.Errorf("no snapshot says /metrics redirects: %+v", sink.snaps)
	}
}
