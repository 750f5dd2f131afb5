package sweep

import (
	"math"
	"reflect"
	"testing"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// spreadStep is a step at level lv with request throughput tp, goodput g
// and TTFT/TPOT p99s ttft/tpot.
func spreadStep(lv float64, valid bool, tp, g, ttft, tpot float64) *Step {
	return &Step{Level: lv, Validity: Validity{Valid: valid}, Stats: Stats{
		RequestThroughput: tp, RequestGoodput: g, TTFT: Latency{Summary: stats.Summary{P99: ttft}}, TPOT: Latency{Summary: stats.Summary{P99: tpot}}}}
}

func TestRoundSpread(t *testing.T) {
	steps := []*Step{
		spreadStep(4, true, 4, 3.9, 100, 20), spreadStep(4, true, 4.2, 4, 140, 22), spreadStep(4, true, 3.8, 3.7, 110, 21),
		spreadStep(8, true, 7, 6, 300, 30), spreadStep(8, false, 2, 1, 900, 90),
		spreadStep(16, false, 9, 5, 1000, 50), spreadStep(16, false, 10, 6, 1200, 60),
		spreadStep(32, true, 10, 4, 2000, 70),
	}
	levels := []Level{{Level: 4, Rounds: 3}, {Level: 8, Rounds: 2}, {Level: 16, Rounds: 2}, {Level: 32, Rounds: 1}}
	tests := []struct {
		name   string
		rounds int
		want   []LevelSpread
	}{
		{name: "one round: no spread", rounds: 1},
		{name: "rounds", rounds: 2, want: []LevelSpread{
			{Level: 4, Rounds: 3, Used: 3, Valid: true, Throughput: Range{Min: 3.8, Median: 4, Max: 4.2},
				Goodput: Range{Min: 3.7, Median: 3.9, Max: 4}, TTFTP99: Range{Min: 100, Median: 110, Max: 140},
				TPOTP99: Range{Min: 20, Median: 21, Max: 22}},
			// The invalid round is left out, as in result.json's levels.
			{Level: 8, Rounds: 2, Used: 1, Valid: true, Throughput: Range{Min: 7, Median: 7, Max: 7},
				Goodput: Range{Min: 6, Median: 6, Max: 6}, TTFTP99: Range{Min: 300, Median: 300, Max: 300},
				TPOTP99: Range{Min: 30, Median: 30, Max: 30}},
			// No valid round: every round counts.
			{Level: 16, Rounds: 2, Used: 2, Valid: false, Throughput: Range{Min: 9, Median: 9.5, Max: 10},
				Goodput: Range{Min: 5, Median: 5.5, Max: 6}, TTFTP99: Range{Min: 1000, Median: 1100, Max: 1200},
				TPOTP99: Range{Min: 50, Median: 55, Max: 60}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := (&Result{Steps: steps, Levels: levels, Rounds: tc.rounds}).RoundSpread()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RoundSpread:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRangeRel(t *testing.T) {
	tests := []struct {
		name string
		r    Range
		want float64
	}{
		{"steady", Range{5, 5, 5}, 0},
		{"spread", Range{120, 150, 180}, 0.4},
		{"zero median", Range{0, 0, 1}, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.Rel()
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
				t.Errorf("Rel() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInFirstBucket(t *testing.T) {
	known := func(v float64) Figure { return Figure{Value: v, Known: true} }
	tests := []struct {
		name                       string
		first, count               float64
		unknown                    bool
		wantAtMost50, wantAtMost99 bool
	}{
		{name: "every observation in the first bucket", first: 40, count: 40, wantAtMost50: true, wantAtMost99: true},
		{name: "half in the first bucket", first: 20, count: 40, wantAtMost50: true},
		{name: "none in the first bucket", first: 0, count: 40},
		{name: "first bucket not recorded", first: 40, count: 40, unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ServerLatency{Count: known(tt.count), MeanMS: known(0.02), P50MS: known(150), P90MS: known(270), P99MS: known(297),
				FirstBucketLEMS: known(300), FirstBucketCount: known(tt.first)}
			if tt.unknown {
				l.FirstBucketLEMS = Figure{}
			}
			if got := l.InFirstBucket(0.5); got != tt.wantAtMost50 {
				t.Errorf("InFirstBucket(0.5) = %v, want %v", got, tt.wantAtMost50)
			}
			if got := l.InFirstBucket(0.99); got != tt.wantAtMost99 {
				t.Errorf("InFirstBucket(0.99) = %v, want %v", got, tt.wantAtMost99)
			}
		})
	}
}

func TestInKnee(t *testing.T) {
	tests := []struct {
		name string
		step Step
		want bool
	}{
		{"valid open loop", Step{Mode: ModeOpen, Validity: Validity{Valid: true}}, true},
		{"invalid", Step{Mode: ModeOpen}, false},
		{"valid burst", Step{Mode: ModeBurst, Validity: Validity{Valid: true}}, false},
		{"valid closed loop", Step{Mode: ModeClosed, Validity: Validity{Valid: true}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.step.InKnee(); got != tt.want {
				t.Errorf("InKnee() = %v, want %v", got, tt.want)
			}
		})
	}
}
