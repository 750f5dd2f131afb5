package manager_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// tlsGateway starts a TLS simulator that requires X-Gateway-Key: want and
// returns its URL and CA file.
func tlsGateway(t *testing.T, want string) (string, string) {
	t.Helper()
	certs := simtest.Certs(t)
	cfg := fastSim()
	cfg.TLSCertFile, cfg.TLSKeyFile = certs.CertFile, certs.KeyFile
	cfg.RequireHeaders = "X-Gateway-Key: " + want
	base, _ := simtest.Start(t, cfg)
	return base, certs.CAFile
}

// TestDaemonTLSAndRequiredHeader probes a TLS gateway with its CA file and
// the header it requires, given in http_config: every request succeeds.
func TestDaemonTLSAndRequiredHeader(t *testing.T) {
	base, ca := tlsGateway(t, "gw-daemon-secret")
	_, _, col := start(t, parse(t, fmt.Sprintf(`targets:
  - name: gw
    base_url: %s
    http_config:
      tls_config: {ca_file: %s}
      http_headers: {X-Gateway-Key: {secrets: [gw-daemon-secret]}}
    probes: [{name: p, rate: 20}]
`, base, ca)))
	evs := col.waitFor(t, 10*time.Second, "5 records", atLeast(5))
	for _, e := range evs {
		if !e.Record.OK() {
			t.Errorf("record %s: %s %q", e.Record.RequestID, e.Record.Error, e.Record.ErrorMessage)
		}
	}
}

// TestDaemonEchoedHeaderSecret sends a header value the gateway refuses and
// echoes in its 401: no record, status or error holds it.
func TestDaemonEchoedHeaderSecret(t *testing.T) {
	const secret = "echoed-daemon-secret-31"
	base, ca := tlsGateway(t, "the-right-value")
	m, _, col := start(t, parse(t, fmt.Sprintf(`targets:
  - name: gw
    base_url: %s
    model: llmprobe-sim
    http_config:
      tls_config: {ca_file: %s}
      http_headers: {X-Gateway-Key: {secrets: [%s]}}
    probes: [{name: p, rate: 20}]
`, base, ca, secret)))
	evs := col.waitFor(t, 10*time.Second, "5 records", atLeast(5))
	echoed := false
	for _, e := range evs {
		if e.Record.Error != prober.ClassHTTP4xx {
			t.Errorf("class %q (%s), want http_4xx", e.Record.Error, e.Record.ErrorMessage)
		}
		echoed = echoed || strings.Contains(e.Record.ErrorMessage, "wrong value for header X-Gateway-Key")
		if strings.Contains(e.Record.ErrorMessage, secret) {
			t.Errorf("the secret is in an error message: %q", e.Record.ErrorMessage)
		}
	}
	if !echoed {
		t.Error("no record carries the gateway's echo: the check would pass vacuously")
	}
	if s := fmt.Sprintf("%+v", m.Status()); strings.Contains(s, secret) {
		t.Error("the secret is in the status")
	}
}

// TestDaemonRedirectNotFollowed: a generation answered with a redirect to
// another port of the same host fails as invalid_response naming the
// Location; nothing, and no API key, reaches that port.
func TestDaemonRedirectNotFollowed(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	front, elsewhere := simtest.RedirectFront(t, base, "/v1/completions")
	t.Setenv("LLMPROBE_TEST_KEY", "sk-daemon-redirect-key")
	_, _, col := start(t, parse(t, fmt.Sprintf(
		"targets: [{name: r, base_url: %s, api_key_env: LLMPROBE_TEST_KEY, probes: [{name: p, rate: 20}]}]", front)))
	evs := col.waitFor(t, 10*time.Second, "5 records", atLeast(5))
	for _, e := range evs {
		if e.Record.Error != prober.ClassInvalidResponse || !strings.Contains(e.Record.ErrorMessage, "redirect to "+elsewhere.URL) {
			t.Errorf("record: %s %q, want invalid_response naming the redirect", e.Record.Error, e.Record.ErrorMessage)
		}
	}
	if got := elsewhere.Requests(); len(got) != 0 {
		t.Errorf("the daemon followed redirects: %v", got)
	}
}
