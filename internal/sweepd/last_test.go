package sweepd

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// countingRecorder is a recorder that also counts the sweeps' successful
// requests (capacity.RequestObserver).
type countingRecorder struct {
	*recorder
	requests atomic.Int64
}

func (c *countingRecorder) SweepRequestsDone(_ string, n int) { c.requests.Add(int64(n)) }

// TestLastHeadroomInputs: a daemon sweep reports a decided knee with the
// probe load it was measured under (the sum of the target's probes'
// rates), which the run directory keeps (metadata probe_load_rps) and the
// readback after a restart restores; every successful measured request is
// counted for the headroom rules.
func TestLastHeadroomInputs(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	dir := t.TempDir()
	rec := &countingRecorder{recorder: newRecorder()}
	s := newService(t, dir, rec)
	probes := "    probes:\n      - name: a\n        rate: 0.5\n      - name: b\n        rate: 1.5\n"
	s.Apply(targetsConfig(t, probes, "sim", url))
	done := startWait(t, s, small())
	calls := rec.calls()
	if done.Status != StatusDone || len(calls) != 1 || calls[0].last == nil {
		t.Fatalf("done %+v, calls %+v", done, calls)
	}
	l := calls[0].last
	if !l.Decided || l.ProbeLoad != 2 || l.Mode != capacity.ModeIsolated || l.Knee <= 0 || l.ServerKnee() != l.Knee+2 {
		t.Errorf("last %+v (server knee %v)", *l, l.ServerKnee())
	}
	good := 0
	for _, step := range done.Steps {
		good += step.Requests - step.Failed
	}
	if n := rec.requests.Load(); n != int64(good) || n == 0 {
		t.Errorf("%d sweep requests counted, the steps had %d successful", n, good)
	}
	s.Stop()

	back := newRecorder()
	s2 := newService(t, dir, back)
	s2.Apply(targetsConfig(t, probes, "sim", url))
	r, ok := back.restored["sim/"+done.Name]
	if !ok || !r.Decided || r.ProbeLoad != 2 || r.Knee != l.Knee {
		t.Errorf("restored %+v (ok %v), want the knee %v with probe load 2", r, ok, l.Knee)
	}
}

// TestCommandLineBackground: a background sweep's command.txt reruns it in
// the same mode and band; an isolated one names neither.
func TestCommandLineBackground(t *testing.T) {
	cfg, err := sweep.FromSpec(small(), targetsConfig(t, "", "sim", "http://127.0.0.1:1").Targets[0])
	if err != nil {
		t.Fatal(err)
	}
	if line := strings.Join(sweep.CommandLine(&cfg), " "); strings.Contains(line, "--sweep-mode") || strings.Contains(line, "--background-band") {
		t.Errorf("isolated: %s", line)
	}
	spec := small()
	spec = with(t, spec, "sweep_mode: "+sweep.SweepBackground+"\nbackground_band: 0.4")
	cfg, err = sweep.FromSpec(spec, targetsConfig(t, "", "sim", "http://127.0.0.1:1").Targets[0])
	if err != nil {
		t.Fatal(err)
	}
	if line := strings.Join(sweep.CommandLine(&cfg), " "); !strings.Contains(line, "--sweep-mode background --background-band 0.4") {
		t.Errorf("background: %s", line)
	}
}
