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
	"github.com/llmprobe/llmprobe/prober/capacity"
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
// that the gauges survive a restart. The knee gauges hold the last two
// decided knees (the current and the previous one, for the regression
// alert) whatever undecided sweeps came after, so the two newest decided
// results are handed over first, oldest first, and the newest result last.
// s.mu is held.
func (s *Service) restore(target string) {
	if s.restored[target] {
		return
	}
	s.restored[target] = true
	type found struct {
		newest  *capacity.Last
		decided []capacity.Last // newest first, at most 2
	}
	byName := map[string]*found{}
	var names []string
	for _, sr := range s.scan(target) {
		f := byName[sr.name]
		if !sr.complete || f != nil && len(f.decided) == 2 {
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
		l := LastOf(res)
		l.Dir = sr.dir
		if !res.Fingerprint.Start.IsZero() && res.Fingerprint.End.After(res.Fingerprint.Start) {
			l.Duration = res.Fingerprint.End.Sub(res.Fingerprint.Start)
		}
		if l.Finished.IsZero() {
			l.Finished = sr.created
		}
		if f == nil {
			f = &found{newest: &l}
			byName[sr.name] = f
			names = append(names, sr.name)
		}
		if l.StateOf() != capacity.StateUndecided {
			f.decided = append(f.decided, l)
		}
	}
	for _, name := range names {
		f := byName[name]
		for i := len(f.decided) - 1; i >= 0; i-- {
			if f.decided[i].Dir != f.newest.Dir {
				s.obs.SweepRestored(target, name, f.decided[i])
			}
		}
		s.setLast(target, name, *f.newest)
		s.obs.SweepRestored(target, name, *f.newest)
		level.Info(s.logger).Log("msg", "sweep result read back", "target", target, "sweep", name, "dir", f.newest.Dir,
			"knee", f.newest.Knee, "knee_state", f.newest.StateOf())
	}
}

// good reports whether the run directory holds a successful sweep: complete
// and some step measured (what the readback restores), and whether its knee
// was decided (state decided or bound).
func good(sr storedRun) (ok, decided bool) {
	if !sr.complete {
		return false, false
	}
	res, err := report.Load(sr.dir)
	if err != nil || !measured(res) {
		return false, false
	}
	st, _ := kneeState(res)
	return true, st != capacity.StateUndecided
}

// protectedRuns are the indexes of runs (one sweep name's, newest first)
// that retention never removes: the newest successful one (the readback
// needs it) and the newest with a decided knee when that is an older one
// (the knee gauges keep it across undecided sweeps and restarts).
func protectedRuns(runs []storedRun) map[int]bool {
	protected := map[int]bool{}
	haveGood, haveDecided := false, false
	for i, sr := range runs {
		if haveGood && haveDecided {
			break
		}
		if ok, decided := good(sr); ok && (!haveGood || decided && !haveDecided) {
			protected[i] = true
			haveGood = true
			haveDecided = haveDecided || decided
		}
	}
	return protected
}

// retain removes the run directories of target's sweep name beyond the
// retention: more than Keep() of them, or older than Age. The newest
// successful one is always kept (the readback needs it) and counts toward
// Keep(), and so is the newest with a decided knee when that is an older
// one (the knee gauges keep it across undecided sweeps and restarts).
func (s *Service) retain(target, name string, r config.Retention) {
	keep, age := r.Keep(), time.Duration(r.Age)
	now := s.opts.Now()
	var runs []storedRun
	for _, sr := range s.scan(target) {
		if sr.name == name {
			runs = append(runs, sr)
		}
	}
	protected := protectedRuns(runs)
	slots := keep - len(protected)
	for i, sr := range runs {
		if protected[i] {
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
