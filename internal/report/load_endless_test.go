package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
)

// copyRun copies a golden run directory's result.json and manifest.json
// into a temporary one.
func copyRun(t *testing.T) string {
	t.Helper()
	src := filepath.Join("testdata", "runs", "20261201T090954Z-closed")
	dir := t.TempDir()
	for _, f := range []string{artifacts.ResultFile, artifacts.ManifestFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadRefusesEndlessFiles is issue 22 D4 and D6: a result.json or
// manifest.json that is a symlink to /dev/zero ran Load (and the daemon's
// read-back of --sweeps.dir) out of memory, and a FIFO blocked it forever;
// each is now an error naming the file, at once.
func TestLoadRefusesEndlessFiles(t *testing.T) {
	for _, f := range []string{artifacts.ResultFile, artifacts.ManifestFile} {
		for _, kind := range []string{"a character device", "a FIFO"} {
			dir := copyRun(t)
			p := filepath.Join(dir, f)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if kind == "a FIFO" {
				if err := syscall.Mkfifo(p, 0o600); err != nil {
					t.Skip("no FIFOs:", err)
				}
			} else if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { _, err := Load(dir); errc <- err }()
			select {
			case err := <-errc:
				if want := p + ": not a regular file (" + kind + ")"; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s as %s: Load = %v, want %q", f, kind, err, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s as %s: Load still running after 20 s", f, kind)
			}
		}
	}
}
