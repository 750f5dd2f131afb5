package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// loadInputErr runs LoadInput(path), failing the test if it has not
// returned in 20 s (the safety net: a FIFO blocked it forever).
func loadInputErr(t *testing.T, path string) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { _, err := LoadInput(path); errc <- err }()
	select {
	case err := <-errc:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("LoadInput(%s) still running after 20 s", path)
		return nil
	}
}

// TestLoadInputRefusesEndlessFiles is issue 22 D4 and D6 for analyze: a run
// directory's result.json as a symlink to /dev/zero ran it out of memory,
// and a result file or vllm directory's file that is a FIFO blocked it
// forever; each is now an error naming the file.
func TestLoadInputRefusesEndlessFiles(t *testing.T) {
	run := t.TempDir()
	if err := os.WriteFile(filepath.Join(run, artifacts.ManifestFile), []byte(`{"schema_version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(run, artifacts.ResultFile)
	if err := os.Symlink("/dev/zero", res); err != nil {
		t.Fatal(err)
	}
	if err := loadInputErr(t, run); err == nil || !strings.Contains(err.Error(), res+": not a regular file (a character device)") {
		t.Errorf("result.json -> /dev/zero: LoadInput = %v", err)
	}

	vllm := t.TempDir()
	fifo := filepath.Join(vllm, "step.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	for _, p := range []string{vllm, fifo} {
		if err := loadInputErr(t, p); err == nil || !strings.Contains(err.Error(), fifo+": not a regular file (a FIFO)") {
			t.Errorf("LoadInput(%s) with a FIFO = %v", p, err)
		}
	}
}

// TestServerLogFIFO is issue 22 D6 for --server-log: a log that is a FIFO
// blocked the step's end forever (its open waits for a writer); the step's
// section now says the file is not a regular file.
func TestServerLogFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "vllm.log")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	l := newServerLog(p, nil, nil)
	st := &sweep.Step{Index: 0, Label: "c1"}
	done := make(chan struct{})
	go func() { defer close(done); l.StepStarted(st, 1); l.StepDone(st) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the server log's copy still blocked after 20 s")
	}
	if want := p + ": not a regular file (a FIFO)"; !strings.Contains(l.buf.String(), want) {
		t.Errorf("server log:\n%s\nwant %q", l.buf.String(), want)
	}
}
