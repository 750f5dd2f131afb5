package sweep

import (
	"math"
	"sort"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// referenceStats is the batch computation of a step's statistics that
// StatsAccumulator replaced, kept unchanged as the reference the
// accumulator must match (TestAccumulatorMatchesReference).
func referenceStats(recs []prober.Record, o StatsOptions) Stats {
	if o.BootstrapIters <= 0 {
		o.BootstrapIters = 1000
	}
	s := Stats{
		FailedByClass: map[string]int{},
		FinishReasons: map[string]int{},
		RequestedRate: o.RequestedRate,
		Requests:      len(recs),
	}
	var ttft, ttftText, ttfa, tpot, itl, e2el, e2elSched, lag, queue []float64
	var inLens, reqOut, outLens []float64
	var scheduled, sent []time.Time
	s.Latencies = make([]float64, 0, len(recs))
	s.QueueTimes = make([]float64, 0, len(recs))
	s.kneeSamples = make([]kneeSample, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		good, _ := o.SLO.Evaluate(r)
		ks := kneeSample{tpot: -1, ok: r.OK(), good: good && r.OK()}
		lag = append(lag, ms(max(r.SendLag-r.QueueWait, 0)))
		queue = append(queue, ms(r.QueueWait))
		if r.OK() {
			s.Latencies = append(s.Latencies, r.E2E.Seconds())
			s.QueueTimes = append(s.QueueTimes, r.QueueWait.Seconds())
		} else {
			s.Latencies = append(s.Latencies, 0)
			s.QueueTimes = append(s.QueueTimes, 0)
		}
		if !r.Scheduled.IsZero() {
			scheduled = append(scheduled, r.Scheduled)
		}
		if !r.Sent.IsZero() {
			sent = append(sent, r.Sent)
		}
		in := r.PromptTokens
		if in <= 0 {
			in = r.InputTokens
		}
		inLens = append(inLens, float64(in))
		reqOut = append(reqOut, float64(r.OutputTokensRequested))
		if !r.OK() {
			s.kneeSamples = append(s.kneeSamples, ks)
			s.Failed++
			s.FailedByClass[string(r.Error)]++
			continue
		}
		s.Completed++
		out := max(r.CompletionTokens, 0) // the record's count, never its events
		ks.ttft, ks.e2el, ks.ttfa = float32(ms(r.TTFT)), float32(ms(r.E2E)), float32(ms(r.AnswerTTFT()))
		if out > 1 {
			ks.tpot = float32(ms((r.E2E - r.TTFT) / time.Duration(out-1)))
		}
		s.kneeSamples = append(s.kneeSamples, ks)
		s.TotalInputTokens += in
		s.TotalOutputTokens += out
		outLens = append(outLens, float64(out))
		ttft = append(ttft, ms(r.TTFT))
		if r.TTFTText > 0 { // requests with content only
			ttftText = append(ttftText, ms(r.TTFTText))
		}
		ttfa = append(ttfa, ms(r.AnswerTTFT()))
		e2el = append(e2el, ms(r.E2E))
		e2elSched = append(e2elSched, ms(r.LatencyFromScheduled()))
		if out > 1 {
			tpot = append(tpot, ms((r.E2E-r.TTFT)/time.Duration(out-1)))
		}
		for _, g := range r.ITL {
			itl = append(itl, ms(g))
		}
		reason := r.FinishReason
		if reason == "" {
			reason = "unknown"
		}
		s.FinishReasons[reason]++
		if good {
			s.Good++
			s.GoodOutputTokens += out
		}
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Failed) / float64(s.Requests)
	}

	dur := o.Duration
	if dur <= 0 {
		dur = refDerivedDuration(recs)
	}
	s.Duration = dur.Seconds()
	if s.Duration > 0 {
		s.RequestThroughput = float64(s.Completed) / s.Duration
		s.RequestGoodput = float64(s.Good) / s.Duration
		s.OutputThroughput = float64(s.TotalOutputTokens) / s.Duration
		s.TotalTokenThroughput = float64(s.TotalInputTokens+s.TotalOutputTokens) / s.Duration
		s.GoodOutputThroughput = float64(s.GoodOutputTokens) / s.Duration
	}
	s.MaxOutputTokensPerS, s.MaxConcurrentRequests = refPeaks(recs)
	refKneeFigures(&s, recs, dur, o)

	seed := o.Seed
	lat := func(xs []float64) Latency {
		seed++
		return summarizeLatency(xs, o.Percentiles, o.BootstrapIters, seed)
	}
	s.TTFT, s.TPOT, s.ITL, s.E2EL = lat(ttft), lat(tpot), lat(itl), lat(e2el)
	s.TTFTText, s.SendLag, s.QueueTime, s.E2ELFromScheduled = lat(ttftText), lat(lag), lat(queue), lat(e2elSched)
	s.sendLagsMS = lag
	s.TTFA = lat(ttfa)

	s.ScheduledRate = refSpanRate(scheduled)
	s.AchievedRate = refSpanRate(sent)
	s.InputTokens = tokenDist(inLens)
	s.RequestedOutputTokens = tokenDist(reqOut)
	s.OutputTokens = tokenDist(outLens)

	s.SLOHeld = true
	check := func(metric string, th time.Duration, l Latency) {
		if th <= 0 {
			return
		}
		c := SLOCheck{Metric: metric, ThresholdMS: ms(th), P99MS: l.P99, Reliable: l.P99Reliable}
		c.Held = l.N == 0 || l.P99 <= c.ThresholdMS
		s.SLOHeld = s.SLOHeld && c.Held
		s.SLOChecks = append(s.SLOChecks, c)
	}
	check("ttft", o.SLO.TTFT, s.TTFT)
	check("tpot", o.SLO.TPOT, s.TPOT)
	check("e2el", o.SLO.E2EL, s.E2EL)
	check("ttfa", o.SLO.TTFA, s.TTFA)
	return s
}

// refKneeFigures fills ArrivalWindow, OfferedRate, DrainCorrectedDuration,
// GoodputRatio, KneeGoodput and KneeThroughput.
func refKneeFigures(s *Stats, recs []prober.Record, dur time.Duration, o StatsOptions) {
	s.KneeGoodput, s.KneeThroughput = s.RequestGoodput, s.RequestThroughput
	var minE2E time.Duration = -1
	for i := range recs {
		if r := &recs[i]; r.OK() && (minE2E < 0 || r.E2E < minE2E) {
			minE2E = r.E2E
		}
	}
	corrected := dur
	if minE2E > 0 && dur-minE2E > 0 {
		corrected = dur - minE2E
	}
	s.DrainCorrectedDuration = corrected.Seconds()
	rate := o.RequestedRate
	if rate == 0 || math.IsInf(rate, 1) { // closed loop or burst
		if s.Completed > 0 {
			s.GoodputRatio = float64(s.Good) / float64(s.Completed)
		}
		return
	}
	w := o.Window
	if w <= 0 && !o.Start.IsZero() {
		for i := range recs {
			if d := recs[i].Scheduled.Sub(o.Start); d > w {
				w = d
			}
		}
	}
	if w <= 0 || s.Requests == 0 || corrected <= 0 {
		if rate > 0 {
			s.GoodputRatio = s.RequestGoodput / rate
		}
		return
	}
	s.ArrivalWindow = w.Seconds()
	s.OfferedRate = float64(s.Requests) / s.ArrivalWindow
	keep := s.ArrivalWindow / s.DrainCorrectedDuration
	s.GoodputRatio = float64(s.Good) / float64(s.Requests) * keep
	s.KneeGoodput = s.GoodputRatio * rate
	s.KneeThroughput = float64(s.Completed) / float64(s.Requests) * keep * rate
}

// refSpanRate is (n-1)/(last-first) in events per second, 0 with fewer than two
// events or a zero span.
func refSpanRate(ts []time.Time) float64 {
	if len(ts) < 2 {
		return 0
	}
	first, last := ts[0], ts[0]
	for _, t := range ts[1:] {
		if t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	span := last.Sub(first).Seconds()
	if span <= 0 {
		return 0
	}
	return float64(len(ts)-1) / span
}

// refDerivedDuration is the span from the earliest intended (or actual) send
// to the latest end of any request.
func refDerivedDuration(recs []prober.Record) time.Duration {
	var first, last time.Time
	for i := range recs {
		r := &recs[i]
		start := r.Scheduled
		if start.IsZero() || (!r.Sent.IsZero() && r.Sent.Before(start)) {
			start = r.Sent
		}
		if start.IsZero() {
			continue
		}
		end := r.Sent.Add(max(r.E2E, r.Done, r.TTFT))
		if first.IsZero() || start.Before(first) {
			first = start
		}
		if end.After(last) {
			last = end
		}
	}
	if first.IsZero() {
		return 0
	}
	return last.Sub(first)
}

// refPeaks computes vLLM's max_output_tokens_per_s (the most token events in a
// one-second bucket counted from the earliest send of a successful request)
// and max_concurrent_requests (an exact sweep over [sent, sent+E2E) of the
// successful requests).
func refPeaks(recs []prober.Record) (float64, int) {
	var t0 time.Time
	for i := range recs {
		r := &recs[i]
		if r.OK() && (t0.IsZero() || r.Sent.Before(t0)) {
			t0 = r.Sent
		}
	}
	if t0.IsZero() {
		return 0, 0
	}
	buckets := map[int64]int{}
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			continue
		}
		start := r.Sent.Sub(t0)
		tok := start + r.TTFT
		buckets[int64(tok/time.Second)]++
		for _, g := range r.ITL {
			tok += g
			buckets[int64(tok/time.Second)]++
		}
		edges = append(edges, edge{start, 1}, edge{start + r.E2E, -1})
	}
	maxTok := 0
	for _, n := range buckets {
		maxTok = max(maxTok, n)
	}
	// Ends before starts at the same instant: intervals are half-open.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	cur, maxConc := 0, 0
	for _, e := range edges {
		cur += e.delta
		maxConc = max(maxConc, cur)
	}
	return float64(maxTok), maxConc
}
