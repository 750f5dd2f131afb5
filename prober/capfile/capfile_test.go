package capfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noHang runs fn, failing the test if it has not returned in 10 s (a safety
// net: the FIFO cases blocked forever before the kind was checked).
func noHang(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still blocked after 10 s: a FIFO was opened")
	}
}

func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	return p
}

func TestFIFORefused(t *testing.T) {
	p := fifo(t)
	for name, open := range map[string]func(string) (*os.File, error){"Open": Open, "OpenRegular": OpenRegular} {
		noHang(t, func() {
			_, err := open(p)
			var ne *NotRegularError
			if !errors.As(err, &ne) || err.Error() != p+": not a regular file (a FIFO)" {
				t.Errorf("%s(FIFO) = %v, want a *NotRegularError naming it", name, err)
			}
		})
	}
}

func TestDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	link := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(link, 1<<20); err == nil || err.Error() != link+": not a regular file (a character device)" {
		t.Errorf("ReadRegular(symlink to /dev/zero) = %v", err)
	}
	f, err := Open(link) // a device named by the user: capped by its reader
	if err != nil {
		t.Fatalf("Open(/dev/zero) = %v", err)
	}
	defer f.Close()
	var te *TooLargeError
	if _, err := ReadAll(f, link, 1<<10); !errors.As(err, &te) || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Errorf("ReadAll(/dev/zero) = %v, want a *TooLargeError", err)
	}
}

func TestReadRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("ReadRegular at the cap = %q, %v", b, err)
	}
	var te *TooLargeError
	if _, err := ReadRegular(p, 4); !errors.As(err, &te) {
		t.Errorf("ReadRegular over the cap = %v", err)
	}
	if _, err := ReadRegular(filepath.Dir(p), 4); err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("ReadRegular(dir) = %v", err)
	}
}

// TestAnonymousPipe: a /dev/fd pipe (a shell's <(...)) is read, and one
// whose writer has gone reads as empty instead of waiting for another.
func TestAnonymousPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	if !anonymousPipe(path) {
		t.Skip("no /dev/fd links to pipes here")
	}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	noHang(t, func() {
		f, err := Open(path)
		if err != nil {
			t.Errorf("Open(%s) = %v", path, err)
			return
		}
		defer f.Close()
		if b, err := ReadAll(f, path, 10); err != nil || string(b) != "abc" {
			t.Errorf("ReadAll(pipe) = %q, %v", b, err)
		}
	})
	if _, err := OpenRegular(path); err == nil {
		t.Error("OpenRegular(pipe) succeeded")
	}
}

// TestOwnedRefusesHardLink: a regular file with a second hard link is
// refused by OpenOwned and ReadOwned (a *LinkedError naming it and its
// links) and read by OpenRegular; once the second name is gone it reads.
func TestOwnedRefusesHardLink(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "result.json")
	if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadOwned(p, 10); err != nil || string(b) != "{}" {
		t.Fatalf("ReadOwned(one link) = %q, %v", b, err)
	}
	other := filepath.Join(dir, "elsewhere")
	if err := os.Link(p, other); err != nil {
		t.Skip("no hard links:", err)
	}
	var le *LinkedError
	if _, err := ReadOwned(p, 10); !errors.As(err, &le) || le.Links != 2 || !strings.HasPrefix(err.Error(), p+": the file has 2 hard links") {
		t.Errorf("ReadOwned(two links) = %v", err)
	}
	if f, err := OpenOwned(p); f != nil || !errors.As(err, &le) {
		t.Errorf("OpenOwned(two links) = %v, %v", f, err)
	}
	if b, err := ReadRegular(p, 10); err != nil || string(b) != "{}" {
		t.Errorf("ReadRegular(two links) = %q, %v", b, err)
	}
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOwned(p, 10); err != nil {
		t.Errorf("ReadOwned after the second name is removed: %v", err)
	}
}
