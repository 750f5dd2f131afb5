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
			name:     "tampered and extra file",
			complete: true,
			tamper: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, artifacts.CommandFile), []byte("llmprobe sweeP\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "zz-extra.txt"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantCode:   1,
			wantStdout: []string{"changed: command.txt (sha256 ", "extra: zz-extra.txt\n", "FAILED: 2 problem(s) in "},
		},
		{
			name:     "missing file",
			complete: true,
			tamper: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, artifacts.ResultFile)); err != nil {
					t.Fatal(err)
				}
			},
			wantCode:   1,
			wantStdout: []string{"missing: result.json\n", "FAILED: 1 problem(s)"},
		},
		{
			name:     "no manifest",
			complete: true,
			tamper: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, artifacts.ManifestFile)); err != nil {
					t.Fatal(err)
				}
			},
			wantCode:   2,
			wantStderr: "llmprobe: error: read manifest: ",
		},
		{
			name:     "unparsable manifest",
			complete: true,
			tamper: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, artifacts.ManifestFile), []byte("{"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
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
