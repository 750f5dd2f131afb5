package sweepd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestRetentionBySize: before a sweep starts, the run directories are
// trimmed to --sweeps.retention.size, the oldest first and never the newest
// successful run; when that one alone is over the size, the sweep fails
// before it sends a request, with the sizes in its error.
func TestRetentionBySize(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	dir := t.TempDir()
	s := simService(t, dir, nil, url)
	good := sweepDone(t, s, "nightly")
	src := filepath.Join(dir, "sim", good.RunDir)
	run, err := dirBytes(src)
	if err != nil || run == 0 {
		t.Fatalf("run directory size %d: %v", run, err)
	}
	now := time.Now()
	newerBad := copyRun(t, src, now.Add(time.Hour), false)
	var older []string
	for i := 1; i <= 4; i++ {
		older = append(older, copyRun(t, src, now.Add(-time.Duration(i)*time.Hour), true))
	}
	// Room for two and a half runs: the four older ones go, oldest first.
	s.opts.MaxBytes = run*5/2 + 1024
	if err := s.makeRoom(); err != nil {
		t.Fatalf("makeRoom with room for two runs: %v", err)
	}
	want := []string{good.RunDir, newerBad}
	slices.Sort(want)
	if got := runDirs(s); !slices.Equal(got, want) {
		t.Errorf("after trimming to %d bytes: %v, want %v (older: %v)", s.opts.MaxBytes, got, want, older)
	}
	if total, _ := dirBytes(dir); total > s.opts.MaxBytes {
		t.Errorf("%d bytes left, over %d", total, s.opts.MaxBytes)
	}

	// Less than one run: the newest successful one stays and the next
	// sweep is not run.
	s.opts.MaxBytes = run / 2
	spec := small()
	spec = with(t, spec, "name: nightly")
	failed := startWait(t, s, spec)
	if failed.Status != StatusFailed || !strings.Contains(failed.Error, "--sweeps.retention.size") {
		t.Errorf("sweep over the size: %+v, want failed naming --sweeps.retention.size", failed)
	}
	if got := runDirs(s); !slices.Equal(got, []string{good.RunDir}) {
		t.Errorf("after a sweep that did not fit: %v, want only the newest successful run %s", got, good.RunDir)
	}
}

// TestCheckDir: a directory that can be made and written passes (and is
// made); one below a regular file fails naming the directory and the flag,
// in CheckDir and in ProbeDir, which creates nothing.
func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "sweeps")
	if err := ProbeDir(fresh); err != nil {
		t.Errorf("ProbeDir(%s): %v", fresh, err)
	}
	if _, err := os.Stat(filepath.Join(base, "a")); err == nil {
		t.Errorf("ProbeDir created %s", filepath.Join(base, "a"))
	}
	if err := CheckDir(fresh); err != nil {
		t.Errorf("CheckDir(%s): %v", fresh, err)
	}
	if es, err := os.ReadDir(fresh); err != nil || len(es) != 0 {
		t.Errorf("CheckDir left %v in %s (%v)", es, fresh, err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(file, "sweeps")
	for name, check := range map[string]func(string) error{"CheckDir": CheckDir, "ProbeDir": ProbeDir} {
		err := check(bad)
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "--sweeps.dir") {
			t.Errorf("%s(%s) = %v, want an error naming the directory and --sweeps.dir", name, bad, err)
		}
	}
}
