package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
)

// writeFiles is a tamper that writes each name, content pair into the run
// directory.
func writeFiles(nameContent ...string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		for i := 0; i+1 < len(nameContent); i += 2 {
			if err := os.WriteFile(filepath.Join(dir, nameContent[i]), []byte(nameContent[i+1]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// removeFile is a tamper that deletes name from the run directory.
func removeFile(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyTestRun writes a finished run directory with two files.
func verifyTestRun(t *testing.T, complete bool) string {
	t.Helper()
	r, err := artifacts.Create(t.TempDir(), "verify", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(artifacts.CommandFile, []byte("llmprobe sweep\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(artifacts.ResultFile, map[string]any{"steps": []any{}}); err != nil {
		t.Fatal(err)
	}
	m := artifacts.Manifest{Fingerprint: fingerprint.New([]string{"llmprobe", "sweep"}, time.Now())}
	if !complete {
		m.InterruptedReason = "SIGINT"
	}
	if err := r.Finish(m, complete); err != nil {
		t.Fatal(err)
	}
	return r.Dir()
}

func TestVerifyCommand(t *testing.T) {
	tests := []struct {
		name       string
		complete   bool
		tamper     func(t *testing.T, dir string)
		wantCode   int
		wantStdout []string
		wantStderr string
	}{
		{
			name:       "intact",
			complete:   true,
			tamper:     func(*testing.T, string) {},
			wantCode:   0,
			wantStdout: []string{"OK: 2 files verified\n"},
		},
		{
			name:       "interrupted but intact",
			complete:   false,
			tamper:     func(*testing.T, string) {},
			wantCode:   0,
			wantStdout: []string{"note: the run is incomplete (interrupted: SIGINT)\n", "OK: 2 files verified\n"},
		},
		{
			name:       "tampered and extra file",
			complete:   true,
			tamper:     writeFiles(artifacts.CommandFile, "llmprobe sweeP\n", "zz-extra.txt", ""),
			wantCode:   1,
			wantStdout: []string{"changed: command.txt (sha256 ", "extra: zz-extra.txt\n", "FAILED: 2 problem(s) in "},
		},
		{
			name:       "missing file",
			complete:   true,
			tamper:     removeFile(artifacts.ResultFile),
			wantCode:   1,
			wantStdout: []string{"missing: result.json\n", "FAILED: 1 problem(s)"},
		},
		{
			name:       "no manifest",
			complete:   true,
			tamper:     removeFile(artifacts.ManifestFile),
			wantCode:   2,
			wantStderr: "llmprobe: error: read manifest: ",
		},
		{
			name:       "unparsable manifest",
			complete:   true,
			tamper:     writeFiles(artifacts.ManifestFile, "{"),
			wantCode:   2,
			wantStderr: "llmprobe: error: parse ",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := verifyTestRun(t, tc.complete)
			tc.tamper(t, dir)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"verify", dir}, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tc.wantStdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if !strings.HasPrefix(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr = %q, want prefix %q", stderr.String(), tc.wantStderr)
			}
		})
	}
	t.Run("directory argument is required", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"verify"}, &stdout, &stderr); code != 2 {
			t.Errorf("exit code %d, want 2", code)
		}
	})
}

// TestVerifyPartialCommand pins `verify --partial`: a directory a killed
// sweep left (no manifest), the same with a record cut in the middle, a
// finished one, and one that does not exist.
func TestVerifyPartialCommand(t *testing.T) {
	killed := func(t *testing.T, cut bool) string {
		t.Helper()
		r, err := artifacts.Create(t.TempDir(), "killed", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := r.Append(artifacts.RecordsFile)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { recs.Close() })
		for i := range 3 {
			if err := recs.WriteLine(map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		if err := recs.Flush(); err != nil {
			t.Fatal(err)
		}
		if cut {
			f, err := os.OpenFile(filepath.Join(r.Dir(), artifacts.RecordsFile+artifacts.PartialSuffix), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(`{"i":3,"tru`); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		return r.Dir()
	}
	tests := []struct {
		name       string
		dir        func(t *testing.T) string
		wantCode   int
		wantStdout []string
		wantStderr string
	}{
		{name: "killed, whole records", dir: func(t *testing.T) string { return killed(t, false) }, wantCode: 0,
			wantStdout: []string{"note: no manifest.json (the run did not finish)\n", "OK: 1 files, 3 whole records\n"}},
		{name: "killed mid-record", dir: func(t *testing.T) string { return killed(t, true) }, wantCode: 1,
			wantStdout: []string{"truncated: records.jsonl.partial (line 4 has no newline: the file ends mid-record)\n",
				"note: no manifest.json (the run did not finish)\n", "FAILED: 1 problem(s) in ", " (3 records)\n"}},
		{name: "finished", dir: func(t *testing.T) string { return verifyTestRun(t, false) }, wantCode: 0,
			wantStdout: []string{"OK: 2 files, 0 whole records\n"}},
		{name: "no directory", dir: func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, wantCode: 2,
			wantStderr: "llmprobe: error: stat "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"verify", "--partial", tc.dir(t)}, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tc.wantStdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if tc.wantCode == 0 && strings.Contains(stdout.String(), "incomplete") {
				t.Errorf("--partial prints the manifest's incomplete note:\n%s", stdout.String())
			}
			if !strings.HasPrefix(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr = %q, want prefix %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}
