// Package schedule owns when requests are sent: the open-loop scheduler that
// fires each arrival of an arrival.Process in its own goroutine at its
// absolute scheduled time, with an optional concurrency cap that either skips
// arrivals (the daemon) or makes them wait for a slot (sweeps with rate +
// max concurrency); the closed loop (N workers sending back to back); and the
// burst (every request at once, for rate = inf).
//
// The open loop never waits for completions: a slow server gets more
// requests in flight, not fewer sends. Sleeps go to the absolute time
// start + offset on the monotonic clock (never relative sleeps that
// accumulate drift): a reused Go timer for the bulk of the wait and, on
// Linux, clock_nanosleep with an absolute deadline for the last 2 ms, since
// Go timers wake up to ~1 ms late (BenchmarkSendLag1000: p50 lag ~0.13 ms
// instead of ~0.6 ms). When the scheduler is behind, it fires at once and
// the lateness shows up as send lag (actual - scheduled), which is how a
// saturated client is detected.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmprobe/llmprobe/prober/arrival"
)

// Mode selects how requests are started.
type Mode int

// The modes.
const (
	// Open fires the arrivals of Config.Process at start + offset, regardless
	// of completions (open loop). The default.
	Open Mode = iota
	// Closed runs Config.Workers workers, each starting its next request as
	// soon as its previous one returned (closed loop, --concurrency).
	Closed
	// Burst fires Config.Count arrivals all at the start instant (request
	// rate inf): a burst, not an open loop.
	Burst
)

// String returns the mode's name: open, closed or burst.
func (m Mode) String() string {
	switch m {
	case Open:
		return "open"
	case Closed:
		return "closed"
	case Burst:
		return "burst"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Full is what an arrival does when MaxConcurrency requests are in flight.
type Full int

// The policies for a full concurrency cap.
const (
	// Skip drops the arrival and reports it through Config.OnSkip (daemon:
	// probing must not queue behind a stuck server). The default.
	Skip Full = iota
	// Wait makes the arrival wait, in arrival order, for a free slot; the
	// wait is passed to Func as queueWait (sweep with --rates and
	// --max-concurrency, vLLM's semaphore).
	Wait
)

// String returns the policy's name: skip or wait.
func (f Full) String() string {
	switch f {
	case Skip:
		return "skip"
	case Wait:
		return "wait"
	}
	return fmt.Sprintf("Full(%d)", int(f))
}

// Func sends one request. scheduled is the intended send time (it carries a
// monotonic reading); queueWait is how long the arrival waited for a
// concurrency slot (Wait policy only, else 0). It runs in its own goroutine
// (open loop, burst) or in a worker (closed loop) and must return when ctx is
// done. Index(ctx) gives the arrival's sequence number.
type Func func(ctx context.Context, scheduled time.Time, queueWait time.Duration)

// Config describes one schedule. The zero value of every optional field is
// its default.
type Config struct {
	// Mode is Open (default), Closed or Burst.
	Mode Mode
	// Process draws the arrival offsets (Open only; required there).
	Process arrival.Process
	// Start is the origin of the schedule. Zero means the time Run is
	// called. It should come from time.Now() (monotonic reading); a start in
	// the future delays every mode until then.
	Start time.Time
	// Duration ends the schedule: no arrival at an offset >= Duration is
	// fired (Open, Burst), no request is started at or after Start + Duration
	// (Closed). 0 means no time limit.
	Duration time.Duration
	// Count ends the schedule after Count arrivals, fired or skipped (Open),
	// Count requests (Closed); required for Burst. 0 means no count limit.
	// With neither Duration nor Count, Open and Closed run until ctx ends.
	Count int64
	// MaxConcurrency caps the requests in flight (Open, Burst); 0 means no
	// cap, so in-flight goroutines are unbounded when the server stalls.
	MaxConcurrency int
	// OnFull is the policy when the cap is reached: Skip (default) or Wait.
	OnFull Full
	// Workers is the number of closed-loop workers (Closed only; >= 1).
	Workers int
	// OnSkip, if set, is called for every skipped arrival with its scheduled
	// time, on the scheduler goroutine: it must be fast and not block.
	OnSkip func(scheduled time.Time)
	// OnPanic, if set, is called when Func panics, with the arrival's
	// scheduled time, the recovered value and the stack, in the goroutine
	// that ran Func. A panic never kills the process; a panic inside OnPanic
	// is swallowed.
	OnPanic func(scheduled time.Time, recovered any, stack []byte)
}

// Validate checks the fields that apply to the mode and rejects those that
// do not.
func (c Config) Validate() error {
	if c.Duration < 0 {
		return fmt.Errorf("duration must be >= 0, got %s", c.Duration)
	}
	if c.Count < 0 {
		return fmt.Errorf("count must be >= 0, got %d", c.Count)
	}
	if c.MaxConcurrency < 0 {
		return fmt.Errorf("max concurrency must be >= 0, got %d", c.MaxConcurrency)
	}
	if c.OnFull != Skip && c.OnFull != Wait {
		return fmt.Errorf("unknown full-cap policy %d", int(c.OnFull))
	}
	switch c.Mode {
	case Open:
		if c.Process == nil {
			return errors.New("open loop needs an arrival process")
		}
		if c.Workers != 0 {
			return errors.New("workers apply to the closed loop only")
		}
	case Closed:
		if c.Workers < 1 {
			return fmt.Errorf("closed loop needs workers >= 1, got %d", c.Workers)
		}
		if c.Process != nil {
			return errors.New("closed loop takes no arrival process")
		}
		if c.MaxConcurrency != 0 {
			return errors.New("closed loop takes no max concurrency: workers bound the requests in flight")
		}
	case Burst:
		if c.Count < 1 {
			return fmt.Errorf("burst needs count >= 1, got %d", c.Count)
		}
		if c.Process != nil {
			return errors.New("burst takes no arrival process")
		}
		if c.Workers != 0 {
			return errors.New("workers apply to the closed loop only")
		}
	default:
		return fmt.Errorf("unknown mode %d", int(c.Mode))
	}
	return nil
}

// Stats counts what a schedule did.
type Stats struct {
	// Arrivals is the number of arrivals that came due (fired + skipped).
	Arrivals int64
	// Fired is the number of Func calls started.
	Fired int64
	// Skipped is the number of arrivals dropped by the Skip policy.
	Skipped int64
	// Panics is the number of Func calls that panicked.
	Panics int64
	// MaxInFlight is the highest number of Func calls running at once.
	MaxInFlight int64
	// Start is the schedule's origin; End is when Run returned.
	Start, End time.Time
}

// ErrAlreadyRun is returned by a second call to Run.
var ErrAlreadyRun = errors.New("schedule: Run called twice")

// Scheduler runs one schedule. Create it with New, call Run once; InFlight
// and Stats may be called concurrently at any time (for gauges and progress).
type Scheduler struct {
	cfg Config
	fn  Func

	started     atomic.Bool
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	arrivals    atomic.Int64
	fired       atomic.Int64
	skipped     atomic.Int64
	panics      atomic.Int64

	wg  sync.WaitGroup
	sem chan struct{} // nil without a cap

	mu    sync.Mutex
	start time.Time
}

// New validates cfg and returns a Scheduler that calls fn for every arrival.
func New(cfg Config, fn Func) (*Scheduler, error) {
	if fn == nil {
		return nil, errors.New("schedule needs a function to fire")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, fn: fn}
	if cfg.MaxConcurrency > 0 {
		s.sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	return s, nil
}

// InFlight returns the number of Func calls running now.
func (s *Scheduler) InFlight() int64 { return s.inFlight.Load() }

// Stats returns the counters so far (End is zero until Run returned).
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	start := s.start
	s.mu.Unlock()
	return Stats{
		Arrivals:    s.arrivals.Load(),
		Fired:       s.fired.Load(),
		Skipped:     s.skipped.Load(),
		Panics:      s.panics.Load(),
		MaxInFlight: s.maxInFlight.Load(),
		Start:       start,
	}
}

// Run executes the schedule. It returns when the schedule has ended (Count
// or Duration reached) and every Func call has returned, or, once ctx is
// done, when it has stopped firing and the calls in flight (which see ctx
// done) have returned. It returns ErrAlreadyRun on a second call.
func (s *Scheduler) Run(ctx context.Context) (Stats, error) {
	if s.started.Swap(true) {
		return Stats{}, ErrAlreadyRun
	}
	start := s.cfg.Start
	if start.IsZero() {
		start = time.Now()
	}
	s.mu.Lock()
	s.start = start
	s.mu.Unlock()

	switch s.cfg.Mode {
	case Closed:
		s.runClosed(ctx, start)
	case Burst:
		s.runOpen(ctx, start, burst{})
	default:
		s.runOpen(ctx, start, s.cfg.Process)
	}
	s.wg.Wait()
	st := s.Stats()
	st.End = time.Now()
	return st, nil
}

// burst is the arrival process of rate inf: every arrival at offset 0.
type burst struct{}

func (burst) Next() time.Duration { return 0 }

// preciseWindow is how much of a wait preciseSleep takes over from the Go
// timer (which can wake up to ~1 ms late).
const preciseWindow = 2 * time.Millisecond

// A waiter waits until an absolute time on the monotonic clock for one
// scheduler loop (not safe for concurrent use); until reports false when
// ctx ended first, and returns at once when at has passed.
type waiter interface {
	until(ctx context.Context, at time.Time) bool
	close()
}

// timerWaiter waits with a Go timer; with precise set (Linux), the last
// preciseWindow is slept with clock_nanosleep, which ctx cannot interrupt
// (so a cancel may wait up to that long). It is the fallback where no
// timerfd can be opened.
type timerWaiter struct {
	t       *time.Timer
	precise bool
}

func newTimerWaiter(precise bool) *timerWaiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerWaiter{t: t, precise: precise}
}

func (w *timerWaiter) until(ctx context.Context, at time.Time) bool {
	return sleepUntil(ctx, w.t, at, w.precise)
}

func (w *timerWaiter) close() { w.t.Stop() }

// goTimerUntil waits until at with a fresh Go timer.
func goTimerUntil(ctx context.Context, at time.Time) bool {
	return newTimerWaiter(false).until(ctx, at)
}

// sleepUntil waits on t (stopped, drained) until at; it reports false when
// ctx ended first. When at has passed it returns at once. With precise set,
// the last preciseWindow is slept with clock_nanosleep.
func sleepUntil(ctx context.Context, t *time.Timer, at time.Time, precise bool) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	if precise {
		d -= preciseWindow
	}
	if d > 0 {
		t.Reset(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	if precise {
		preciseSleep(at)
	}
	return ctx.Err() == nil
}

func (s *Scheduler) runOpen(ctx context.Context, start time.Time, proc arrival.Process) {
	w := newWaiter()
	defer w.close()
	// blockedUntil is when the loop last finished waiting for a slot (Wait
	// policy). An arrival due before it queued behind earlier arrivals, so
	// its whole lateness is queue wait.
	var blockedUntil time.Time
	for i := int64(0); s.cfg.Count == 0 || i < s.cfg.Count; i++ {
		off := proc.Next()
		if s.cfg.Duration > 0 && off >= s.cfg.Duration {
			return
		}
		at := start.Add(off)
		if !w.until(ctx, at) {
			return
		}
		s.arrivals.Add(1)
		var wait time.Duration
		if s.sem != nil {
			select {
			case s.sem <- struct{}{}:
				if blockedUntil.After(at) {
					wait = time.Since(at)
				}
			default:
				if s.cfg.OnFull == Skip {
					s.skipped.Add(1)
					if s.cfg.OnSkip != nil {
						s.cfg.OnSkip(at)
					}
					continue
				}
				select {
				case s.sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				blockedUntil = time.Now()
				wait = blockedUntil.Sub(at)
			}
		}
		s.begin()
		s.wg.Go(func() {
			defer s.release()
			s.call(ctx, i, at, wait)
		})
	}
}

func (s *Scheduler) runClosed(ctx context.Context, start time.Time) {
	if !goTimerUntil(ctx, start) {
		return
	}
	var next atomic.Int64
	end := start.Add(s.cfg.Duration)
	for range s.cfg.Workers {
		s.wg.Go(func() {
			for ctx.Err() == nil {
				now := time.Now()
				if s.cfg.Duration > 0 && !now.Before(end) {
					return
				}
				i := next.Add(1) - 1
				if s.cfg.Count > 0 && i >= s.cfg.Count {
					return
				}
				s.arrivals.Add(1)
				s.begin()
				s.call(ctx, i, now, 0)
				s.inFlight.Add(-1)
			}
		})
	}
}

// begin counts a fired call as in flight.
func (s *Scheduler) begin() {
	s.fired.Add(1)
	n := s.inFlight.Add(1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			return
		}
	}
}

// release ends an open-loop call: in flight down, slot freed.
func (s *Scheduler) release() {
	s.inFlight.Add(-1)
	if s.sem != nil {
		<-s.sem
	}
}

// call runs fn with the arrival index in ctx and turns a panic into an
// OnPanic report.
func (s *Scheduler) call(ctx context.Context, i int64, at time.Time, wait time.Duration) {
	defer func() {
		if v := recover(); v != nil {
			s.panics.Add(1)
			s.reportPanic(at, v, debug.Stack())
		}
	}()
	s.fn(context.WithValue(ctx, indexKey{}, i), at, wait)
}

func (s *Scheduler) reportPanic(at time.Time, v any, stack []byte) {
	if s.cfg.OnPanic == nil {
		return
	}
	defer func() { _ = recover() }()
	s.cfg.OnPanic(at, v, stack)
}

type indexKey struct{}

// Index returns the sequence number of the arrival a Func call serves
// (0-based, in schedule order; skipped arrivals use up their numbers, so
// fired indices can have gaps). Use it to pick the workload item of an
// arrival deterministically. ok is false outside a Func call.
func Index(ctx context.Context) (i int64, ok bool) {
	i, ok = ctx.Value(indexKey{}).(int64)
	return i, ok
}
