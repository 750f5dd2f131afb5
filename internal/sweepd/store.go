package sweepd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/config"
)

// storedRun is a finished run directory of a target found on disk.
type storedRun struct {
	dir      string
	name     string // the sweep name (the fingerprint's metadata "sweep")
	created  time.Time
	complete bool
}

// scan lists the finished run directories (those with a manifest) under
// the target's directory, newest first. Directories without a manifest (a
// sweep running now, or one a crash cut short) are left alone.
func (s *Service) scan(target string) []storedRun {
	return s.scanDir(s.targetDir(target))
}

// scanDir is scan of a target's directory.
func (s *Service) scanDir(tdir string) []storedRun {
	es, err := os.ReadDir(tdir)
	if err != nil {
		return nil
	}
	var out []storedRun
	n := len(artifacts.StampLayout)
	for _, e := range es {
		base := e.Name()
		if !e.IsDir() || len(base) <= n+1 || base[n] != '-' {
			continue
		}
		created, err := time.Parse(artifacts.StampLayout, base[:n])
		if err != nil {
			continue
		}
		dir := filepath.Join(tdir, base)
		m, err := artifacts.ReadManifest(dir)
		if err != nil {
			continue
		}
		name := m.Fingerprint.Metadata["sweep"]
		if name == "" {
			name = base[n+1:]
		}
		out = append(out, storedRun{dir: dir, name: name, created: created, complete: m.Complete})
	}
	slices.SortFunc(out, func(a, b storedRun) int { return strings.Compare(filepath.Base(b.dir), filepath.Base(a.dir)) })
	return out
}

// restore reads back, once per target, the newest complete run directory of
// each sweep name (report.Load) and hands its figures to the observer, so
// that the gauges survive a restart. s.mu is held.
func (s *Service) restore(target string) {
	if s.restored[target] {
		return
	}
	s.restored[target] = true
	seen := map[string]bool{}
	for _, sr := range s.scan(target) {
		if !sr.complete || seen[sr.name] {
			continue
		}
		res, err := report.Load(sr.dir)
		if err != nil {
			level.Warn(s.logger).Log("msg", "cannot read back a sweep's result", "dir", sr.dir, "err", err)
			continue
		}
		if !measured(res) {
			continue // a failed sweep: no knee to restore
		}
		seen[sr.name] = true
		l := lastOf(res)
		l.Dir = sr.dir
		if !res.Fingerprint.Start.IsZero() && res.Fingerprint.End.After(res.Fingerprint.Start) {
			l.Duration = res.Fingerprint.End.Sub(res.Fingerprint.Start)
		}
		if l.Finished.IsZero() {
			l.Finished = sr.created
		}
		s.setLast(target, sr.name, l)
		s.obs.SweepRestored(target, sr.name, l)
		level.Info(s.logger).Log("msg", "sweep result read back", "target", target, "sweep", sr.name, "dir", sr.dir, "knee", l.Knee)
	}
}

// good reports whether the run directory holds a successful sweep: complete
// and some step measured (what the readback restores).
func good(sr storedRun) bool {
	if !sr.complete {
		return false
	}
	res, err := report.Load(sr.dir)
	return err == nil && measured(res)
}

// retain removes the run directories of target's sweep name beyond the
// retention: more than Keep() of them, or older than Age. The newest
// successful one is always kept (the readback needs it) and counts toward
// Keep().
func (s *Service) retain(target, name string, r config.Retention) {
	keep, age := r.Keep(), time.Duration(r.Age)
	now := s.opts.Now()
	var runs []storedRun
	protected := -1
	for _, sr := range s.scan(target) {
		if sr.name != name {
			continue
		}
		if protected < 0 && good(sr) {
			protected = len(runs)
		}
		runs = append(runs, sr)
	}
	slots := keep
	if protected >= 0 {
		slots--
	}
	for i, sr := range runs {
		if i == protected {
			continue
		}
		if slots > 0 && (age == 0 || now.Sub(sr.created) <= age) {
			slots--
			continue
		}
		if err := os.RemoveAll(sr.dir); err != nil {
			level.Warn(s.logger).Log("msg", "cannot remove an old sweep run directory", "dir", sr.dir, "err", err)
			continue
		}
		level.Info(s.logger).Log("msg", "old sweep run directory removed", "dir", sr.dir, "keep", keep, "age", age)
	}
}
