// Package artifacts owns the run directory of a sweep or compare run
// (DESIGN.md §6): creating runs/<UTC stamp>-<name>/ after checking that the
// output directory is writable and has free space, writing every file
// atomically (temp file, fsync, rename), streaming appenders for the files
// that grow while the run goes on (records.jsonl, errors-redacted.jsonl, the
// metrics snapshots), the manifest.json written last with the SHA-256 and
// size of every other file, Verify, which re-checks a directory against
// its manifest, and ReadRecords, the one reader of records.jsonl.
// docs/artifacts.md describes the layout for people.
//
// Nothing here sends load or reads a target; the sweep decides what goes into
// the files and this package makes sure they land whole and can be checked.
package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The files of a run directory. Only ManifestFile is reserved: the others
// are names the sweep uses by convention (see docs/artifacts.md).
const (
	ManifestFile      = "manifest.json"
	CommandFile       = "command.txt"
	HelpFile          = "help.txt"
	ResultFile        = "result.json"
	RecordsFile       = "records.jsonl"
	ErrorsFile        = "errors-redacted.jsonl"
	MetricsBeforeFile = "metrics-before.txt"
	MetricsDuringFile = "metrics-during.txt"
	MetricsAfterFile  = "metrics-after.txt"
	AnalysisFile      = "analysis.md"
	GoodputPlotFile   = "goodput.svg"
	LatencyPlotFile   = "latency.svg"
)

// PartialSuffix is appended to the name of a file an Appender is still
// writing; Close renames it away. A ".partial" file in a finished directory
// means the writer died before closing it.
const PartialSuffix = ".partial"

// tempPrefix starts the name of an atomic write in progress.
const tempPrefix = ".tmp-"

// StampLayout is the time layout of a run directory's prefix, always UTC.
const StampLayout = "20060102T150405Z"

// DefaultMinFreeBytes is the free disk space Create requires when
// Options.MinFreeBytes is zero.
const DefaultMinFreeBytes = 64 << 20

// Errors Create wraps so callers can tell the causes apart.
var (
	ErrUnwritable = errors.New("out dir is not writable")
	ErrNoSpace    = errors.New("not enough free disk space")
	ErrFinished   = errors.New("run directory already finished")
)

// Options tune Create. The zero value is ready to use.
type Options struct {
	// MinFreeBytes is the free disk space (for unprivileged users) the out
	// dir's file system must have; 0 means DefaultMinFreeBytes. Free space
	// is checked on Linux only.
	MinFreeBytes uint64
}

// Run is one run directory being written. Its methods are safe for
// concurrent use; writes of the same name at the same time are the caller's
// bug (the last rename wins). After Finish every write fails with
// ErrFinished.
type Run struct {
	dir     string
	created time.Time

	mu       sync.Mutex
	open     map[string]*Appender
	finished bool
}

// Create is Options{}.Create.
func Create(outDir, name string, now time.Time) (*Run, error) {
	return Options{}.Create(outDir, name, now)
}

// Create makes outDir (and parents) if needed, checks that it is writable
// by writing and removing a probe file and that its file system has at least
// MinFreeBytes free, then makes outDir/<now in UTC as StampLayout>-<name>/.
// name is reduced to [A-Za-z0-9._-] ("run" when nothing is left); when that
// directory already exists, "-2", "-3", ... is appended. Call it before any
// load is sent: every failure here is a reason not to start.
func (o Options) Create(outDir, name string, now time.Time) (*Run, error) {
	if outDir == "" {
		return nil, fmt.Errorf("out dir is empty: %w", ErrUnwritable)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create out dir %q: %w: %w", outDir, ErrUnwritable, err)
	}
	if err := probeWrite(outDir); err != nil {
		return nil, fmt.Errorf("out dir %q: %w: %w", outDir, ErrUnwritable, err)
	}
	need := o.MinFreeBytes
	if need == 0 {
		need = DefaultMinFreeBytes
	}
	free, known, err := freeBytes(outDir)
	if err != nil {
		return nil, fmt.Errorf("check free space of out dir %q: %w", outDir, err)
	}
	if known && free < need {
		return nil, fmt.Errorf("out dir %q has %d bytes free, need at least %d: %w", outDir, free, need, ErrNoSpace)
	}
	created := now.UTC()
	base := created.Format(StampLayout) + "-" + sanitize(name)
	for i := 1; ; i++ {
		n := base
		if i > 1 {
			n = fmt.Sprintf("%s-%d", base, i)
		}
		dir := filepath.Join(outDir, n)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return &Run{dir: dir, created: created, open: map[string]*Appender{}}, nil
		}
		if !errors.Is(err, fs.ErrExist) || i >= 100 {
			return nil, fmt.Errorf("create run dir: %w", err)
		}
	}
}

// probeWrite writes, syncs and removes a small file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".llmprobe-write-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.WriteString("llmprobe write probe\n")
	serr := f.Sync()
	cerr := f.Close()
	rerr := os.Remove(name)
	return errors.Join(werr, serr, cerr, rerr)
}

// sanitize reduces a run name to a safe directory-name part.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), ".-")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return "run"
	}
	return s
}

// Dir returns the run directory's path.
func (r *Run) Dir() string { return r.dir }

// Created returns the creation time (UTC) that named the directory.
func (r *Run) Created() time.Time { return r.created }

// checkName rejects names that are not plain relative paths inside the run
// directory, or that are reserved.
func checkName(name string) error {
	if name == "" || strings.Contains(name, `\`) || path.Clean(name) != name || !filepath.IsLocal(name) {
		return fmt.Errorf("invalid artifact name %q: want a relative slash-separated path inside the run dir", name)
	}
	base := path.Base(name)
	switch {
	case name == ManifestFile:
		return fmt.Errorf("invalid artifact name %q: written only by Finish", name)
	case strings.HasSuffix(name, PartialSuffix), strings.HasPrefix(base, tempPrefix):
		return fmt.Errorf("invalid artifact name %q: reserved suffix or prefix", name)
	}
	return nil
}

// beginWrite checks that name may be written now.
func (r *Run) beginWrite(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return fmt.Errorf("write %s: %w", name, ErrFinished)
	}
	if _, ok := r.open[name]; ok {
		return fmt.Errorf("write %s: an appender for it is still open", name)
	}
	return nil
}

// WriteFile writes data to name atomically: a reader sees the old file or
// the whole new one, never a part, even after a crash.
func (r *Run) WriteFile(name string, data []byte) error {
	if err := r.beginWrite(name); err != nil {
		return err
	}
	return writeAtomic(r.dir, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteJSON writes v as indented JSON (two spaces, trailing newline) to name
// atomically. "<", ">" and "&" are written as they are, not as \u escapes,
// so "<redacted>" reads as such.
func (r *Run) WriteJSON(name string, v any) error {
	b, err := encodeJSON(v, true)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return r.WriteFile(name, b)
}

// encodeJSON encodes v without HTML escaping, indented or compact, with a
// trailing newline.
func encodeJSON(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeAtomic writes through fill into a temp file beside the target, syncs
// it, renames it over the target and syncs the directory.
func writeAtomic(dir, name string, fill func(io.Writer) error) (err error) {
	final := filepath.Join(dir, filepath.FromSlash(name))
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	f, err := os.CreateTemp(parent, tempPrefix+filepath.Base(final)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := fill(bw); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("rename %s: %w", name, err)
	}
	return syncDir(parent)
}

// syncDir fsyncs a directory so a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync dir: %w", err)
	}
	return nil
}
