// Package capfile opens and reads the files llmprobe is given without
// hanging or running out of memory on them: a named FIFO (whose open
// blocks until a writer appears) or a socket is refused before it is
// opened, and a read is capped.
package capfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// NotRegularError is the error for a file that is not a regular file (a
// symlink is followed: the kind named is its target's).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

// Error names the file and its kind.
func (e *NotRegularError) Error() string { return e.Path + ": " + e.Reason() }

// Reason is the error without the file's name: "not a regular file (a
// FIFO)".
func (e *NotRegularError) Reason() string {
	return fmt.Sprintf("not a regular file (%s)", kind(e.Mode))
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}

// TooLargeError is the error of ReadRegular for a file over its cap.
type TooLargeError struct {
	Path  string
	Limit int64
}

// Error names the file and the cap.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: the file is larger than %d bytes", e.Path, e.Limit)
}

// LinkedError is the error of OpenOwned and ReadOwned for a regular file
// with more than one hard link.
type LinkedError struct {
	Path  string
	Links uint64
}

// Error names the file and its links.
func (e *LinkedError) Error() string { return e.Path + ": " + e.Reason() }

// Reason is the error without the file's name.
func (e *LinkedError) Reason() string {
	return fmt.Sprintf("the file has %d hard links; llmprobe writes its run directories' files with one, "+
		"so a second name could expose a file from elsewhere", e.Links)
}

// CheckOwned returns a *LinkedError when fi (the file at path) has more than
// one hard link, else nil: the check of OpenOwned, for a caller that opens
// the file itself (through an os.Root).
func CheckOwned(path string, fi fs.FileInfo) error {
	if n := Links(fi); n > 1 {
		return &LinkedError{Path: path, Links: n}
	}
	return nil
}

// Open opens path for reading unless it is a named FIFO, a socket or
// another file whose open or read could block forever: a FIFO's open waits
// for a writer. A character device (such as /dev/zero) is opened, as an
// input named by the user whose reader caps what it takes, and so is an
// anonymous pipe (/dev/fd/N, a shell's <(...)), opened without waiting: its
// writer exists or has gone (then it reads as empty). The kind is checked
// before the open and again on the opened file (path may have been
// replaced).
func Open(path string) (*os.File, error) {
	return open(path, false)
}

// OpenRegular opens path for reading only if it is a regular file: the
// files of a run directory, which llmprobe wrote itself.
func OpenRegular(path string) (*os.File, error) {
	return open(path, true)
}

// OpenOwned is OpenRegular for the files of a run directory read back or
// served: a regular file with more than one hard link is refused too (a
// *LinkedError), as a hard link placed in a run directory would otherwise
// read or serve a file from elsewhere under the run's name. The check is
// made on the opened file.
func OpenOwned(path string) (*os.File, error) {
	f, err := open(path, true)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = CheckOwned(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadOwned is ReadRegular through OpenOwned.
func ReadOwned(path string, limit int64) ([]byte, error) {
	f, err := OpenOwned(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// refused reports whether a file of mode m is refused: by OpenRegular
// anything but a regular file; by Open a named FIFO, a socket, a block
// device or another irregular file.
func refused(m fs.FileMode, regular, pipe bool) bool {
	switch {
	case m.IsRegular():
		return false
	case regular:
		return true
	case m&fs.ModeNamedPipe != 0:
		return !pipe
	}
	return m&fs.ModeCharDevice == 0
}

// anonymousPipe reports whether path names an anonymous pipe (on Linux,
// /dev/fd/N and /proc/self/fd/N link to "pipe:[inode]").
func anonymousPipe(path string) bool {
	t, err := os.Readlink(path)
	return err == nil && strings.HasPrefix(t, "pipe:[")
}

func open(path string, regular bool) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		// os.Open's error, as before the check ("open PATH: ...").
		f, oerr := os.Open(path)
		if oerr != nil {
			return nil, oerr
		}
		f.Close()
		return nil, err
	}
	pipe := !regular && fi.Mode()&fs.ModeNamedPipe != 0 && anonymousPipe(path)
	if refused(fi.Mode(), regular, pipe) {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	// O_NONBLOCK always: the open must not wait for a writer, should path
	// have been replaced by a FIFO since the check (the kind is checked
	// again on the opened file); a regular file reads as without it.
	flag := os.O_RDONLY | syscall.O_NONBLOCK
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if refused(fi.Mode(), regular, pipe) {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// ReadRegular reads the regular file at path, at most limit bytes: another
// kind of file is a *NotRegularError, a larger one a *TooLargeError.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r to its end, at most limit bytes: more is a
// *TooLargeError naming path.
func ReadAll(r io.Reader, path string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}
