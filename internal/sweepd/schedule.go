package sweepd

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// scheduled is the loop of one target's scheduled sweep.
type scheduled struct {
	digest        string
	cancel        context.CancelFunc
	target, sweep string
}

// interval is the schedule's interval: every, or the gap between the next
// two runs of a cron expression after now.
func interval(sw config.ScheduledSweep, now time.Time) time.Duration {
	if sw.Cron == "" {
		return time.Duration(sw.Every)
	}
	sched, err := sw.Schedule()
	if err != nil {
		return 0
	}
	next := sched.Next(now)
	return sched.Next(next).Sub(next)
}

// errTargetRemoved is the cancel cause of the sweeps of a target that a
// reload removed.
var errTargetRemoved = errors.New("the target was removed by a config reload")

// Apply makes the service match cfg: the targets sweeps may run against
// (a sweep running against a target cfg removes is canceled), the schedules
// of their sweeps: blocks (a changed entry restarts its schedule, an
// unchanged one keeps its timing), and, the first time a target is seen,
// the readback of its last results from --sweeps.dir. Call it with every
// config the daemon installs.
func (s *Service) Apply(cfg *config.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	targets := make(map[string]config.TargetConfig, len(cfg.Targets))
	for _, t := range cfg.Targets {
		targets[t.Name] = t
	}
	for name := range s.targets {
		if _, ok := targets[name]; ok {
			continue
		}
		if r := s.running[name]; r != nil {
			r.cancel(errTargetRemoved)
		}
		delete(s.last, name)
		delete(s.restored, name)
		s.obs.TargetRemoved(name)
	}
	for name := range targets {
		if _, ok := s.targets[name]; !ok {
			s.obs.SweepRunning(name, false) // llmprobe_sweep_running 0 from the start
		}
	}
	s.targets = targets
	want := map[string]bool{}
	for _, t := range cfg.Targets {
		s.restore(t.Name)
		for _, sw := range t.Sweeps {
			key := t.Name + "/" + sw.Name()
			want[key] = true
			d := scheduleDigest(t, sw)
			if old, ok := s.schedules[key]; ok {
				if old.digest == d {
					continue
				}
				old.cancel()
			}
			ctx, cancel := context.WithCancel(s.ctx)
			s.schedules[key] = &scheduled{digest: d, cancel: cancel, target: t.Name, sweep: sw.Name()}
			s.obs.SweepScheduled(t.Name, sw.Name(), interval(sw, s.opts.Now()))
			s.wg.Add(1)
			go s.loop(ctx, t.Name, sw)
		}
	}
	for key, sc := range s.schedules {
		if !want[key] {
			sc.cancel()
			delete(s.schedules, key)
			if _, ok := targets[sc.target]; ok {
				s.obs.SweepScheduled(sc.target, sc.sweep, 0)
			}
		}
	}
}

// scheduleDigest identifies what a schedule runs: the sweep entry (the
// digests of the files it read with it) and the target settings its
// sweep.Config reads.
func scheduleDigest(t config.TargetConfig, sw config.ScheduledSweep) string {
	b, _ := json.Marshal(struct {
		Key     string
		SLO     slo.SLO
		Max     float64
		Sweep   config.ScheduledSweep
		Answers string
	}{t.RestartKey(), t.SLO, t.MaxSweepRate, sw, sw.AnswerChecksSHA256()})
	return string(b)
}

// loop runs target's scheduled sweep sw until ctx ends. With every:, the
// first run comes one interval after the last success read back (at once
// when there is none or it is overdue); with cron:, at the next matching
// time. Each run is delayed by a random share of the jitter. A run that
// cannot start (the target or the global cap busy) is skipped and logged;
// the next is planned once a run ended.
func (s *Service) loop(ctx context.Context, target string, sw config.ScheduledSweep) {
	defer s.wg.Done()
	logger := s.logger
	sched, err := sw.Schedule()
	if err != nil { // validated at load
		level.Error(logger).Log("msg", "invalid sweep schedule", "target", target, "sweep", sw.Name(), "err", err)
		return
	}
	now := s.opts.Now()
	next := sched.Next(now)
	if sw.Cron == "" {
		next = now
		s.mu.Lock()
		l, ok := s.last[target][sw.Name()]
		s.mu.Unlock()
		if due := l.Finished.Add(time.Duration(sw.Every)); ok && due.After(now) {
			next = due
		}
	}
	for {
		if j := time.Duration(sw.Jitter); j > 0 {
			next = next.Add(s.opts.Jitter(j))
		}
		level.Debug(logger).Log("msg", "next scheduled sweep", "target", target, "sweep", sw.Name(), "at", next)
		timer := time.NewTimer(max(0, next.Sub(s.opts.Now())))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		r, err := s.start(target, sw.SweepSpec, OriginSchedule)
		if err != nil {
			level.Warn(logger).Log("msg", "scheduled sweep skipped", "target", target, "sweep", sw.Name(), "err", err)
		} else {
			select {
			case <-r.done:
			case <-ctx.Done():
				return
			}
		}
		next = sched.Next(s.opts.Now())
	}
}

// uniformJitter is a uniform random delay in [0, max).
func uniformJitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max)))
}
