package schedule

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/arrival"
)

// BenchmarkSendLag1000 fires a Poisson schedule at 1,000 req/s for 1.5 s per
// iteration with a trivial Func that records actual - scheduled, and reports
// the lag percentiles over every arrival (lag-p50-us, lag-p99-us,
// lag-max-us) plus the achieved rate. ns/op is the wall time of one 1.5 s
// schedule and is not meaningful on its own. "default" waits on a timerfd
// (Linux); "nanosleep" is the fallback (a Go timer, then clock_nanosleep
// for the last 2 ms) and "timer" the Go timer alone, for comparison. Run it
// under `taskset -c 0` too: on one CPU the ways differ most.
func BenchmarkSendLag1000(b *testing.B) {
	defer func(p, f bool) { preciseSleepSupported, timerfdSupported = p, f }(preciseSleepSupported, timerfdSupported)
	precise, fd := preciseSleepSupported, timerfdSupported
	b.Run("default", func(b *testing.B) { preciseSleepSupported, timerfdSupported = precise, fd; benchSendLag(b) })
	b.Run("nanosleep", func(b *testing.B) { preciseSleepSupported, timerfdSupported = precise, false; benchSendLag(b) })
	b.Run("timer", func(b *testing.B) { preciseSleepSupported, timerfdSupported = false, false; benchSendLag(b) })
}

func benchSendLag(b *testing.B) {
	const rate, dur = 1000.0, 1500 * time.Millisecond
	var all []time.Duration
	var fired int64
	var elapsed time.Duration
	seed := uint64(1)
	for b.Loop() {
		p, err := arrival.New(arrival.KindPoisson, rate, 1, seed)
		if err != nil {
			b.Fatal(err)
		}
		seed++
		lags := make([]time.Duration, 4*int(rate*dur.Seconds()))
		s, err := New(Config{Process: p, Duration: dur, Count: int64(len(lags))}, func(ctx context.Context, scheduled time.Time, _ time.Duration) {
			lag := time.Since(scheduled)
			i, _ := Index(ctx)
			lags[i] = lag
		})
		if err != nil {
			b.Fatal(err)
		}
		st, err := s.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, lags[:st.Fired]...)
		fired += st.Fired
		elapsed += dur
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))]) / 1e3
	}
	b.ReportMetric(pct(0.5), "lag-p50-us")
	b.ReportMetric(pct(0.99), "lag-p99-us")
	b.ReportMetric(float64(all[len(all)-1])/1e3, "lag-max-us")
	b.ReportMetric(float64(fired)/elapsed.Seconds(), "req/s")
}
