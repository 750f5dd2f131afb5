package simulator_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/workload"
)

func TestEmbeddedCapacity(t *testing.T) {
	tests := []struct {
		name string
		spec workload.Spec
		want float64
	}{
		{"fixed lengths: the simulator's formula", workload.DefaultSpec(), simulator.DefaultConfig().Capacity(64, 16)},
		{"a prefix: unknown", workload.Spec{InputTokens: workload.Fixed(64), OutputTokens: workload.Fixed(16), PrefixTokens: 32}, 0},
		{"a distribution: unknown", workload.Spec{InputTokens: workload.LengthSpec{Dist: workload.DistUniform, Value: 64, RangeRatio: 0.5},
			OutputTokens: workload.Fixed(16)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := simulator.EmbeddedCapacity(tt.spec); got != tt.want || (tt.want != 0 && got < 100) {
				t.Errorf("EmbeddedCapacity = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStartEmbedded serves the simulator on loopback and stops it: its
// /v1/models answers until stop, then the port is closed.
func TestStartEmbedded(t *testing.T) {
	stop, url, err := simulator.StartEmbedded(log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models: %s", resp.Status)
	}
	stop()
	http.DefaultClient.CloseIdleConnections()
	if resp, err := http.Get(url + "/v1/models"); err == nil {
		resp.Body.Close()
		t.Errorf("GET /v1/models after stop: %s, want a refused connection", resp.Status)
	}
}
