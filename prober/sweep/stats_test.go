package sweep

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// fixedRecords are five requests whose statistics are computed by hand in
// TestComputeStats (numpy's linear percentiles).
func fixedRecords() []prober.Record {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	msd := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	rec := func(sched, lag float64) prober.Record {
		return prober.Record{
			Scheduled: t0.Add(msd(sched)), Sent: t0.Add(msd(sched + lag)), SendLag: msd(lag),
			OutputTokensRequested: 5,
		}
	}
	r1 := rec(0, 1)
	r1.TTFT, r1.TTFTText, r1.ITL, r1.E2E = msd(100), msd(100), []time.Duration{msd(40), msd(40)}, msd(180)
	r1.InputTokens, r1.PromptTokens, r1.CompletionTokens, r1.FinishReason = 10, 10, 5, "length"
	r2 := rec(500, 2)
	r2.TTFT, r2.TTFTText, r2.ITL, r2.E2E = msd(200), msd(210), []time.Duration{msd(100)}, msd(300)
	r2.InputTokens, r2.PromptTokens, r2.CompletionTokens, r2.FinishReason = 10, 12, 2, "stop"
	r3 := rec(700, 0)
	r3.TTFT, r3.TTFTText, r3.E2E = msd(50), msd(50), msd(50)
	r3.InputTokens, r3.CompletionTokens = 20, 1 // no usage: PromptTokens 0, no finish reason
	r4 := rec(1500, 3)
	r4.InputTokens, r4.Error = 10, prober.ClassHTTP5xx
	r5 := rec(2000, 0)
	r5.InputTokens, r5.Error = 30, prober.ClassTimeout
	return []prober.Record{r1, r2, r3, r4, r5}
}

func TestComputeStats(t *testing.T) {
	s := accumulate(fixedRecords(), StatsOptions{
		SLO:      slo.SLO{TTFT: 150 * time.Millisecond, TPOT: 50 * time.Millisecond},
		Duration: 4 * time.Second,
	})
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %.12g, want %.12g", name, got, want)
		}
	}
	nums := []struct {
		name      string
		got, want float64
	}{
		{"duration", s.Duration, 4},
		{"requests", float64(s.Requests), 5},
		// vLLM's latencies and queue_times arrays: seconds, failed
		// requests 0.
		{"latencies[0]", s.Latencies[0], 0.18},
		{"latencies[1]", s.Latencies[1], 0.3},
		{"latencies[2]", s.Latencies[2], 0.05},
		{"latencies[3]", s.Latencies[3], 0},
		{"latencies[4]", s.Latencies[4], 0},
		{"queue_times[0]", s.QueueTimes[0], 0},
		{"len(queue_times)", float64(len(s.QueueTimes)), 5},
		{"completed", float64(s.Completed), 3},
		{"failed", float64(s.Failed), 2},
		{"error_rate", s.ErrorRate, 0.4},
		{"good", float64(s.Good), 2}, // r1 and r3; r2's TTFT 200 > 150
		{"total_input_tokens", float64(s.TotalInputTokens), 42},
		{"total_output_tokens", float64(s.TotalOutputTokens), 8},
		{"request_throughput", s.RequestThroughput, 0.75},
		{"request_goodput", s.RequestGoodput, 0.5},
		{"output_throughput", s.OutputThroughput, 2},
		{"total_token_throughput", s.TotalTokenThroughput, 12.5},
		{"max_output_tokens_per_s", s.MaxOutputTokensPerS, 6},
		{"max_concurrent_requests", float64(s.MaxConcurrentRequests), 2},
		{"mean_ttft_ms", s.TTFT.Mean, 350.0 / 3},
		{"median_ttft_ms", s.TTFT.Median, 100},
		{"std_ttft_ms", s.TTFT.Std, math.Sqrt((math.Pow(100-350.0/3, 2) + math.Pow(200-350.0/3, 2) + math.Pow(50-350.0/3, 2)) / 3)},
		{"p50_ttft_ms", s.TTFT.P50, 100},
		{"p90_ttft_ms", s.TTFT.P90, 180},
		{"p99_ttft_ms", s.TTFT.P99, 198},
		{"p99_ttft_text_ms", s.TTFTText.P99, 100 + 0.98*110},
		{"mean_tpot_ms", s.TPOT.Mean, 60},
		{"p99_tpot_ms", s.TPOT.P99, 99.2},
		{"n_tpot", float64(s.TPOT.N), 2},
		{"mean_itl_ms", s.ITL.Mean, 60},
		{"median_itl_ms", s.ITL.Median, 40},
		{"p99_itl_ms", s.ITL.P99, 98.8},
		{"mean_e2el_ms", s.E2EL.Mean, 530.0 / 3},
		{"p99_e2el_ms", s.E2EL.P99, 297.6},
		{"mean_send_lag_ms", s.SendLag.Mean, 1.2},
		{"p99_send_lag_ms", s.SendLag.P99, 2.96},
		{"max_e2el_from_scheduled_ms", s.E2ELFromScheduled.Max, 302},
		{"scheduled_rate", s.ScheduledRate, 2},
		{"achieved_rate", s.AchievedRate, 4 / 1.999},
		{"input p10", s.InputTokens.P10, 10},
		{"input p50", s.InputTokens.P50, 12},
		{"input p90", s.InputTokens.P90, 26},
		{"input p99", s.InputTokens.P99, 29.6},
		{"input max", s.InputTokens.Max, 30},
		{"input mean", s.InputTokens.Mean, 16.4},
		{"requested output p99", s.RequestedOutputTokens.P99, 5},
		{"output p10", s.OutputTokens.P10, 1.2},
		{"output p90", s.OutputTokens.P90, 4.4},
		{"output p99", s.OutputTokens.P99, 4.94},
		{"output max", s.OutputTokens.Max, 5},
	}
	for _, n := range nums {
		near(n.name, n.got, n.want)
	}
	if got := s.FailedByClass; len(got) != 2 || got["http_5xx"] != 1 || got["timeout"] != 1 {
		t.Errorf("failed_by_class = %v", got)
	}
	if got := s.FinishReasons; len(got) != 3 || got["length"] != 1 || got["stop"] != 1 || got["unknown"] != 1 {
		t.Errorf("finish_reasons = %v", got)
	}
	if s.SLOHeld || len(s.SLOChecks) != 2 || s.SLOChecks[0].Held || s.SLOChecks[1].Held {
		t.Errorf("SLO checks = %+v held=%v, want ttft and tpot failing", s.SLOChecks, s.SLOHeld)
	}
	if s.TTFT.P99Reliable || s.TTFT.P99CI == nil {
		t.Errorf("p99 over 3 samples must be flagged unreliable with a CI, got %+v", s.TTFT)
	} else if ci := s.TTFT.P99CI; ci.Lo < 50 || ci.Hi > 200 || ci.Lo > ci.Hi {
		t.Errorf("p99 CI %+v outside the data range", ci)
	}
}

func TestComputeStatsEdges(t *testing.T) {
	tests := []struct {
		name  string
		recs  []prober.Record
		opts  StatsOptions
		check func(t *testing.T, s Stats)
	}{
		{
			name: "no records",
			check: func(t *testing.T, s Stats) {
				if s.Completed != 0 || s.Duration != 0 || s.RequestThroughput != 0 || !s.SLOHeld || s.TTFT.N != 0 {
					t.Errorf("got %+v", s)
				}
			},
		},
		{
			name: "no SLO: every success is good; duration derived from records",
			recs: fixedRecords(),
			check: func(t *testing.T, s Stats) {
				if s.Good != 3 || !s.SLOHeld || len(s.SLOChecks) != 0 {
					t.Errorf("good %d held %v checks %v", s.Good, s.SLOHeld, s.SLOChecks)
				}
				// earliest scheduled 0 ms, latest end: r2 sent 502 + 300 = 802 ms, r5 at 2000.
				if s.Duration != 2 {
					t.Errorf("derived duration = %v, want 2", s.Duration)
				}
			},
		},
		{
			name: "queue wait is not client lag",
			recs: []prober.Record{{SendLag: 50 * time.Millisecond, QueueWait: 49 * time.Millisecond, Error: prober.ClassCanceled}},
			check: func(t *testing.T, s Stats) {
				if s.SendLag.Max != 1 || s.QueueTime.Max != 49 {
					t.Errorf("send lag %v ms, queue %v ms; want 1 and 49", s.SendLag.Max, s.QueueTime.Max)
				}
			},
		},
		{
			name: "extra percentiles",
			recs: fixedRecords(),
			opts: StatsOptions{Percentiles: []float64{99.9, 75}},
			check: func(t *testing.T, s Stats) {
				if v, ok := s.TTFT.Percentile(75); !ok || v != 150 {
					t.Errorf("p75 ttft = %v %v, want 150", v, ok)
				}
				if v, ok := s.TTFT.Percentile(99.9); !ok || math.Abs(v-199.8) > 1e-9 {
					t.Errorf("p99.9 ttft = %v %v, want 199.8", v, ok)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, accumulate(tt.recs, tt.opts))
		})
	}
}

// accumulate feeds recs to a StatsAccumulator in arrival order.
func accumulate(recs []prober.Record, o StatsOptions) Stats {
	a := NewStatsAccumulator(o)
	for i := range recs {
		a.Add(int64(i), &recs[i])
	}
	return a.Stats(0)
}

// randomRecords draws n records of a step started at t0: some failed, some
// without usage, varied ITL gaps, a few zero send times.
func randomRecords(n int, t0 time.Time, seed uint64) []prober.Record {
	r := rand.New(rand.NewPCG(seed, 1))
	msd := func(lo, hi float64) time.Duration {
		return time.Duration((lo + r.Float64()*(hi-lo)) * float64(time.Millisecond))
	}
	classes := []prober.ErrorClass{prober.ClassHTTP5xx, prober.ClassTimeout, prober.ClassStream}
	reasons := []string{"length", "stop", ""}
	recs := make([]prober.Record, n)
	for i := range recs {
		sched := t0.Add(time.Duration(i) * 7 * time.Millisecond)
		lag := msd(0, 3)
		rec := prober.Record{Scheduled: sched, Sent: sched.Add(lag), SendLag: lag, OutputTokensRequested: 1 + r.IntN(16),
			InputTokens: 10 + r.IntN(50), WallStart: sched}
		if r.IntN(5) == 0 {
			rec.QueueWait = msd(0, 2)
			rec.SendLag += rec.QueueWait
		}
		switch k := r.IntN(10); {
		case k == 0:
			rec.Error = classes[r.IntN(len(classes))]
		case k == 1 && i > 0:
			rec.Sent = time.Time{} // never sent
			rec.Error = prober.ClassCanceled
		default:
			rec.TTFT = msd(20, 400)
			if r.IntN(5) != 0 { // else an answer without content (a tool call)
				rec.TTFTText = rec.TTFT + msd(0, 5)
			}
			out := 1 + r.IntN(16)
			e2e := rec.TTFT
			for range out - 1 {
				g := msd(1, 60)
				rec.ITL = append(rec.ITL, g)
				e2e += g
			}
			rec.E2E, rec.Done, rec.Events = e2e, e2e+msd(0, 1), out
			// With usage, or counted by the client (one per token event).
			rec.CompletionTokens, rec.TokensCounted = out, true
			if r.IntN(4) != 0 {
				rec.PromptTokens, rec.TokensCounted = rec.InputTokens+r.IntN(3), false
			}
			rec.FinishReason = reasons[r.IntN(len(reasons))]
		}
		recs[i] = rec
	}
	return recs
}

// TestAccumulatorMatchesReference feeds records in a shuffled order from
// several goroutines and checks that the accumulator's Stats equal the
// batch computation's over the records in arrival order, bit for bit.
func TestAccumulatorMatchesReference(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	f := func(name string, n int, o StatsOptions) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			recs := randomRecords(n, t0, uint64(n))
			want := referenceStats(recs, o)
			a := NewStatsAccumulator(o)
			order := rand.New(rand.NewPCG(7, 7)).Perm(n)
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for k := w; k < n; k += 4 {
						i := order[k]
						a.Add(int64(i), &recs[i])
					}
				})
			}
			wg.Wait()
			got := a.Stats(0)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("accumulator differs from the batch computation:\n got %+v\nwant %+v", got, want)
			}
		})
	}
	sl := slo.SLO{TTFT: 200 * time.Millisecond, TPOT: 30 * time.Millisecond, E2EL: time.Second}
	f("none", 0, StatsOptions{})
	f("few requests: bootstrap CIs", 40, StatsOptions{SLO: sl, Seed: 3})
	f("a handful: ITL bootstrap too", 6, StatsOptions{SLO: sl, Seed: 5, Percentiles: []float64{75}})
	f("open loop with a window", 500, StatsOptions{SLO: sl, Percentiles: []float64{75, 99.9}, RequestedRate: 140,
		Start: t0, Window: 3 * time.Second, Duration: 4 * time.Second})
	f("open loop, window from the schedule", 500, StatsOptions{RequestedRate: 140, Start: t0, Seed: 9})
	f("closed loop, derived duration", 300, StatsOptions{SLO: sl})
	f("burst", 120, StatsOptions{RequestedRate: math.Inf(1), Duration: 2 * time.Second})
}
