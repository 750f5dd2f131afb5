package web

import (
	"testing"
)

// TestProbeMessages: /probe with a module of api: messages (the Anthropic
// Messages API) measures the simulator's /v1/messages: success, status 200,
// the output tokens from message_delta's usage, TTFT and E2E.
func TestProbeMessages(t *testing.T) {
	probeSimulator(t, "  anthropic: {api: messages}\n", "anthropic", map[string]float64{"probe_success": 1,
		"probe_http_status_code": 200, "probe_output_tokens": 16, "probe_requests": 1}, "probe_ttft_seconds", "probe_e2e_seconds")
}
