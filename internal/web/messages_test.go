package web

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestProbeMessages: /probe with a module of api: messages (the Anthropic
// Messages API) measures the simulator's /v1/messages: success, status 200,
// the output tokens from message_delta's usage, TTFT and E2E.
func TestProbeMessages(t *testing.T) {
	sim, _ := simtest.Start(t, simtest.Fast())
	base := probeServer(t, probeConfig(t, "  anthropic: {api: messages}\n", sim))
	code, body := getProbe(t, base, url.Values{"target": {sim}, "module": {"anthropic"}})
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	mfs := families(t, body)
	for _, want := range []struct {
		name string
		v    float64
	}{{"probe_success", 1}, {"probe_http_status_code", 200}, {"probe_output_tokens", 16}, {"probe_requests", 1}} {
		if v, ok := gaugeValue(mfs, want.name, "", ""); !ok || v != want.v {
			t.Errorf("%s = %v (present %v), want %v\n%s", want.name, v, ok, want.v, body)
		}
	}
	for _, name := range []string{"probe_ttft_seconds", "probe_e2e_seconds"} {
		if v, ok := gaugeValue(mfs, name, "", ""); !ok || v <= 0 {
			t.Errorf("%s = %v (present %v), want > 0", name, v, ok)
		}
	}
}
