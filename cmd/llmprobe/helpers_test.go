package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// wantUsageError runs `llmprobe args...` and requires exit 2 and one line
// on stderr starting with want.
func wantUsageError(t *testing.T, args []string, want string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	if code != 2 {
		t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
	}
	if got := stderr.String(); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("stderr = %q, want one line starting with %q", got, want)
	}
}

// runOK runs `llmprobe args...`, which must exit 0, and returns its stdout
// and stderr.
func runOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	if code := run(context.Background(), args, &o, &e); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, e.String())
	}
	return o.String(), e.String()
}

// onlyRunDir returns the one path matching filepath.Join(parts...).
func onlyRunDir(t *testing.T, parts ...string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(parts...))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v", dirs)
	}
	return dirs[0]
}

// readJSON decodes the JSON file path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// loadRun reads a run directory's result (report.Load).
func loadRun(t *testing.T, dir string) *sweep.Result {
	t.Helper()
	res, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
