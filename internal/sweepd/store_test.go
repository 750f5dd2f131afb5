package sweepd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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
		p := filepath.Join(dst, artifacts.ManifestFile)
		b, _ := os.ReadFile(p)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["complete"] = false
		b, _ = json.Marshal(m)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Base(dst)
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
