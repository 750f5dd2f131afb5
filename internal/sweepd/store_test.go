package sweepd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/config"
)

// copyRun copies run directory src to a sibling whose stamp is at, with the
// manifest's complete flag set as given; it returns the copy's base name.
func copyRun(t *testing.T, src string, at time.Time, complete bool) string {
	t.Helper()
	dst := filepath.Join(filepath.Dir(src), at.UTC().Format(artifacts.StampLayout)+"-nightly")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if !complete {
		editJSON(t, filepath.Join(dst, artifacts.ManifestFile), func(m map[string]any) { m["complete"] = false })
	}
	return filepath.Base(dst)
}

// editJSON rewrites the JSON object in file path with edit.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRetention keeps at most count run directories of a sweep name and
// none older than age, but always the newest successful one.
func TestRetention(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	dir := t.TempDir()
	s := simService(t, dir, nil, url)
	good := sweepDone(t, s, "nightly")
	now := time.Now()
	src := filepath.Join(dir, "sim", good.RunDir)
	newerBad := copyRun(t, src, now.Add(time.Hour), false)
	h1 := copyRun(t, src, now.Add(-time.Hour), true)
	h2 := copyRun(t, src, now.Add(-2*time.Hour), true)
	h3 := copyRun(t, src, now.Add(-3*time.Hour), true)
	old := copyRun(t, src, now.Add(-30*24*time.Hour), true)
	// Count 3 and 7 days: the interrupted newest, the good one, one more.
	s.retain("sim", "nightly", config.Retention{Count: 3, Age: config.Duration(7 * 24 * time.Hour)})
	want := []string{h1, good.RunDir, newerBad}
	slices.Sort(want)
	if got := runDirs(s); !slices.Equal(got, want) {
		t.Errorf("after count 3, age 7d: %v, want %v (removed: %s %s %s)", got, want, h2, h3, old)
	}
	// Count 1: the newest successful one stays, even though it is not the
	// newest.
	s.retain("sim", "nightly", config.Retention{Count: 1})
	if got := runDirs(s); !slices.Equal(got, []string{good.RunDir}) {
		t.Errorf("after count 1: %v, want [%s]", got, good.RunDir)
	}
}

// sweepDone runs small() named name against target "sim" through the API
// and returns its status once done; a sweep that did not end done fails
// the test.
func sweepDone(t *testing.T, s *Service, name string) Status {
	t.Helper()
	spec := small()
	spec = with(t, spec, "name: "+name)
	done := startWait(t, s, spec)
	if done.Status != StatusDone {
		t.Fatalf("sweep: %+v", done)
	}
	return done
}

// runDirs lists the names of target "sim"'s run directories, sorted.
func runDirs(s *Service) []string {
	var names []string
	for _, sr := range s.scan("sim") {
		names = append(names, filepath.Base(sr.dir))
	}
	slices.Sort(names)
	return names
}

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
