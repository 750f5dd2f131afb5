package config

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLoadersRefuseFIFO is issue 22 D6: a configuration, workload or HTTP
// config file that is a FIFO blocked check-config and serve forever (its
// open waits for a writer); each loader now refuses it at once, naming the
// file.
func TestLoadersRefuseFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	for _, c := range []struct {
		name string
		load func() error
		want string
	}{
		{"Load", func() error { _, err := Load(p); return err }, p + ": not a regular file (a FIFO)"},
		{"LoadWorkloadFile", func() error { _, err := LoadWorkloadFile(p); return err }, p + ": not a regular file (a FIFO)"},
		{"LoadHTTPConfigFile", func() error { _, err := LoadHTTPConfigFile(p); return err }, p + ": not a regular file (a FIFO)"},
		{"ReadFile", func() error { _, err := ReadFile(p, 1<<10); return err }, p + ": not a regular file (a FIFO)"},
	} {
		errc := make(chan error, 1)
		go func() { errc <- c.load() }()
		select {
		case err := <-errc:
			if err == nil || err.Error() != c.want {
				t.Errorf("%s(FIFO) = %v, want %q", c.name, err, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s(FIFO) still blocked after 20 s", c.name)
		}
	}
}
