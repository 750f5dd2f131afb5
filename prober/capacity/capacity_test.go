package capacity

import "testing"

// TestServerKnee: the server's total rate at the knee adds the probe load
// to an isolated sweep's knee, takes a background sweep's total as it is,
// and is 0 for a knee that was not decided (no figure of capacity).
func TestServerKnee(t *testing.T) {
	for _, tt := range []struct {
		name string
		l    Last
		want float64
	}{
		{"isolated", Last{Knee: 10, Decided: true, ProbeLoad: 1.5, Mode: ModeIsolated}, 11.5},
		{"before the modes", Last{Knee: 10, Decided: true, ProbeLoad: 1}, 11},
		{"background", Last{Knee: 24, Decided: true, ProbeLoad: 1, Production: 8, Mode: ModeBackground}, 24},
		{"a knee of 0, decided", Last{Knee: 0, Decided: true, ProbeLoad: 1}, 1},
		{"undecided", Last{Knee: 5, ProbeLoad: 1}, 0},
	} {
		if got := tt.l.ServerKnee(); got != tt.want {
			t.Errorf("%s: ServerKnee() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
