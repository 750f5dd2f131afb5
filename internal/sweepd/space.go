package sweepd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-kit/log/level"
)

// DefaultMaxBytes is --sweeps.retention.size's default: the run directories
// under --sweeps.dir are trimmed to at most this many bytes before each run
// starts (the oldest first; the newest successful run of each sweep is
// kept). A run directory of a scheduled sweep is typically 1–5 MB.
const DefaultMaxBytes = 1 << 30

// CheckDir makes sure the daemon can write its sweep run directories into
// dir: it creates dir (and its parents) and writes and removes a file
// there. The error names the directory and how to set it.
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("no sweeps directory: set --sweeps.dir (or LLMPROBE_SWEEPS_DIR)")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return dirError(dir, err)
	}
	f, err := os.CreateTemp(dir, ".llmprobe-write-check-*")
	if err != nil {
		return dirError(dir, err)
	}
	name := f.Name()
	err = f.Close()
	if rmErr := os.Remove(name); err == nil {
		err = rmErr
	}
	if err != nil {
		return dirError(dir, err)
	}
	return nil
}

// ProbeDir reports whether CheckDir would succeed, without creating
// anything: dir, or its nearest existing parent, must be a directory this
// process may write into (check-config's test, which must not leave a
// directory behind).
func ProbeDir(dir string) error {
	if dir == "" {
		return errors.New("no sweeps directory: set --sweeps.dir (or LLMPROBE_SWEEPS_DIR)")
	}
	p := filepath.Clean(dir)
	for {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return dirError(dir, fmt.Errorf("%s is not a directory", p))
		case err == nil:
			if err := writable(p); err != nil {
				return dirError(dir, &fs.PathError{Op: "write", Path: p, Err: err})
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return dirError(dir, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return dirError(dir, err)
		}
		p = parent
	}
}

func dirError(dir string, err error) error {
	return fmt.Errorf("sweeps directory %q is not writable (--sweeps.dir, LLMPROBE_SWEEPS_DIR; the container image uses "+
		"/var/lib/llmprobe/sweeps, a volume): %w", dir, err)
}

// makeRoom trims the run directories under Dir to at most MaxBytes before a
// sweep starts: the oldest finished ones first, of every target and sweep
// name, never those retention protects (protectedRuns: the newest
// successful run of a sweep and its newest decided one) nor a directory without a manifest (a sweep running now, or
// one a crash cut short: scan lists neither). When that is not enough, the
// sweep does not start: the error says how much is there. s.mu is not
// held.
func (s *Service) makeRoom() error {
	max := s.opts.MaxBytes
	if max <= 0 {
		return nil
	}
	total, err := dirBytes(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("sweeps directory %q: %w", s.opts.Dir, err)
	}
	if total <= max {
		return nil
	}
	type cand struct {
		storedRun
		size int64
	}
	var cands []cand
	es, _ := os.ReadDir(s.opts.Dir)
	for _, e := range es {
		if !e.IsDir() {
			continue
		}
		byName := map[string][]storedRun{} // newest first, as scanDir lists them
		for _, sr := range s.scanDir(filepath.Join(s.opts.Dir, e.Name())) {
			byName[sr.name] = append(byName[sr.name], sr)
		}
		for _, runs := range byName {
			protected := protectedRuns(runs)
			for i, sr := range runs {
				if protected[i] {
					continue
				}
				n, _ := dirBytes(sr.dir)
				cands = append(cands, cand{sr, n})
			}
		}
	}
	// Oldest first, whatever the target.
	slices.SortFunc(cands, func(a, b cand) int {
		return strings.Compare(filepath.Base(a.dir), filepath.Base(b.dir))
	})
	for _, c := range cands {
		if total <= max {
			break
		}
		if err := os.RemoveAll(c.dir); err != nil {
			level.Warn(s.logger).Log("msg", "cannot remove an old sweep run directory", "dir", c.dir, "err", err)
			continue
		}
		total -= c.size
		level.Info(s.logger).Log("msg", "old sweep run directory removed for space", "dir", c.dir, "bytes", c.size, "max_bytes", max)
	}
	if total > max {
		return fmt.Errorf("sweeps directory %q holds %d bytes, over --sweeps.retention.size=%d, and only the newest successful run of each sweep is left: "+
			"raise --sweeps.retention.size (and the volume) or keep fewer sweeps", s.opts.Dir, total, max)
	}
	return nil
}

// dirBytes is the size of the regular files under dir (0 when dir does not
// exist).
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}
