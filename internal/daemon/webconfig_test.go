package daemon

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWebConfigRefusesFIFO is issue 22 D6: serve --web.config.file FIFO
// blocked at start forever (the open waited for a writer); the check now
// refuses it at once, naming the file.
func TestWebConfigRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "web.yml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- validateWebConfig(p) }()
	select {
	case err := <-errc:
		if want := p + ": not a regular file (a FIFO)"; err == nil || err.Error() != want {
			t.Errorf("validateWebConfig(FIFO) = %v, want %q", err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("validateWebConfig(FIFO) still blocked after 20 s")
	}
}
