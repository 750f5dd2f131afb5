package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FlushInterval bounds how long a written record may stay in an
// Appender's buffer: a background flusher writes it out at least this often,
// so that after a crash (SIGKILL, power loss of the process) every record
// written more than about FlushInterval earlier is in the .partial file.
const FlushInterval = 200 * time.Millisecond

// Appender streams one file of a run directory: it writes to
// "<name>.partial" and renames it to name on Close, so a file without the
// suffix is always complete. Its methods are safe for concurrent use; each
// Write, WriteLine or WriteSnapshot is one record that lands whole, never
// interleaved with another and never split across two writes to the file
// (the buffer is flushed before a record that does not fit, and a record
// larger than the buffer is written in one call), so the file ends on a
// record boundary whenever the process dies between writes. Buffered
// records reach the file within FlushInterval (no fsync until Close). The
// first write error is sticky: later writes return it.
type Appender struct {
	run     *Run
	name    string
	final   string
	partial string

	mu       sync.Mutex
	f        *os.File
	w        io.Writer // f, or a test's failing writer
	bw       *bufio.Writer
	err      error
	closed   bool
	cerr     error
	dirty    bool          // records buffered since the last flush
	stop     chan struct{} // closed by Close: ends the flusher
	stopOnce sync.Once
	done     chan struct{} // closed when the flusher has ended
	written  int64         // bytes accepted by Write (buffered or not)
	// good is the file's size at the last record boundary known to be on
	// the file (after a flush or a direct write that succeeded), and ends
	// the end offsets of the records buffered since: after a write error
	// (a full disk) Close truncates the file to the last whole record.
	good int64
	ends []int64
}

// Append opens an appender for name. It fails when name (or name.partial)
// already exists, when another appender for name is open, or after Finish.
// Finish closes any appender still open.
func (r *Run) Append(name string) (*Appender, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return nil, fmt.Errorf("append %s: %w", name, ErrFinished)
	}
	if _, ok := r.open[name]; ok {
		return nil, fmt.Errorf("append %s: already open", name)
	}
	final := filepath.Join(r.dir, filepath.FromSlash(name))
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("append %s: file exists", name)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, fmt.Errorf("append %s: %w", name, err)
	}
	partial := final + PartialSuffix
	f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("append %s: %w", name, err)
	}
	a := &Appender{run: r, name: name, final: final, partial: partial, f: f, w: f, bw: bufio.NewWriterSize(f, appendBuffer),
		stop: make(chan struct{}), done: make(chan struct{})}
	r.open[name] = a
	go a.flusher()
	return a, nil
}

// flusher writes buffered records out every FlushInterval until Close.
func (a *Appender) flusher() {
	defer close(a.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.mu.Lock()
			if a.dirty && !a.closed && a.err == nil {
				a.flushLocked()
			}
			a.mu.Unlock()
		}
	}
}

// appendBuffer is the size of an Appender's buffer.
const appendBuffer = 64 << 10

// flushLocked writes the buffer out; the caller holds a.mu.
func (a *Appender) flushLocked() {
	if err := a.bw.Flush(); err != nil {
		a.err = fmt.Errorf("flush %s: %w", a.name, err)
	} else {
		a.good, a.ends = a.written, a.ends[:0]
	}
	a.dirty = false
}

// Name returns the file's final name inside the run directory.
func (a *Appender) Name() string { return a.name }

// Write appends p. It implements io.Writer.
func (a *Appender) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.writeLocked(p)
}

func (a *Appender) writeLocked(p []byte) (int, error) {
	if a.closed {
		return 0, fmt.Errorf("write %s: appender closed", a.name)
	}
	if a.err != nil {
		return 0, a.err
	}
	// One record, one contiguous write: flush what is buffered first when
	// p does not fit, and write a record larger than the buffer directly.
	if len(p) > a.bw.Available() && a.bw.Buffered() > 0 {
		if a.flushLocked(); a.err != nil {
			return 0, a.err
		}
	}
	var n int
	var err error
	direct := len(p) > a.bw.Available()
	if direct {
		n, err = a.w.Write(p)
	} else {
		n, err = a.bw.Write(p)
		a.dirty = true
	}
	a.written += int64(n)
	if err != nil {
		a.err = fmt.Errorf("write %s: %w", a.name, err)
		return n, a.err
	}
	if direct {
		a.good = a.written // the buffer was empty: the file ends on this record
	} else {
		a.ends = append(a.ends, a.written)
	}
	return n, nil
}

// Written returns the bytes the appender has accepted so far (buffered
// ones included): the file's size once flushed.
func (a *Appender) Written() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.written
}

// WriteLine appends v as one line of compact JSON (JSON Lines), without
// HTML escaping.
func (a *Appender) WriteLine(v any) error {
	b, err := encodeJSON(v, false)
	if err != nil {
		return fmt.Errorf("encode line of %s: %w", a.name, err)
	}
	_, err = a.Write(b)
	return err
}

// Flush writes buffered data to the file (no fsync); use it to let a reader
// follow a long run.
func (a *Appender) Flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	if a.err != nil {
		return a.err
	}
	a.flushLocked()
	return a.err
}

// Close flushes, fsyncs and closes the file and renames name.partial to
// name, then syncs the directory. It renames even when an earlier write or
// the flush failed (an interrupted run keeps what it wrote) and returns the
// first error; a write that failed part way (a full disk) leaves no half
// record: the file is first truncated to its last whole record, and the
// error says so. Close is idempotent: later calls return the first result.
func (a *Appender) Close() error {
	a.stopOnce.Do(func() { close(a.stop); <-a.done })
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return a.cerr
	}
	a.closed = true
	var errs []error
	if a.err != nil {
		errs = append(errs, a.err)
	}
	if a.err == nil {
		if err := a.bw.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("flush %s: %w", a.name, err))
		} else {
			a.good, a.ends = a.written, a.ends[:0]
		}
	}
	if len(errs) > 0 {
		if err := a.truncateLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.f.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("sync %s: %w", a.name, err))
	}
	if err := a.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w", a.name, err))
	}
	if err := os.Rename(a.partial, a.final); err != nil {
		errs = append(errs, fmt.Errorf("rename %s: %w", a.name, err))
	} else if err := syncDir(filepath.Dir(a.final)); err != nil {
		errs = append(errs, err)
	}
	a.run.mu.Lock()
	delete(a.run.open, a.name)
	a.run.mu.Unlock()
	a.cerr = errors.Join(errs...)
	return a.cerr
}

// truncateLocked cuts the file after a write error to its last whole
// record: the largest record end on the file (a.good, or a buffered
// record's end that a partial flush wrote out). The error reports the cut;
// nil when the file already ends on a record. The caller holds a.mu.
func (a *Appender) truncateLocked() error {
	fi, err := a.f.Stat()
	if err != nil {
		return fmt.Errorf("truncate %s to its last whole record: %w", a.name, err)
	}
	size, keep := fi.Size(), a.good
	for _, e := range a.ends {
		if e <= size {
			keep = e
		}
	}
	if size <= keep {
		return nil
	}
	if err := a.f.Truncate(keep); err != nil {
		return fmt.Errorf("truncate %s to its last whole record: %w", a.name, err)
	}
	return fmt.Errorf("%s ended mid-record after the write error (%d bytes): truncated to its last whole record (%d bytes)",
		a.name, size, keep)
}

// SnapshotMarker starts every section of a metrics snapshot file
// (metrics-before.txt, metrics-during.txt, metrics-after.txt). The rest of
// the marker line is a JSON Snapshot. Prometheus text parsers ignore the
// line as a comment, so each section parses on its own.
const SnapshotMarker = "# llmprobe-snapshot "

// Snapshot describes one scrape of a target's /metrics in a snapshot file.
type Snapshot struct {
	// Step is the step index (0-based, run order); Label names it, e.g.
	// "rate=4".
	Step  int    `json:"step"`
	Label string `json:"label,omitempty"`
	// Phase is "before-warmup", "before", "during" or "after".
	Phase string `json:"phase"`
	// Time is when the scrape started (UTC).
	Time time.Time `json:"time"`
	// Source is the scraped URL (secrets redacted by the caller).
	Source string `json:"source,omitempty"`
	// NotRecorded, when set, says why there is no body (e.g. "connection
	// refused", "no metrics url").
	NotRecorded string `json:"not_recorded,omitempty"`
}

// WriteSnapshot appends one section: the marker line with s, then body (the
// exposition text), ending with a newline. With s.NotRecorded set the body
// is not written.
func (a *Appender) WriteSnapshot(s Snapshot, body []byte) error {
	s.Time = s.Time.UTC()
	hdr, err := encodeJSON(s, false)
	if err != nil {
		return fmt.Errorf("encode snapshot header: %w", err)
	}
	hdr = bytes.TrimSuffix(hdr, []byte("\n"))
	var b bytes.Buffer
	b.Grow(len(SnapshotMarker) + len(hdr) + len(body) + 2)
	b.WriteString(SnapshotMarker)
	b.Write(hdr)
	b.WriteByte('\n')
	if s.NotRecorded == "" {
		b.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err = a.writeLocked(b.Bytes())
	return err
}

// SnapshotSection is one section read back by ParseSnapshots.
type SnapshotSection struct {
	Snapshot
	Body []byte
}

// ParseSnapshots splits a snapshot file into its sections. Text before the
// first marker is an error.
func ParseSnapshots(data []byte) ([]SnapshotSection, error) {
	var out []SnapshotSection
	rest := data
	for len(rest) > 0 {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		if !bytes.HasPrefix(line, []byte(SnapshotMarker)) {
			if len(out) == 0 {
				return nil, fmt.Errorf("snapshot file does not start with %q", strings.TrimSpace(SnapshotMarker))
			}
			out[len(out)-1].Body = append(out[len(out)-1].Body, line...)
			out[len(out)-1].Body = append(out[len(out)-1].Body, '\n')
			rest = after
			continue
		}
		var s Snapshot
		if err := json.Unmarshal(line[len(SnapshotMarker):], &s); err != nil {
			return nil, fmt.Errorf("snapshot marker %d: %w", len(out)+1, err)
		}
		out = append(out, SnapshotSection{Snapshot: s})
		rest = after
	}
	return out, nil
}
