package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestPlacementArgv(t *testing.T) {
	for _, tc := range []struct {
		p    Placement
		cpu  string
		want []string
		str  string
	}{
		{Placement{}, "", []string{"exe", "a"}, "not pinned"},
		{Placement{Pinned: true, ProberCPU: "0", ServerCPU: "1"}, "0", []string{"taskset", "-c", "0", "exe", "a"}, "taskset -c 0: llmprobe"},
		{Placement{Pinned: true, ProberCPU: "0", ServerCPU: "1", Realtime: true}, "1",
			[]string{"chrt", "-f", "1", "taskset", "-c", "1", "exe", "a"}, "both under chrt -f 1"},
		{Placement{Note: "--no-pin", Realtime: true}, "", []string{"chrt", "-f", "1", "exe", "a"}, "not pinned (--no-pin)"},
		{Placement{Note: "--no-pin", RealtimeNote: "--realtime: chrt not found"}, "", []string{"exe", "a"}, "not real-time (--realtime: chrt not found)"},
	} {
		if got := tc.p.argv(tc.cpu, "exe", "a"); !slices.Equal(got, tc.want) {
			t.Errorf("%+v argv = %q, want %q", tc.p, got, tc.want)
		}
		if s := tc.p.String(); !strings.Contains(s, tc.str) {
			t.Errorf("%+v String = %q, want it to contain %q", tc.p, s, tc.str)
		}
	}
	if ok, note := realtime(false, Placement{Pinned: true}); ok || note != "" {
		t.Errorf("realtime(false) = %v, %q", ok, note)
	}
	if ok, note := realtime(true, Placement{Note: "--no-pin"}); ok || !strings.Contains(note, "pinned") {
		t.Errorf("realtime(true) unpinned = %v, %q, want a note that it needs pinning", ok, note)
	}
	env := []string{"A=1"}
	if got := (Placement{Pinned: true, Realtime: true}).env(env); !slices.Equal(got, []string{"A=1", "GOMAXPROCS=1"}) || len(env) != 1 {
		t.Errorf("real-time env = %q (given %q)", got, env)
	}
	if got := (Placement{Pinned: true}).env(env); !slices.Equal(got, env) {
		t.Errorf("env = %q, want %q", got, env)
	}
}
