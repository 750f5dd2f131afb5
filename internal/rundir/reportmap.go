package rundir

import (
	"fmt"
	"math"
	"strconv"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// ReportSweep maps a sweep's Result onto internal/report's input (for
// analysis.md, the plots and the terminal table). It reads only res: the
// fields result.json does not hold (Name, Fingerprint, InterruptedReason,
// MaxConcurrency, Rounds) come with the Result Prepared.Run returns.
func ReportSweep(res *sweep.Result) report.Sweep {
	s := report.Sweep{
		Name:              res.Name,
		Fingerprint:       res.Fingerprint,
		Mode:              res.Mode,
		GoodputRatio:      sweep.DefaultGoodputRatio,
		Knee:              report.Knee(res.Knee),
		Complete:          res.Complete,
		InterruptedReason: res.InterruptedReason,
		Notes:             res.Notes,
		SLO: report.SLO{
			TTFTMS: res.SLO[slo.NameTTFT],
			TPOTMS: res.SLO[slo.NameTPOT],
			E2ELMS: res.SLO[slo.NameE2EL],
		},
	}
	if res.Mode != sweep.ModeClosed {
		s.MaxConcurrency = res.MaxConcurrency
		s.ReferenceCapacity = res.ReferenceCapacity
	}
	if p := res.Probe; p != nil {
		rp := &report.Probe{EstimateReqPerS: p.EstimateReqPerS, StartRate: p.StartRate, Note: p.Note}
		for _, l := range p.Levels {
			rp.Levels = append(rp.Levels, report.ProbeLevel{Concurrency: l.Concurrency, Completed: l.Completed, Failed: l.Failed,
				ThroughputReqPerS: l.ThroughputReqPerS, MeanE2ELMS: l.MeanE2ELMS, MaxWaiting: reportValue(l.MaxWaiting)})
		}
		s.Probe = rp
	}
	for _, st := range res.Steps {
		s.Steps = append(s.Steps, reportStep(st))
	}
	s.Spread = reportSpread(res, res.Rounds)
	return s
}

// reportSpread maps the spread over rounds of every level that ran at
// least twice, over the same steps as the level's spread in result.json
// (its valid ones, every one when none was valid); nil for one round, so
// that reruns of an invalid level alone add no spread.
func reportSpread(res *sweep.Result, rounds int) []report.LevelSpread {
	if rounds < 2 {
		return nil
	}
	var out []report.LevelSpread
	for _, l := range res.Levels {
		if l.Rounds < 2 {
			continue
		}
		var all, valid []*sweep.Step
		for _, st := range res.Steps {
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
		rng := func(get func(*sweep.Step) float64) report.Range {
			xs := make([]float64, len(use))
			for i, st := range use {
				xs[i] = get(st)
			}
			return rangeOf(xs)
		}
		out = append(out, report.LevelSpread{
			Level:      l.Level,
			Rounds:     len(all),
			Used:       len(use),
			Valid:      len(valid) > 0,
			Throughput: rng(func(st *sweep.Step) float64 { return st.Stats.RequestThroughput }),
			Goodput:    rng(func(st *sweep.Step) float64 { return st.Stats.RequestGoodput }),
			TTFTP99:    rng(func(st *sweep.Step) float64 { return st.Stats.TTFT.P99 }),
			TPOTP99:    rng(func(st *sweep.Step) float64 { return st.Stats.TPOT.P99 }),
		})
	}
	return out
}

// rangeOf returns the min, median and max of xs (zero for none).
func rangeOf(xs []float64) report.Range {
	if len(xs) == 0 {
		return report.Range{}
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return report.Range{Min: lo, Median: stats.Median(xs), Max: hi}
}

func reportStep(st *sweep.Step) report.Step {
	x := &st.Stats
	out := report.Step{
		Index:                 st.Index,
		Label:                 st.Label,
		Round:                 st.Round,
		Attempt:               st.Attempt,
		Rate:                  st.Level,
		AchievedRate:          x.AchievedRate,
		Start:                 st.Start,
		End:                   st.End,
		Duration:              x.Duration,
		Completed:             x.Completed,
		Failed:                x.Failed,
		FailedByClass:         x.FailedByClass,
		RequestThroughput:     x.RequestThroughput,
		Goodput:               x.RequestGoodput,
		KeepUp:                x.GoodputRatio,
		OutputThroughput:      x.OutputThroughput,
		TotalTokenThroughput:  x.TotalTokenThroughput,
		TTFT:                  reportSummary(x.TTFT),
		TPOT:                  reportSummary(x.TPOT),
		ITL:                   reportSummary(x.ITL),
		E2EL:                  reportSummary(x.E2EL),
		SendLag:               reportSummary(x.SendLag),
		QueueTime:             reportSummary(x.QueueTime),
		InputTokens:           report.TokenDist(x.InputTokens),
		RequestedOutputTokens: report.TokenDist(x.RequestedOutputTokens),
		OutputTokens:          report.TokenDist(x.OutputTokens),
		FinishReasons:         x.FinishReasons,
		Valid:                 st.Validity.Valid && st.Mode != sweep.ModeBurst,
		Idle:                  st.Validity.Idle.Status,
		IdleDetail:            idleDetail(st.Validity.Idle),
		Server:                reportServer(st.Server),
	}
	switch st.Mode {
	case sweep.ModeClosed:
		out.Rate, out.Concurrency = 0, st.Concurrency
	default:
		out.Concurrency = st.MaxConcurrency
	}
	for _, c := range x.SLOChecks {
		out.SLOChecks = append(out.SLOChecks, report.SLOCheck(c))
	}
	for i, f := range st.Validity.Flags {
		out.Invalid = append(out.Invalid, f+": "+st.Validity.Reasons[i])
	}
	if st.Mode == sweep.ModeBurst {
		out.Invalid = append(out.Invalid, "burst: rate inf is not an open loop, not used for the knee")
	}
	return out
}

func idleDetail(p sweep.IdleProof) string {
	switch p.Status {
	case sweep.IdleProven:
		return fmt.Sprintf("running + waiting read 0 after %.1f s", p.Waited)
	case sweep.IdleNotIdle:
		return fmt.Sprintf("running %s, waiting %s after %.1f s", trimFloat(p.Running), trimFloat(p.Waiting), p.Waited)
	}
	return p.Reason
}

// statusRecorded is sweep.ServerStats.Status when both snapshots were read.
const statusRecorded = "recorded"

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func reportSummary(l sweep.Latency) report.Summary {
	s := report.Summary{N: l.N, Mean: l.Mean, Median: l.Median, Std: l.Std, P50: l.P50, P90: l.P90, P99: l.P99}
	if l.P99CI != nil {
		s.P99CILow, s.P99CIHigh = l.P99CI.Lo, l.P99CI.Hi
	}
	return s
}

func reportValue(f sweep.Figure) report.Value {
	if !f.Known {
		return report.Value{}
	}
	return report.Val(f.Value)
}

func reportServer(s sweep.ServerStats) report.Server {
	return report.Server{
		Recorded:                    s.Status == statusRecorded,
		Reason:                      s.Reason,
		PromptTokens:                reportValue(s.PromptTokens),
		GenerationTokens:            reportValue(s.GenerationTokens),
		Preemptions:                 reportValue(s.Preemptions),
		WarmupPrefixHitRate:         reportValue(s.WarmupPrefixCacheHitRate),
		PrefixHitRate:               reportValue(s.PrefixCacheHitRate),
		MaxRunning:                  reportValue(s.MaxRunning),
		MaxWaiting:                  reportValue(s.MaxWaiting),
		MaxKVCacheUsage:             reportValue(s.MaxKVCacheUsage),
		TTFT:                        reportQuantiles(s.TTFT),
		ITL:                         reportQuantiles(s.ITL),
		E2EL:                        reportQuantiles(s.E2EL),
		QueueTime:                   reportQuantiles(s.QueueTime),
		ClientMinusServerTTFTMeanMS: reportValue(s.ClientMinusServerTTFTMeanMS),
	}
}

// reportQuantiles maps a server histogram: a quantile whose rank falls
// into the first bucket is shown as "≤ first bound" (interpolating from 0
// inside that bucket says nothing about the data).
func reportQuantiles(l sweep.ServerLatency) report.Quantiles {
	q := func(f sweep.Figure, p float64) report.Value {
		v := reportValue(f)
		if v.OK && l.FirstBucketCount.Known && l.FirstBucketLEMS.Known && l.Count.Known &&
			l.FirstBucketCount.Value >= p*l.Count.Value {
			return report.Value{V: l.FirstBucketLEMS.Value, OK: true, AtMost: true}
		}
		return v
	}
	return report.Quantiles{Mean: reportValue(l.MeanMS), P50: q(l.P50MS, 0.5), P90: q(l.P90MS, 0.9), P99: q(l.P99MS, 0.99)}
}
