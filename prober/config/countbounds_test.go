package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestCountBounds checks the bounds on the number of targets, of a
// target's probes and of its scheduled sweeps: one past each is refused
// with an error naming the list, the bound itself loads.
func TestCountBounds(t *testing.T) {
	targets := func(n int) string {
		var b strings.Builder
		b.WriteString("targets:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {name: t%d, base_url: \"http://127.0.0.1:9\"}\n", i)
		}
		return b.String()
	}
	entries := func(key string, n int, entry string) string {
		var b strings.Builder
		b.WriteString("targets:\n  - name: t\n    base_url: http://127.0.0.1:9\n    " + key + ":\n")
		for i := range n {
			fmt.Fprintf(&b, "      - "+entry+"\n", i)
		}
		return b.String()
	}
	probe := "{name: p%d, rate: 1}"
	sweep := "{name: s%d, every: 24h, rates: [1]}"
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"targets", targets(MaxTargets + 1), fmt.Sprintf("c.yml:1: targets: at most %d targets (each runs its probes; use discovery for more, bounded apart), got %d", MaxTargets, MaxTargets+1)},
		{"probes", entries("probes", MaxProbesPerTarget+1, probe), fmt.Sprintf("c.yml:4: targets[0].probes: at most %d probes a target (each runs its own arrivals and requests), got %d", MaxProbesPerTarget, MaxProbesPerTarget+1)},
		{"sweeps", entries("sweeps", MaxSweepsPerTarget+1, sweep), fmt.Sprintf("c.yml:4: targets[0].sweeps: at most %d scheduled sweeps a target, got %d", MaxSweepsPerTarget, MaxSweepsPerTarget+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), "c.yml")
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v\nwant %s", err, c.want)
			}
		})
	}
	for name, y := range map[string]string{
		"targets": targets(MaxTargets),
		"probes":  entries("probes", MaxProbesPerTarget, probe),
		"sweeps":  entries("sweeps", MaxSweepsPerTarget, sweep),
	} {
		if _, err := Parse([]byte(y), "c.yml"); err != nil {
			t.Errorf("%s at the bound: %v", name, err)
		}
	}
}
