package artifacts

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVerifyRefusesEndlessManifest is issue 22 D4 and D6: a manifest.json
// that is a symlink to /dev/zero ran verify (and analyze, merge) out of
// memory, and a FIFO blocked it forever; each is now an error naming the
// file, at once.
func TestVerifyRefusesEndlessManifest(t *testing.T) {
	for _, kind := range []string{"a character device", "a FIFO"} {
		dir := t.TempDir()
		p := filepath.Join(dir, ManifestFile)
		if kind == "a FIFO" {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip("no FIFOs:", err)
			}
		} else if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		for _, partial := range []bool{false, true} {
			errc := make(chan error, 1)
			go func() { _, err := Verify(dir, VerifyOptions{Partial: partial}); errc <- err }()
			select {
			case err := <-errc:
				if want := "read manifest: " + p + ": not a regular file (" + kind + ")"; err == nil || err.Error() != want {
					t.Errorf("%s, partial %v: Verify = %v, want %q", kind, partial, err, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: Verify still running after 20 s", kind)
			}
		}
	}
}

// TestReadRecordsRefusesFIFO: records.jsonl as a FIFO is an error, not a
// read that waits for a writer forever.
func TestReadRecordsRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), RecordsFile)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- ReadRecords(p, func(RecordLine, []byte) error { return nil }) }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
			t.Errorf("ReadRecords(FIFO) = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ReadRecords(FIFO) still blocked after 20 s")
	}
}
