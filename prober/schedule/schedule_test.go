package schedule

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmprobe/llmprobe/prober/arrival"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func constant(t testing.TB, rate float64) arrival.Process {
	t.Helper()
	p, err := arrival.New(arrival.KindConstant, rate, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fire is one observed Func call.
type fire struct {
	index     int64
	scheduled time.Time
	actual    time.Time
	queueWait time.Duration
}

type recorder struct {
	mu    sync.Mutex
	fires []fire
}

func (r *recorder) add(ctx context.Context, scheduled time.Time, qw time.Duration) {
	now := time.Now()
	i, ok := Index(ctx)
	if !ok {
		panic("no index in ctx")
	}
	r.mu.Lock()
	r.fires = append(r.fires, fire{index: i, scheduled: scheduled, actual: now, queueWait: qw})
	r.mu.Unlock()
}

func (r *recorder) sorted() []fire {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.fires)
	slices.SortFunc(out, func(a, b fire) int { return int(a.index - b.index) })
	return out
}

func run(t *testing.T, ctx context.Context, cfg Config, fn Func) Stats {
	t.Helper()
	s, err := New(cfg, fn)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx); !errors.Is(err, ErrAlreadyRun) {
		t.Fatalf("second Run: %v, want ErrAlreadyRun", err)
	}
	return st
}

func TestOpenLoopFiresInOrderAtTheirTimes(t *testing.T) {
	var r recorder
	start := time.Now().Add(20 * time.Millisecond)
	st := run(t, context.Background(), Config{Process: constant(t, 200), Start: start, Count: 50}, r.add)
	if st.Arrivals != 50 || st.Fired != 50 || st.Skipped != 0 || st.Panics != 0 {
		t.Fatalf("stats %+v, want 50 arrivals fired", st)
	}
	fires := r.sorted()
	if len(fires) != 50 {
		t.Fatalf("%d calls, want 50", len(fires))
	}
	var lag time.Duration
	for i, f := range fires {
		if f.index != int64(i) {
			t.Fatalf("call %d has index %d", i, f.index)
		}
		want := start.Add(time.Duration(i+1) * 5 * time.Millisecond)
		if !f.scheduled.Equal(want) {
			t.Fatalf("arrival %d scheduled at %v, want %v (absolute, start + (i+1)/rate)", i, f.scheduled.Sub(start), want.Sub(start))
		}
		if f.actual.Before(f.scheduled) {
			t.Fatalf("arrival %d fired %v early", i, f.scheduled.Sub(f.actual))
		}
		if f.queueWait != 0 {
			t.Fatalf("arrival %d has queue wait %v without a cap", i, f.queueWait)
		}
		lag += f.actual.Sub(f.scheduled)
	}
	// Loose: only catches a scheduler that sleeps relatively or serialises.
	if mean := lag / 50; mean > 100*time.Millisecond {
		t.Fatalf("mean lag %v", mean)
	}
}

func TestOpenLoopDoesNotWaitForCompletions(t *testing.T) {
	// Every call blocks until all 20 have started: a scheduler that waited
	// for completions would deadlock (and fail by the test's timeout).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var started sync.WaitGroup
	started.Add(20)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	st := run(t, ctx, Config{Process: constant(t, 1000), Count: 20}, func(ctx context.Context, _ time.Time, _ time.Duration) {
		started.Done()
		select {
		case <-all:
		case <-ctx.Done():
		}
	})
	if ctx.Err() != nil {
		t.Fatal("calls never all in flight at once: the open loop waited for completions")
	}
	if st.MaxInFlight != 20 {
		t.Fatalf("MaxInFlight = %d, want 20", st.MaxInFlight)
	}
}

func TestDurationEnd(t *testing.T) {
	var n atomic.Int64
	st := run(t, context.Background(), Config{Process: constant(t, 100), Duration: 100 * time.Millisecond},
		func(context.Context, time.Time, time.Duration) { n.Add(1) })
	// Offsets 10, 20, ..., 90 ms are < 100 ms; 100 ms is not.
	if n.Load() != 9 || st.Fired != 9 || st.Arrivals != 9 {
		t.Fatalf("fired %d (stats %+v), want 9", n.Load(), st)
	}
}

func TestSkipWhenFull(t *testing.T) {
	release := make(chan struct{})
	var skipped []time.Time
	var inside, maxInside atomic.Int64
	cfg := Config{
		Process: constant(t, 1000), Count: 20, MaxConcurrency: 2,
		OnSkip: func(at time.Time) {
			skipped = append(skipped, at) // scheduler goroutine only
			if len(skipped) == 18 {
				close(release)
			}
		},
	}
	var r recorder
	st := run(t, context.Background(), cfg, func(ctx context.Context, at time.Time, qw time.Duration) {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
		}
		r.add(ctx, at, qw)
		<-release
	})
	if st.Fired != 2 || st.Skipped != 18 || st.Arrivals != 20 || len(skipped) != 18 {
		t.Fatalf("stats %+v, OnSkip calls %d; want 2 fired, 18 skipped", st, len(skipped))
	}
	if maxInside.Load() != 2 || st.MaxInFlight != 2 {
		t.Fatalf("max in flight %d / %d, want 2", maxInside.Load(), st.MaxInFlight)
	}
	fires := r.sorted()
	if fires[0].index != 0 || fires[1].index != 1 {
		t.Fatalf("fired indices %d, %d; want 0, 1", fires[0].index, fires[1].index)
	}
	for i := 1; i < len(skipped); i++ {
		if !skipped[i].After(skipped[i-1]) {
			t.Fatalf("skipped arrivals out of order at %d", i)
		}
	}
}

func TestSkipResumesWhenSlotsFree(t *testing.T) {
	// Cap 1, calls take ~25 ms, arrivals every 10 ms for 200 ms: some are
	// skipped, some fired after earlier calls finished.
	var inside, maxInside atomic.Int64
	st := run(t, context.Background(), Config{Process: constant(t, 100), Duration: 200 * time.Millisecond, MaxConcurrency: 1},
		func(context.Context, time.Time, time.Duration) {
			n := inside.Add(1)
			if n > maxInside.Load() {
				maxInside.Store(n)
			}
			time.Sleep(25 * time.Millisecond)
			inside.Add(-1)
		})
	if maxInside.Load() != 1 {
		t.Fatalf("max in flight %d with cap 1", maxInside.Load())
	}
	if st.Arrivals != 19 || st.Fired+st.Skipped != 19 || st.Fired < 2 || st.Skipped < 1 {
		t.Fatalf("stats %+v: want 19 arrivals, several fired and some skipped", st)
	}
}

func TestWaitMeasuresQueueWait(t *testing.T) {
	var r recorder
	var inside, maxInside atomic.Int64
	st := run(t, context.Background(), Config{Process: constant(t, 1000), Count: 5, MaxConcurrency: 1, OnFull: Wait},
		func(ctx context.Context, at time.Time, qw time.Duration) {
			n := inside.Add(1)
			if n > maxInside.Load() {
				maxInside.Store(n)
			}
			r.add(ctx, at, qw)
			time.Sleep(20 * time.Millisecond)
			inside.Add(-1)
		})
	if st.Fired != 5 || st.Skipped != 0 {
		t.Fatalf("stats %+v, want all 5 fired", st)
	}
	if maxInside.Load() != 1 {
		t.Fatalf("max in flight %d with cap 1", maxInside.Load())
	}
	fires := r.sorted()
	if fires[0].queueWait != 0 {
		t.Fatalf("first arrival waited %v", fires[0].queueWait)
	}
	for i := 1; i < 5; i++ {
		// Arrival i is due at (i+1) ms and can start only after i calls of
		// >= 20 ms each, so it waited at least i*20 - (i+1) ms.
		minWait := time.Duration(i*20-(i+1)) * time.Millisecond
		if fires[i].queueWait < minWait {
			t.Fatalf("arrival %d queue wait %v, want >= %v", i, fires[i].queueWait, minWait)
		}
		if fires[i].actual.Sub(fires[i].scheduled) < fires[i].queueWait {
			t.Fatalf("arrival %d: queue wait %v longer than its lateness %v", i, fires[i].queueWait, fires[i].actual.Sub(fires[i].scheduled))
		}
		if !fires[i].actual.After(fires[i-1].actual) {
			t.Fatalf("arrival %d started before arrival %d: not in arrival order", i, i-1)
		}
	}
}

func TestClosedLoopKeepsNInFlight(t *testing.T) {
	const workers, count = 4, 40
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var inside, maxInside, calls atomic.Int64
	var barrier sync.WaitGroup
	barrier.Add(workers)
	all := make(chan struct{})
	go func() { barrier.Wait(); close(all) }()
	st := run(t, ctx, Config{Mode: Closed, Workers: workers, Count: count}, func(ctx context.Context, at time.Time, qw time.Duration) {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
		}
		if i, _ := Index(ctx); i < workers {
			// The first round must have every worker in flight at once.
			barrier.Done()
			select {
			case <-all:
			case <-ctx.Done():
			}
		}
		if qw != 0 || time.Since(at) < 0 {
			panic("closed loop has no queue wait")
		}
		calls.Add(1)
		time.Sleep(time.Millisecond)
	})
	if ctx.Err() != nil {
		t.Fatal("the workers were never all in flight together")
	}
	if calls.Load() != count || st.Fired != count || st.Panics != 0 {
		t.Fatalf("%d calls, stats %+v; want %d", calls.Load(), st, count)
	}
	if maxInside.Load() != workers || st.MaxInFlight != workers {
		t.Fatalf("max in flight %d / %d, want %d", maxInside.Load(), st.MaxInFlight, workers)
	}
}

func TestClosedLoopDuration(t *testing.T) {
	var calls atomic.Int64
	begin := time.Now()
	st := run(t, context.Background(), Config{Mode: Closed, Workers: 2, Duration: 50 * time.Millisecond},
		func(context.Context, time.Time, time.Duration) { calls.Add(1); time.Sleep(5 * time.Millisecond) })
	if calls.Load() < 2 || st.Fired != calls.Load() {
		t.Fatalf("calls %d, stats %+v", calls.Load(), st)
	}
	if el := time.Since(begin); el < 50*time.Millisecond {
		t.Fatalf("closed loop ended after %v, before its 50ms", el)
	}
}

func TestBurst(t *testing.T) {
	tests := []struct {
		name    string
		cap     int
		full    Full
		fired   int64
		maxIn   int64
		skipped int64
	}{
		{name: "no cap", fired: 10, maxIn: 10},
		{name: "cap wait", cap: 3, full: Wait, fired: 10, maxIn: 3},
		{name: "cap skip", cap: 3, full: Skip, fired: 3, skipped: 7, maxIn: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			start := time.Now().Add(10 * time.Millisecond)
			release := make(chan struct{})
			var once sync.Once
			var started atomic.Int64
			cfg := Config{Mode: Burst, Count: 10, Start: start, MaxConcurrency: tc.cap, OnFull: tc.full}
			if tc.full == Skip && tc.cap > 0 {
				var n int64
				cfg.OnSkip = func(time.Time) {
					if n++; n == tc.skipped {
						once.Do(func() { close(release) })
					}
				}
			}
			st := run(t, context.Background(), cfg, func(ctx context.Context, at time.Time, qw time.Duration) {
				r.add(ctx, at, qw)
				if started.Add(1) == tc.maxIn && (tc.full != Skip || tc.cap == 0) {
					once.Do(func() { close(release) })
				}
				<-release // hold the slot until the cap is full
			})
			if st.Fired != tc.fired || st.Skipped != tc.skipped || st.MaxInFlight != tc.maxIn {
				t.Fatalf("stats %+v, want fired %d skipped %d max in flight %d", st, tc.fired, tc.skipped, tc.maxIn)
			}
			for _, f := range r.sorted() {
				if !f.scheduled.Equal(start) {
					t.Fatalf("burst arrival %d scheduled %v after start", f.index, f.scheduled.Sub(start))
				}
			}
		})
	}
}

func TestCancelStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var fired, sawCancel atomic.Int64
	s, err := New(Config{Process: constant(t, 200)}, func(ctx context.Context, _ time.Time, _ time.Duration) {
		if fired.Add(1) == 5 {
			cancel()
		}
		<-ctx.Done() // a long request, ended by the cancel
		sawCancel.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Stats)
	go func() { st, _ := s.Run(ctx); done <- st }()
	select {
	case st := <-done:
		if st.Fired < 5 || sawCancel.Load() != st.Fired || s.InFlight() != 0 {
			t.Fatalf("stats %+v, %d calls saw the cancel, in flight %d", st, sawCancel.Load(), s.InFlight())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestCancelWhileWaitingForSlot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var fired atomic.Int64
	st := run(t, ctx, Config{Process: constant(t, 1000), MaxConcurrency: 1, OnFull: Wait}, func(ctx context.Context, _ time.Time, _ time.Duration) {
		fired.Add(1)
		time.AfterFunc(20*time.Millisecond, cancel)
		<-ctx.Done()
	})
	if st.Fired != 1 || fired.Load() != 1 {
		t.Fatalf("stats %+v, want exactly the one call that held the slot", st)
	}
}

func TestCanceledBeforeRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, cfg := range []Config{
		{Process: constant(t, 1000)},
		{Mode: Closed, Workers: 3},
		{Mode: Burst, Count: 5, Start: time.Now().Add(time.Hour)},
	} {
		st := run(t, ctx, cfg, func(context.Context, time.Time, time.Duration) { t.Error("fired after cancel") })
		if st.Fired != 0 {
			t.Fatalf("%v: fired %d", cfg.Mode, st.Fired)
		}
	}
}

func TestPanicIsRecovered(t *testing.T) {
	var mu sync.Mutex
	var reports []string
	var calls atomic.Int64
	cfg := Config{
		Process: constant(t, 1000), Count: 6,
		OnPanic: func(at time.Time, v any, stack []byte) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, v.(string))
			if !strings.Contains(string(stack), "schedule_test.go") {
				t.Error("stack does not show the panicking function")
			}
			panic("OnPanic itself panics") // must be swallowed too
		},
	}
	st := run(t, context.Background(), cfg, func(ctx context.Context, _ time.Time, _ time.Duration) {
		calls.Add(1)
		if i, _ := Index(ctx); i%3 == 2 {
			panic("boom")
		}
	})
	if st.Fired != 6 || st.Panics != 2 || calls.Load() != 6 || len(reports) != 2 || reports[0] != "boom" {
		t.Fatalf("stats %+v, calls %d, reports %q", st, calls.Load(), reports)
	}
	// Closed loop: a panicking call does not kill its worker.
	var closedCalls atomic.Int64
	st = run(t, context.Background(), Config{Mode: Closed, Workers: 1, Count: 3}, func(context.Context, time.Time, time.Duration) {
		closedCalls.Add(1)
		panic("closed boom")
	})
	if st.Panics != 3 || closedCalls.Load() != 3 {
		t.Fatalf("closed loop stats %+v, calls %d", st, closedCalls.Load())
	}
}

func TestValidate(t *testing.T) {
	p := constant(t, 1)
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "open ok", cfg: Config{Process: p}},
		{name: "closed ok", cfg: Config{Mode: Closed, Workers: 1}},
		{name: "burst ok", cfg: Config{Mode: Burst, Count: 1}},
		{name: "open without process", cfg: Config{}, wantErr: "open loop needs an arrival process"},
		{name: "open with workers", cfg: Config{Process: p, Workers: 2}, wantErr: "workers apply to the closed loop only"},
		{name: "closed without workers", cfg: Config{Mode: Closed}, wantErr: "closed loop needs workers >= 1, got 0"},
		{name: "closed with process", cfg: Config{Mode: Closed, Workers: 1, Process: p}, wantErr: "closed loop takes no arrival process"},
		{name: "closed with cap", cfg: Config{Mode: Closed, Workers: 1, MaxConcurrency: 2}, wantErr: "closed loop takes no max concurrency"},
		{name: "burst without count", cfg: Config{Mode: Burst}, wantErr: "burst needs count >= 1, got 0"},
		{name: "burst with process", cfg: Config{Mode: Burst, Count: 1, Process: p}, wantErr: "burst takes no arrival process"},
		{name: "negative duration", cfg: Config{Process: p, Duration: -1}, wantErr: "duration must be >= 0, got -1ns"},
		{name: "negative count", cfg: Config{Process: p, Count: -1}, wantErr: "count must be >= 0, got -1"},
		{name: "negative cap", cfg: Config{Process: p, MaxConcurrency: -1}, wantErr: "max concurrency must be >= 0, got -1"},
		{name: "bad policy", cfg: Config{Process: p, OnFull: 7}, wantErr: "unknown full-cap policy 7"},
		{name: "bad mode", cfg: Config{Mode: 9}, wantErr: "unknown mode 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, func(context.Context, time.Time, time.Duration) {})
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if _, err := New(Config{Process: p}, nil); err == nil {
		t.Fatal("New accepted a nil func")
	}
	if _, ok := Index(context.Background()); ok {
		t.Fatal("Index outside a call reported ok")
	}
}
