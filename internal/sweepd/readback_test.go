package sweepd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
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
