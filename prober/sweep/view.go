package sweep

import (
	"math"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// This file holds small, pure readings of a Result that reports need and
// that are facts of the result rather than wording: whether a step counts
// for the knee, the spread of a level over its rounds, whether a server-side
// quantile is only an upper bound. internal/report words and draws them.

// InKnee reports whether the step counts for the knee: it is valid and not
// a burst (result.json's in_knee).
func (s *Step) InKnee() bool { return s.Validity.Valid && s.Mode != ModeBurst }

// ServerRecorded is ServerStats.Status when both /metrics snapshots of a
// step were read (fingerprint.NotRecorded otherwise).
const ServerRecorded = statusRecorded

// Recorded reports whether the step's server-side figures were read (both
// /metrics snapshots); Reason says why not otherwise.
func (s ServerStats) Recorded() bool { return s.Status == ServerRecorded }

// InFirstBucket reports whether quantile q (0..1) of the histogram falls
// into its first bucket (FirstBucketCount >= q*Count): the quantile is then
// only known to be at most FirstBucketLEMS, since histogram_quantile's
// interpolation from 0 inside that bucket is not data. False when any of
// the three figures is not recorded.
func (l ServerLatency) InFirstBucket(q float64) bool {
	return l.FirstBucketCount.Known && l.FirstBucketLEMS.Known && l.Count.Known &&
		l.FirstBucketCount.Value >= q*l.Count.Value
}

// SLOThresholds returns the --goodput thresholds in milliseconds from SLO
// (0 = not set).
func (r *Result) SLOThresholds() (ttft, tpot, e2el float64) {
	return r.SLO[slo.NameTTFT], r.SLO[slo.NameTPOT], r.SLO[slo.NameE2EL]
}

// LevelSpread is the spread of one level's figures over its rounds.
type LevelSpread struct {
	// Level is the rate in req/s (+Inf for a burst), or the concurrency in
	// ModeClosed.
	Level float64
	// Rounds counts the steps run at the level (reruns of an invalid level
	// included); Used those the ranges are over: the valid ones, or every
	// one when none was valid (Valid is then false).
	Rounds int
	Used   int
	Valid  bool
	// Ranges over the Used steps: request throughput and goodput (vLLM's
	// request_goodput) in req/s, TTFT and TPOT p99 in ms.
	Throughput Range
	Goodput    Range
	TTFTP99    Range
	TPOTP99    Range
}

// Range is the minimum, median and maximum of one figure over rounds.
type Range struct {
	Min    float64
	Median float64
	Max    float64
}

// Rel returns the relative spread (Max − Min) / Median; NaN when the
// median is 0.
func (r Range) Rel() float64 {
	if r.Median == 0 {
		return math.NaN()
	}
	return (r.Max - r.Min) / math.Abs(r.Median)
}

// RoundSpread returns, in the order of Levels (sorted by level), the spread
// over rounds of every level that ran at least twice, over the same steps
// as the level's spread in result.json (its valid ones, every one when none
// was valid). It returns nil when Rounds < 2, so that reruns of an invalid
// level alone add no spread.
func (r *Result) RoundSpread() []LevelSpread {
	if r.Rounds < 2 {
		return nil
	}
	var out []LevelSpread
	for _, l := range r.Levels {
		if l.Rounds < 2 {
			continue
		}
		var all, valid []*Step
		for _, st := range r.Steps {
			if st.Level != l.Level {
				continue
			}
			all = append(all, st)
			if st.Validity.Valid {
				valid = append(valid, st)
			}
		}
		use := valid
		if len(valid) == 0 {
			use = all
		}
		rng := func(get func(*Step) float64) Range {
			xs := make([]float64, len(use))
			for i, st := range use {
				xs[i] = get(st)
			}
			return rangeOf(xs)
		}
		out = append(out, LevelSpread{
			Level:      l.Level,
			Rounds:     len(all),
			Used:       len(use),
			Valid:      len(valid) > 0,
			Throughput: rng(func(st *Step) float64 { return st.Stats.RequestThroughput }),
			Goodput:    rng(func(st *Step) float64 { return st.Stats.RequestGoodput }),
			TTFTP99:    rng(func(st *Step) float64 { return st.Stats.TTFT.P99 }),
			TPOTP99:    rng(func(st *Step) float64 { return st.Stats.TPOT.P99 }),
		})
	}
	return out
}

// rangeOf returns the min, median and max of xs (zero for none).
func rangeOf(xs []float64) Range {
	if len(xs) == 0 {
		return Range{}
	}
	sp := spreadOf(xs)
	return Range{Min: sp.Min, Median: stats.Median(xs), Max: sp.Max}
}
