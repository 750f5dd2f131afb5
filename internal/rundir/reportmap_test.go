package rundir

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// spreadStep is a step at level lv with request throughput tp, goodput g
// and TTFT/TPOT p99s ttft/tpot.
func spreadStep(lv float64, valid bool, tp, g, ttft, tpot float64) *sweep.Step {
	return &sweep.Step{Level: lv, Validity: sweep.Validity{Valid: valid}, Stats: sweep.Stats{
		RequestThroughput: tp, RequestGoodput: g, TTFT: sweep.Latency{Summary: stats.Summary{P99: ttft}}, TPOT: sweep.Latency{Summary: stats.Summary{P99: tpot}}}}
}

func TestReportSpread(t *testing.T) {
	steps := []*sweep.Step{
		spreadStep(4, true, 4, 3.9, 100, 20), spreadStep(4, true, 4.2, 4, 140, 22), spreadStep(4, true, 3.8, 3.7, 110, 21),
		spreadStep(8, true, 7, 6, 300, 30), spreadStep(8, false, 2, 1, 900, 90),
		spreadStep(16, false, 9, 5, 1000, 50), spreadStep(16, false, 10, 6, 1200, 60),
		spreadStep(32, true, 10, 4, 2000, 70),
	}
	levels := []sweep.Level{{Level: 4, Rounds: 3}, {Level: 8, Rounds: 2}, {Level: 16, Rounds: 2}, {Level: 32, Rounds: 1}}
	tests := []struct {
		name   string
		rounds int
		want   []report.LevelSpread
	}{
		{name: "one round: no spread", rounds: 1},
		{name: "rounds", rounds: 2, want: []report.LevelSpread{
			{Level: 4, Rounds: 3, Used: 3, Valid: true, Throughput: report.Range{Min: 3.8, Median: 4, Max: 4.2},
				Goodput: report.Range{Min: 3.7, Median: 3.9, Max: 4}, TTFTP99: report.Range{Min: 100, Median: 110, Max: 140},
				TPOTP99: report.Range{Min: 20, Median: 21, Max: 22}},
			// The invalid round is left out, as in result.json's levels.
			{Level: 8, Rounds: 2, Used: 1, Valid: true, Throughput: report.Range{Min: 7, Median: 7, Max: 7},
				Goodput: report.Range{Min: 6, Median: 6, Max: 6}, TTFTP99: report.Range{Min: 300, Median: 300, Max: 300},
				TPOTP99: report.Range{Min: 30, Median: 30, Max: 30}},
			// No valid round: every round counts.
			{Level: 16, Rounds: 2, Used: 2, Valid: false, Throughput: report.Range{Min: 9, Median: 9.5, Max: 10},
				Goodput: report.Range{Min: 5, Median: 5.5, Max: 6}, TTFTP99: report.Range{Min: 1000, Median: 1100, Max: 1200},
				TPOTP99: report.Range{Min: 50, Median: 55, Max: 60}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := reportSpread(&sweep.Result{Steps: steps, Levels: levels}, tc.rounds)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("reportSpread:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// tableObserver prints the final table, as the CLI does.
type tableObserver struct {
	w io.Writer
}

func (tableObserver) SweepStarted(sweep.SweepInfo)            {}
func (tableObserver) StepStarted(*sweep.Step, int)            {}
func (tableObserver) RequestDone(*sweep.Step, *prober.Record) {}
func (tableObserver) StepDone(*sweep.Step)                    {}
func (o tableObserver) SweepDone(res *sweep.Result) {
	fmt.Fprintln(o.w)
	_ = report.WriteTable(o.w, ReportSweep(res))
}

// TestRunRoundsSpread runs two rounds of one rate: analysis.md and the
// final table show the spread over them, matching result.json's levels.
func TestRunRoundsSpread(t *testing.T) {
	url, _ := simtest.Start(t, fastSim())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.Rounds, cfg.NumPrompts = []float64{50}, "50", 2, 10
	opts := testOptions(t)
	var stdout bytes.Buffer
	opts.Observer = tableObserver{&stdout}
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Result.Levels) != 1 || res.Result.Levels[0].Rounds != 2 {
		t.Fatalf("levels %+v, want one of 2 rounds", res.Result.Levels)
	}
	l := res.Result.Levels[0]
	md := readFile(t, res.Dir, artifacts.AnalysisFile)
	for _, want := range []string{"## Spread over rounds", "| rate (req/s) | rounds | req/s | spread |", "\n| 50 | "} {
		if !strings.Contains(md, want) {
			t.Errorf("analysis.md lacks %q:\n%s", want, md)
		}
	}
	// Over two rounds the median is the mean.
	spread := (l.TTFTP99MS.Max - l.TTFTP99MS.Min) / l.TTFTP99MS.Mean
	gspread := (l.Goodput.Max - l.Goodput.Min) / l.Goodput.Mean
	warned := strings.Contains(md, "**50 req/s is not reproducible at this step length**")
	if want := spread > report.MaxReproducibleSpread || gspread > report.MaxReproducibleSpread; warned != want {
		t.Errorf("warning shown %v, want %v (TTFT p99 spread %.3f, goodput spread %.3f)", warned, want, spread, gspread)
	}
	if !strings.Contains(stdout.String(), "\nrate 50: 2 rounds") {
		t.Errorf("table lacks the spread line:\n%s", stdout.String())
	}
}

func TestReportQuantilesFirstBucket(t *testing.T) {
	known := func(v float64) sweep.Figure { return sweep.Figure{Value: v, Known: true} }
	tests := []struct {
		name                       string
		first, count               float64
		wantAtMost50, wantAtMost99 bool
	}{
		{name: "every observation in the first bucket", first: 40, count: 40, wantAtMost50: true, wantAtMost99: true},
		{name: "half in the first bucket", first: 20, count: 40, wantAtMost50: true},
		{name: "none in the first bucket", first: 0, count: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := sweep.ServerLatency{Count: known(tt.count), MeanMS: known(0.02), P50MS: known(150), P90MS: known(270), P99MS: known(297),
				FirstBucketLEMS: known(300), FirstBucketCount: known(tt.first)}
			q := reportQuantiles(l)
			if q.P50.AtMost != tt.wantAtMost50 || q.P99.AtMost != tt.wantAtMost99 || !q.Mean.OK || q.Mean.V != 0.02 {
				t.Errorf("quantiles %+v", q)
			}
			if q.P50.AtMost && q.P50.V != 300 {
				t.Errorf("p50 bound %v, want 300", q.P50.V)
			}
		})
	}
}
