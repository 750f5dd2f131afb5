package probemetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSweepMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s := NewSweeps(reg)
	end := time.Unix(1700000000, 500_000_000)
	s.SweepRunning("sim", false)
	s.SweepScheduled("sim", "nightly", 24*time.Hour)
	s.SweepScheduled("sim", "gone", time.Hour)
	s.SweepScheduled("sim", "gone", 0)
	s.SweepRestored("sim", "nightly", capacity.Last{Knee: 16, KneeFound: true, MaxGoodput: 15.5, KneeUnit: "req/s",
		Finished: end, Duration: 90 * time.Second, Steps: []capacity.StepPoint{
			{Label: "rate=8", Goodput: 8, Throughput: 8, TTFTP99: 0.1, TPOTP99: 0.01, Valid: true},
			{Label: "rate=16", Goodput: 15.5, Throughput: 16, TTFTP99: 0.5, TPOTP99: 0.04, Valid: true}}})
	// A failed sweep counts, and keeps the knee.
	s.SweepRunning("sim", true)
	s.SweepFinished("sim", "nightly", capacity.ResultFailed, time.Minute, nil)
	// A closed loop's knee is not a rate: only max goodput moves.
	s.SweepFinished("sim", "closed", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 8, KneeUnit: "concurrency",
		MaxGoodput: 7, Finished: end, Duration: time.Minute})
	const want = `
# HELP llmprobe_sweep_knee_requests_per_second Capacity knee of the last successful sweep that decided one: the highest request rate at which goodput kept up and the SLO p99s held (a lower bound when llmprobe_sweep_knee_state is bound; 0 when the lowest level run failed on valid evidence; a background sweep's in total requests/s). An undecided sweep (llmprobe_sweep_knee_decided 0) leaves it at the last decided knee; absent until one is decided.
# TYPE llmprobe_sweep_knee_requests_per_second gauge
llmprobe_sweep_knee_requests_per_second{sweep="nightly",target="sim"} 16
# HELP llmprobe_sweep_knee_bracketed 1 when the last successful sweep bracketed its knee (a higher rate failed), 0 when every rate passed and the knee is only a lower bound.
# TYPE llmprobe_sweep_knee_bracketed gauge
llmprobe_sweep_knee_bracketed{sweep="closed",target="sim"} 0
llmprobe_sweep_knee_bracketed{sweep="nightly",target="sim"} 1
# HELP llmprobe_sweep_max_goodput_requests_per_second Highest goodput of a valid step of the last successful sweep, in requests per second.
# TYPE llmprobe_sweep_max_goodput_requests_per_second gauge
llmprobe_sweep_max_goodput_requests_per_second{sweep="closed",target="sim"} 7
llmprobe_sweep_max_goodput_requests_per_second{sweep="nightly",target="sim"} 15.5
# HELP llmprobe_sweep_last_success_timestamp_seconds Unix time the last successful sweep ended.
# TYPE llmprobe_sweep_last_success_timestamp_seconds gauge
llmprobe_sweep_last_success_timestamp_seconds{sweep="closed",target="sim"} 1.7000000005e+09
llmprobe_sweep_last_success_timestamp_seconds{sweep="nightly",target="sim"} 1.7000000005e+09
# HELP llmprobe_sweep_duration_seconds How long the last successful sweep ran, in seconds.
# TYPE llmprobe_sweep_duration_seconds gauge
llmprobe_sweep_duration_seconds{sweep="closed",target="sim"} 60
llmprobe_sweep_duration_seconds{sweep="nightly",target="sim"} 90
# HELP llmprobe_sweep_runs_total Sweeps that ended, by result: success, failed (an error, or no valid step) or canceled.
# TYPE llmprobe_sweep_runs_total counter
llmprobe_sweep_runs_total{result="canceled",sweep="closed",target="sim"} 0
llmprobe_sweep_runs_total{result="canceled",sweep="gone",target="sim"} 0
llmprobe_sweep_runs_total{result="canceled",sweep="nightly",target="sim"} 0
llmprobe_sweep_runs_total{result="failed",sweep="closed",target="sim"} 0
llmprobe_sweep_runs_total{result="failed",sweep="gone",target="sim"} 0
llmprobe_sweep_runs_total{result="failed",sweep="nightly",target="sim"} 1
llmprobe_sweep_runs_total{result="success",sweep="closed",target="sim"} 1
llmprobe_sweep_runs_total{result="success",sweep="gone",target="sim"} 0
llmprobe_sweep_runs_total{result="success",sweep="nightly",target="sim"} 0
# HELP llmprobe_sweep_interval_seconds Interval of a scheduled sweep (every:, or the gap between the next two runs of its cron:), in seconds; absent for sweeps without a schedule.
# TYPE llmprobe_sweep_interval_seconds gauge
llmprobe_sweep_interval_seconds{sweep="nightly",target="sim"} 86400
# HELP llmprobe_sweep_running 1 while a sweep of the target runs (its probes' latency then includes the sweep's load), else 0.
# TYPE llmprobe_sweep_running gauge
llmprobe_sweep_running{target="sim"} 1
`
	const curve = `
# HELP llmprobe_sweep_step_goodput_requests_per_second Goodput of each step of the last successful sweep (its goodput curve), req/s.
# TYPE llmprobe_sweep_step_goodput_requests_per_second gauge
llmprobe_sweep_step_goodput_requests_per_second{step="rate=16",sweep="nightly",target="sim"} 15.5
llmprobe_sweep_step_goodput_requests_per_second{step="rate=8",sweep="nightly",target="sim"} 8
# HELP llmprobe_sweep_step_ttft_p99_seconds TTFT p99 of each step of the last successful sweep, seconds.
# TYPE llmprobe_sweep_step_ttft_p99_seconds gauge
llmprobe_sweep_step_ttft_p99_seconds{step="rate=16",sweep="nightly",target="sim"} 0.5
llmprobe_sweep_step_ttft_p99_seconds{step="rate=8",sweep="nightly",target="sim"} 0.1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(curve), NameSweepStepGoodput, NameSweepStepTTFTP99); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), SweepNames()[:8]...); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
	s.TargetRemoved("sim")
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("after TargetRemoved: %d series, %v", n, err)
	}
}

// TestSweepHeadroomMetrics: a decided knee exports the server's total rate
// at it (the knee plus the probe load of an isolated sweep, a background
// sweep's total alone); a knee of 0 decided is exported as 0; an
// undecided one says decided 0 and why (llmprobe_sweep_knee_undecided_info)
// and leaves the knee series at the last decided knee (absent when none
// was ever decided); the decided knee before the current one is the
// previous knee; the sweeps' successful requests count per target from 0.
func TestSweepHeadroomMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s := NewSweeps(reg)
	end := time.Unix(1700000000, 0)
	s.SweepRunning("a", false)
	s.SweepRequestsDone("a", 3)
	s.SweepFinished("a", "iso", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 10, Decided: true, ProbeLoad: 1,
		KneeUnit: "req/s", Finished: end, Mode: capacity.ModeIsolated, State: capacity.StateDecided, KneeFound: true})
	s.SweepFinished("a", "bg", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 24, Decided: true, ProbeLoad: 1,
		Production: 8, KneeUnit: "req/s", Finished: end, Mode: capacity.ModeBackground, State: capacity.StateBound})
	s.SweepFinished("a", "zero", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 0, Decided: true, ProbeLoad: 1,
		KneeUnit: "req/s", Finished: end, State: capacity.StateDecided})
	// Two decided sweeps, then an undecided one of the same name: the knee
	// stays at the last decided one (5), the previous at the one before (6).
	s.SweepFinished("a", "short", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 6, Decided: true, KneeUnit: "req/s", Finished: end, State: capacity.StateDecided})
	s.SweepFinished("a", "short", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 5, Decided: true, KneeUnit: "req/s", Finished: end, State: capacity.StateDecided})
	s.SweepFinished("a", "short", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 0, Decided: true, KneeUnit: "req/s", Finished: end,
		State: capacity.StateUndecided, Undecided: "no_evidence_below"})
	// Undecided from the start: no knee at all.
	s.SweepFinished("a", "never", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 0, KneeUnit: "req/s", Finished: end,
		State: capacity.StateUndecided, Undecided: "no_valid_level"})
	const want = `
# HELP llmprobe_sweep_knee_decided 1 when the last successful sweep's knee is a figure of capacity (state decided or bound), 0 when it is undecided (no valid evidence: llmprobe_sweep_knee_undecided_info says why); the knee series then keep the last decided sweep's figures.
# TYPE llmprobe_sweep_knee_decided gauge
llmprobe_sweep_knee_decided{sweep="bg",target="a"} 1
llmprobe_sweep_knee_decided{sweep="iso",target="a"} 1
llmprobe_sweep_knee_decided{sweep="never",target="a"} 0
llmprobe_sweep_knee_decided{sweep="short",target="a"} 0
llmprobe_sweep_knee_decided{sweep="zero",target="a"} 1
# HELP llmprobe_sweep_knee_server_requests_per_second The server's total request rate at the knee of the last successful sweep: the knee plus the probe load it was measured under (a background sweep's knee already counts every request); headroom is it minus the server's current rate. Absent when the knee was not decided.
# TYPE llmprobe_sweep_knee_server_requests_per_second gauge
llmprobe_sweep_knee_server_requests_per_second{sweep="bg",target="a"} 24
llmprobe_sweep_knee_server_requests_per_second{sweep="iso",target="a"} 11
llmprobe_sweep_knee_server_requests_per_second{sweep="short",target="a"} 5
llmprobe_sweep_knee_server_requests_per_second{sweep="zero",target="a"} 1
# HELP llmprobe_sweep_knee_undecided_info 1, with why, while the last successful sweep's knee is undecided: no_valid_level, too_short or no_evidence_below; absent otherwise.
# TYPE llmprobe_sweep_knee_undecided_info gauge
llmprobe_sweep_knee_undecided_info{reason="no_evidence_below",sweep="short",target="a"} 1
llmprobe_sweep_knee_undecided_info{reason="no_valid_level",sweep="never",target="a"} 1
# HELP llmprobe_sweep_knee_previous_requests_per_second The decided knee before the one llmprobe_sweep_knee_requests_per_second holds (req/s; absent until two were decided): LLMProbeCapacityRegression wants both low.
# TYPE llmprobe_sweep_knee_previous_requests_per_second gauge
llmprobe_sweep_knee_previous_requests_per_second{sweep="short",target="a"} 6
# HELP llmprobe_sweep_requests_total Successful requests the daemon's sweeps sent to the target (measured requests; not warmups), for the headroom rules to subtract from the server's rate.
# TYPE llmprobe_sweep_requests_total counter
llmprobe_sweep_requests_total{target="a"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameSweepKneeDecided, NameSweepKneeServer, NameSweepRequests,
		NameSweepKneeUndecidedInfo, NameSweepKneePrevious); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(s.knee.WithLabelValues("a", "zero")); got != 0 {
		t.Errorf("knee of 0 decided: %v", got)
	}
	if got := testutil.ToFloat64(s.knee.WithLabelValues("a", "short")); got != 5 {
		t.Errorf("knee after an undecided sweep: %v, want the last decided 5", got)
	}
	if n := testutil.CollectAndCount(s.knee); n != 4 {
		t.Errorf("%d knee series, want 4 (the never-decided one absent)", n)
	}
	if got := testutil.ToFloat64(s.production.WithLabelValues("a", "bg")); got != 8 {
		t.Errorf("production at the background knee: %v", got)
	}
	for sw, want := range map[string]string{"iso": "decided", "bg": "bound", "zero": "decided", "short": "undecided", "never": "undecided"} {
		for _, st := range capacity.States {
			if got := testutil.ToFloat64(s.state.WithLabelValues("a", sw, st)); got != map[bool]float64{true: 1}[st == want] {
				t.Errorf("llmprobe_sweep_knee_state{sweep=%q,state=%q} = %v, want state %s", sw, st, got, want)
			}
		}
	}
	// A decided sweep again: the undecided info goes.
	s.SweepFinished("a", "short", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 7, Decided: true, KneeUnit: "req/s", Finished: end, State: capacity.StateDecided})
	if n := testutil.CollectAndCount(s.undecided); n != 1 {
		t.Errorf("%d undecided info series after a decided sweep, want 1 (never's)", n)
	}
	if got := testutil.ToFloat64(s.previous.WithLabelValues("a", "short")); got != 5 {
		t.Errorf("previous knee %v, want 5", got)
	}
}
