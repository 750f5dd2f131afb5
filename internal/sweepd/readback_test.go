package sweepd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/config"
)

// TestReadBackRefusesEndlessFiles is issue 22 D4: a run directory under
// --sweeps.dir whose manifest.json or result.json is a symlink to
// /dev/zero crashed the daemon at start (out of memory reading it back);
// now the run is skipped, at once, and nothing is restored from it.
func TestReadBackRefusesEndlessFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := t.TempDir()
	manifest, err := os.ReadFile(filepath.Join("..", "report", "testdata", "runs", "20261201T090954Z-closed", artifacts.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, endless := range []string{artifacts.ManifestFile, artifacts.ResultFile} {
		run := filepath.Join(dir, "sim", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(artifacts.StampLayout)+"-nightly")
		if err := os.MkdirAll(run, 0o700); err != nil {
			t.Fatal(err)
		}
		if endless == artifacts.ResultFile {
			if err := os.WriteFile(filepath.Join(run, artifacts.ManifestFile), manifest, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("/dev/zero", filepath.Join(run, endless)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := targetsConfig(t, "    sweeps:\n      - name: nightly\n        every: 1h\n        rates: [20]\n", "sim", "http://127.0.0.1:1")
	rec := newRecorder()
	s := newService(t, dir, rec)
	done := make(chan struct{})
	go func() { defer close(done); s.Apply(cfg) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Apply still reading back the run directories after 30 s")
	}
	s.Stop()
	if len(rec.restored) != 0 {
		t.Errorf("restored %+v from endless files", rec.restored)
	}
}

// undecide rewrites the run directory's result.json as a sweep whose knee
// is undecided: no level passed, with only invalid levels under the
// failing one (issue 39's scheduled sweep).
func undecide(t *testing.T, dir string) {
	t.Helper()
	editJSON(t, filepath.Join(dir, "result.json"), func(m map[string]any) {
		k := m["knee"].(map[string]any)
		delete(k, "level")
		delete(k, "bracket_low")
		k["found"], k["state"], k["undecided"] = false, "undecided", "no_evidence_below"
		k["reason"] = "no level passed; the lowest failing level is 10, but levels 2, 4 were invalid or too short to decide, so the knee is undecided"
	})
}

// TestReadBackKeepsDecidedKnee: after a restart whose newest run is
// undecided, the knee gauges hold the newest decided knee, the previous
// knee the one before it, decided reads 0 and the undecided reason is
// exported; retention keeps the newest decided run beside the newest one.
func TestReadBackKeepsDecidedKnee(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	dir := t.TempDir()
	s := simService(t, dir, nil, url)
	done := sweepDone(t, s, "nightly")
	if done.Result == nil || done.Result.KneeState == "undecided" {
		t.Fatalf("sweep: %+v", done)
	}
	knee := done.Result.Knee
	s.Stop()
	src := filepath.Join(dir, "sim", done.RunDir)
	now := time.Now()
	older := copyRun(t, src, now.Add(-time.Hour), true)
	newest := copyRun(t, src, now.Add(time.Hour), true)
	undecide(t, filepath.Join(dir, "sim", newest))

	reg := prometheus.NewPedanticRegistry()
	sw := probemetrics.NewSweeps(reg)
	s2 := newService(t, dir, sw)
	s2.Apply(targetsConfig(t, "", "sim", url))
	// gauge is the value of the series of family name whose label values,
	// in label-name order, start with want (-1 when there is none).
	gauge := func(name string, want ...string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				got := map[string]string{}
				for _, lp := range m.GetLabel() {
					got[lp.GetName()] = lp.GetValue()
				}
				if got["target"] == want[0] && got["sweep"] == want[1] &&
					(len(want) < 3 || got["state"] == want[2] || got["reason"] == want[2]) {
					return m.GetGauge().GetValue()
				}
			}
		}
		return -1
	}
	if got := gauge(probemetrics.NameSweepKnee, "sim", "nightly"); got != knee {
		t.Errorf("knee after an undecided newest run: %v, want the last decided %v", got, knee)
	}
	if got := gauge(probemetrics.NameSweepKneePrevious, "sim", "nightly"); got != knee {
		t.Errorf("previous knee %v, want %v (the older decided run)", got, knee)
	}
	if got := gauge(probemetrics.NameSweepKneeDecided, "sim", "nightly"); got != 0 {
		t.Errorf("decided %v, want 0", got)
	}
	if got := gauge(probemetrics.NameSweepKneeUndecidedInfo, "sim", "nightly", "no_evidence_below"); got != 1 {
		t.Errorf("undecided info %v, want 1", got)
	}
	if got := gauge(probemetrics.NameSweepKneeState, "sim", "nightly", "undecided"); got != 1 {
		t.Errorf("state undecided %v, want 1", got)
	}

	// Count 1: the newest run (undecided) and the newest decided one stay.
	s2.retain("sim", "nightly", config.Retention{Count: 1})
	var left []string
	for _, sr := range s2.scan("sim") {
		left = append(left, filepath.Base(sr.dir))
	}
	slices.Sort(left)
	if want := []string{done.RunDir, newest}; !slices.Equal(left, want) {
		t.Errorf("after count 1: %v, want %v (removed %s)", left, want, older)
	}
}
