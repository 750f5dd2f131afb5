package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/llmprobe/llmprobe/prober/capfile"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// SchemaVersion is the version of manifest.json this package writes; Verify
// refuses newer ones.
const SchemaVersion = 1

// Manifest is manifest.json: the experiment fingerprint, whether the run
// completed, and the SHA-256 and size of every other file in the directory.
type Manifest struct {
	SchemaVersion int `json:"schema_version"`
	// Created is when the run directory was made (UTC).
	Created time.Time `json:"created"`
	// Complete is false for an interrupted run; InterruptedReason then says
	// why (e.g. "SIGINT during step 3"), or "not-recorded".
	Complete          bool   `json:"complete"`
	InterruptedReason string `json:"interrupted_reason,omitempty"`
	// Fingerprint describes the experiment.
	Fingerprint fingerprint.Fingerprint `json:"fingerprint"`
	// ServerLog names the file holding the server's log lines of each step
	// (rundir's server.log, from sweep --server-log), or "not-recorded".
	ServerLog string `json:"server_log"`
	// Files lists every file of the directory but manifest.json, sorted by
	// path.
	Files []File `json:"files"`
}

// File is one manifest entry.
type File struct {
	// Path is slash-separated and relative to the run directory.
	Path string `json:"path"`
	// SHA256 is the lowercase hex SHA-256 of the content.
	SHA256 string `json:"sha256"`
	// Bytes is the size.
	Bytes int64 `json:"bytes"`
}

// Finish closes every appender still open (renaming its .partial file),
// hashes every file in the directory and writes manifest.json last,
// atomically. It sets m.SchemaVersion, m.Files and m.Complete; a zero
// m.Created becomes the run's creation time and a zero m.Fingerprint.End the
// current time. With complete false an empty m.InterruptedReason becomes
// "not-recorded"; with complete true it is cleared. After Finish (even a
// failed one) the Run accepts no more writes. The error joins every failure;
// the manifest is still written when closing an appender failed, so the
// directory can be verified as it is. m.InterruptedReason passes through
// redact.Text and the values of secret-looking metadata keys
// become "<redacted>" (redact.Metadata) whatever the caller
// gave.
func (r *Run) Finish(m Manifest, complete bool) error {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return fmt.Errorf("finish: %w", ErrFinished)
	}
	r.finished = true
	open := make([]*Appender, 0, len(r.open))
	for _, a := range r.open {
		open = append(open, a)
	}
	r.mu.Unlock()

	var errs []error
	for _, a := range open {
		if err := a.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	files, err := hashDir(r.dir)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("finish: %w", err))...)
	}
	m.SchemaVersion = SchemaVersion
	m.Files = files
	// Reasons often quote a server's error text: never let a credential
	// through, whatever the caller passed.
	m.InterruptedReason = redact.Text(m.InterruptedReason)
	m.Fingerprint.Metadata = redact.Metadata(m.Fingerprint.Metadata)
	m.Complete = complete
	if complete {
		m.InterruptedReason = ""
	} else if m.InterruptedReason == "" {
		m.InterruptedReason = fingerprint.NotRecorded
	}
	if m.ServerLog == "" {
		m.ServerLog = fingerprint.NotRecorded
	}
	if m.Created.IsZero() {
		m.Created = r.created
	}
	m.Created = m.Created.UTC()
	if m.Fingerprint.End.IsZero() {
		m.Fingerprint.End = time.Now().UTC()
	}
	b, err := encodeJSON(m, true)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("encode manifest: %w", err))...)
	}
	if err := writeAtomic(r.dir, ManifestFile, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// walk calls fn for every entry under dir but directories and the manifest,
// with its slash-separated relative path.
func walk(dir string, fn func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ManifestFile {
			return nil
		}
		return fn(rel, d)
	})
}

// hashDir lists every regular file under dir but the manifest with its hash
// and size, sorted by path. Anything else (a symlink, a socket) is an error.
func hashDir(dir string) ([]File, error) {
	files := []File{}
	err := walk(dir, func(rel string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		sum, n, err := hashFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, SHA256: sum, Bytes: n})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

func hashFile(p string) (string, int64, error) {
	f, err := capfile.OpenOwned(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// MaxFileBytes caps what llmprobe reads whole from a run directory
// (manifest.json, result.json, a metrics snapshot): 64 MiB is hundreds of
// times a large sweep's result, and bounds the memory a tampered or
// endless file (a symlink to /dev/zero) can take. records.jsonl is
// streamed, a line at a time.
const MaxFileBytes = 64 << 20

// ReadManifest reads and decodes dir/manifest.json. It fails when the file
// is missing or unreadable, is not valid JSON, has no schema_version, or has
// a schema_version newer than SchemaVersion.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := capfile.ReadOwned(filepath.Join(dir, ManifestFile), MaxFileBytes)
	if err != nil {
		return m, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	switch {
	case m.SchemaVersion == 0:
		return m, fmt.Errorf("parse %s: no schema_version, not an llmprobe manifest", filepath.Join(dir, ManifestFile))
	case m.SchemaVersion > SchemaVersion:
		return m, fmt.Errorf("parse %s: schema_version %d is newer than this llmprobe reads (%d)",
			filepath.Join(dir, ManifestFile), m.SchemaVersion, SchemaVersion)
	}
	return m, nil
}

// ProblemKind classifies a Verify finding.
type ProblemKind string

// The kinds of Verify findings.
const (
	// Missing: listed in the manifest, absent from the directory.
	Missing ProblemKind = "missing"
	// Changed: present, but its SHA-256 or size differs from the manifest.
	Changed ProblemKind = "changed"
	// Extra: present in the directory, not listed in the manifest.
	Extra ProblemKind = "extra"
	// Invalid: the entry cannot be checked (a path outside the directory, a
	// duplicate entry, a symlink, an unreadable file).
	Invalid ProblemKind = "invalid"
)

// Problem is one finding of Verify.
type Problem struct {
	Path   string      `json:"path"`
	Kind   ProblemKind `json:"kind"`
	Detail string      `json:"detail,omitempty"`
}

// String formats the problem as "kind: path (detail)".
func (p Problem) String() string {
	if p.Detail == "" {
		return fmt.Sprintf("%s: %s", p.Kind, p.Path)
	}
	return fmt.Sprintf("%s: %s (%s)", p.Kind, p.Path, p.Detail)
}

// checkManifest re-hashes every file listed in m and reports files that
// are missing, changed or not regular, and files present in dir but not
// listed (Verify's check of a directory with a manifest).
func checkManifest(dir string, m *Manifest) []Problem {
	problems := []Problem{}
	listed := map[string]bool{}
	for _, f := range m.Files {
		switch {
		case f.Path == ManifestFile || f.Path == "" || filepath.ToSlash(filepath.Clean(filepath.FromSlash(f.Path))) != f.Path ||
			!filepath.IsLocal(filepath.FromSlash(f.Path)):
			problems = append(problems, Problem{Path: f.Path, Kind: Invalid, Detail: "path is not a file inside the run directory"})
			continue
		case listed[f.Path]:
			problems = append(problems, Problem{Path: f.Path, Kind: Invalid, Detail: "listed twice in the manifest"})
			continue
		}
		listed[f.Path] = true
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, Problem{Path: f.Path, Kind: Missing})
			continue
		case err != nil:
			problems = append(problems, Problem{Path: f.Path, Kind: Invalid, Detail: err.Error()})
			continue
		case !fi.Mode().IsRegular():
			problems = append(problems, Problem{Path: f.Path, Kind: Invalid, Detail: "not a regular file"})
			continue
		case capfile.Links(fi) > 1:
			le := capfile.LinkedError{Path: f.Path, Links: capfile.Links(fi)}
			problems = append(problems, Problem{Path: f.Path, Kind: Invalid, Detail: le.Reason()})
			continue
		}
		sum, n, err := hashFile(p)
		if err != nil {
			problems = append(problems, Problem{Path: f.Path, Kind: Invalid, Detail: err.Error()})
			continue
		}
		if sum != f.SHA256 || n != f.Bytes {
			problems = append(problems, Problem{Path: f.Path, Kind: Changed,
				Detail: fmt.Sprintf("sha256 %s, %d bytes; manifest says %s, %d bytes", sum, n, f.SHA256, f.Bytes)})
		}
	}
	err := walk(dir, func(rel string, d fs.DirEntry) error {
		if listed[rel] {
			return nil
		}
		detail := ""
		if !d.Type().IsRegular() {
			detail = "not a regular file"
		}
		problems = append(problems, Problem{Path: rel, Kind: Extra, Detail: detail})
		return nil
	})
	if err != nil {
		problems = append(problems, Problem{Path: ".", Kind: Invalid, Detail: fmt.Sprintf("list directory: %v", err)})
	}
	return problems
}
