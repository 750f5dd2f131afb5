package sweep

import (
	"maps"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// StatsAccumulator computes a step's statistics from its Records fed one at
// a time, in any order (completion order, from many goroutines), so that a
// step holds what its statistics need and never its Records: a small fixed
// summary per request (152 bytes) and the request's ITL gaps (8 bytes
// each), kept by arrival index. Stats returns what vllm bench serve's batch
// computation over the Records in arrival order returns, to the last bit
// (per-request arrays, sums and bootstrap resamples run in arrival order).
//
// Memory grows with the number of requests and ITL gaps, not with strings
// or Records; a 200,000-request step with 16 output tokens held about
// 50 MB (BenchmarkStep200k) before the answer TTFT and reasoning figures
// added about 40 bytes a request (8 MB more). Add is safe for concurrent
// use.
type StatsAccumulator struct {
	o StatsOptions

	mu      sync.Mutex
	samples chunked[reqSample] // by arrival index; present marks the added ones
	itl     chunked[time.Duration]
	n       int

	failedByClass map[string]int
	finish        map[string]int
	good          int
	// cached sums usage.prompt_tokens_details.cached_tokens over the
	// successful requests that reported it (cachedN of them).
	cached, cachedN int
	// pooling sums the inputs of the successful pooling requests
	// (Record.Inputs: embeddings, rerank documents; poolingN of them) and
	// keeps their dimensions' range.
	pooling, poolingN int
	minDim, maxDim    int
	// images and imageBytes sum Record.Images and ImageBytes over the
	// successful requests that carried images (imagesN of them).
	images, imagesN int
	imageBytes      int64
	// drafted and accepted sum Record.DraftTokens and DraftAccepted over
	// the successful requests that reported them (draftN of them).
	drafted, accepted, draftN int
	// Online extremes (order-independent): the scheduled and actual send
	// spans, the derived duration's bounds, the shortest successful E2E
	// and the latest intended send after o.Start.
	schedFirst, schedLast time.Time
	schedN                int
	sentFirst, sentLast   time.Time
	sentN                 int
	durFirst, durLast     time.Time
	minE2E                time.Duration
	window                time.Duration
	spent                 bool // Stats was called
}

// reqSample is what the statistics need of one request.
type reqSample struct {
	sent                time.Time
	sendLag, queueWait  time.Duration
	ttft, ttftText, e2e time.Duration
	ttfa                time.Duration // Record.AnswerTTFT
	// The reasoning and tool-call figures (Record.TTFR, ThinkingTime,
	// FirstToolCall, ReasoningTokens, AnswerTokens, ToolCalls).
	ttfr, thinking, firstTool time.Duration
	reasonTok, answerTok      int32
	toolCalls                 int16
	reasoned, counted         bool
	itlOff                    int
	in, reqOut, out           int
	itlN                      int32
	present, ok, good         bool
	noStream                  bool // no TTFT, TTFTText, ITL or TPOT (Record.NoStream)
	// The server's timing (Record.ServerQueueTime, ServerTTFT,
	// ServerGenerationTime): srvSplit when both the queue and the TTFT
	// were reported, srvGenOK when the generation time was.
	srvQueue, srvTTFT, srvGen time.Duration
	srvSplit, srvGenOK        bool
}

// NewStatsAccumulator returns an empty accumulator for a step whose
// statistics are computed with o. o.Duration may be left zero and given to
// Stats when the step has ended.
func NewStatsAccumulator(o StatsOptions) *StatsAccumulator {
	if o.BootstrapIters <= 0 {
		o.BootstrapIters = 1000
	}
	return &StatsAccumulator{o: o, failedByClass: map[string]int{}, finish: map[string]int{}, minE2E: -1}
}

// Add adds the Record of the request with arrival index i (0-based, each
// index once; i is the position of the request in the step's arrival
// order). It keeps nothing of r after it returns.
func (a *StatsAccumulator) Add(i int64, r *prober.Record) {
	s := reqSample{
		sent: r.Sent, sendLag: r.SendLag, queueWait: r.QueueWait,
		ttft: r.TTFT, ttftText: r.TTFTText, e2e: r.E2E, ttfa: r.AnswerTTFT(),
		ttfr: r.TTFR, thinking: r.ThinkingTime, firstTool: r.FirstToolCall,
		reasonTok: int32(min(r.ReasoningTokens, math.MaxInt32)), answerTok: int32(min(r.AnswerTokens(), math.MaxInt32)),
		toolCalls: int16(min(r.ToolCalls, math.MaxInt16)), reasoned: r.Reasoned(), counted: r.ReasoningTokensCounted,
		reqOut: r.OutputTokensRequested, present: true, ok: r.OK(), noStream: r.NoStream,
		srvQueue: r.ServerQueueTime, srvTTFT: r.ServerTTFT, srvGen: r.ServerGenerationTime,
		srvSplit: r.HasServerQueue && r.HasServerTTFT, srvGenOK: r.HasServerGenerationTime,
	}
	s.in = r.PromptTokens
	if s.in <= 0 {
		s.in = r.InputTokens
	}
	if s.ok {
		// The record's own count (usage, else the token events that carry
		// a token): never the events, which count a chat role chunk.
		s.out = max(r.CompletionTokens, 0)
	}
	good, _ := a.o.SLO.Evaluate(r)
	s.good = good && s.ok
	start := r.Scheduled
	if start.IsZero() || (!r.Sent.IsZero() && r.Sent.Before(start)) {
		start = r.Sent
	}
	end := r.Sent.Add(max(r.E2E, r.Done, r.TTFT))

	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	if !r.Scheduled.IsZero() {
		a.schedFirst, a.schedLast = extend(a.schedFirst, a.schedLast, a.schedN, r.Scheduled)
		a.schedN++
	}
	if !r.Sent.IsZero() {
		a.sentFirst, a.sentLast = extend(a.sentFirst, a.sentLast, a.sentN, r.Sent)
		a.sentN++
	}
	if !start.IsZero() {
		if a.durFirst.IsZero() || start.Before(a.durFirst) {
			a.durFirst = start
		}
		if end.After(a.durLast) {
			a.durLast = end
		}
	}
	if !a.o.Start.IsZero() {
		if d := r.Scheduled.Sub(a.o.Start); d > a.window {
			a.window = d
		}
	}
	if !s.ok {
		a.failedByClass[string(r.Error)]++
	} else {
		if a.minE2E < 0 || r.E2E < a.minE2E {
			a.minE2E = r.E2E
		}
		reason := r.FinishReason
		if reason == "" {
			reason = "unknown"
		}
		a.finish[reason]++
		if good {
			a.good++
		}
		if r.CachedTokensReported {
			a.cached += r.CachedTokens
			a.cachedN++
		}
		if r.DraftReported {
			a.drafted += r.DraftTokens
			a.accepted += r.DraftAccepted
			a.draftN++
		}
		if r.Images > 0 {
			a.images += r.Images
			a.imagesN++
			a.imageBytes += r.ImageBytes
		}
		if r.Inputs > 0 {
			a.pooling += r.Inputs
			a.poolingN++
			if r.Dimension > 0 && (a.minDim == 0 || r.Dimension < a.minDim) {
				a.minDim = r.Dimension
			}
			a.maxDim = max(a.maxDim, r.Dimension)
		}
		s.itlOff, s.itlN = a.itl.len(), int32(len(r.ITL))
		for _, g := range r.ITL {
			a.itl.append(g)
		}
	}
	a.samples.set(int(i), s)
}

// extend widens the span [first, last] of n times by t.
func extend(first, last time.Time, n int, t time.Time) (time.Time, time.Time) {
	if n == 0 {
		return t, t
	}
	if t.Before(first) {
		first = t
	}
	if t.After(last) {
		last = t
	}
	return first, last
}

// Len returns the number of Records added.
func (a *StatsAccumulator) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// Stats computes the statistics of the Records added, once they all are:
// it releases the samples as it goes (so that the step's peak memory is not
// their copy on top of them), so it may be called only once, after the
// last Add (a second call panics). duration, when positive, is the step's
// benchmark duration and replaces the options' Duration (zero: derived
// from the records, earliest intended send to latest end).
func (a *StatsAccumulator) Stats(duration time.Duration) Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.o
	if duration > 0 {
		o.Duration = duration
	}
	s := Stats{
		FailedByClass: maps.Clone(a.failedByClass),
		FinishReasons: maps.Clone(a.finish),
		RequestedRate: o.RequestedRate,
		Requests:      a.n,
		Good:          a.good,
		CachedTokens:  a.cached, CachedTokensReports: a.cachedN,
	}
	if a.spent {
		panic("sweep: StatsAccumulator.Stats called twice")
	}
	a.spent = true
	s.MaxOutputTokensPerS, s.MaxConcurrentRequests = a.peaks()
	var ttft, ttftText, ttfa, tpot, e2el, e2elSched []float64
	var ttfr, thinking, firstTool []float64
	var srvQueue, srvTTFT, srvGen, srvOver []float64
	var srv ServerTimingStats
	var rs ReasoningStats
	lag, queue, inLens, reqOut := floats(a.n), floats(a.n), floats(a.n), floats(a.n)
	outLens, itl := floats(a.n), floats(a.itl.len())
	s.Latencies = make([]float64, 0, a.n)
	s.QueueTimes = make([]float64, 0, a.n)
	if a.n <= MaxKneeSamples {
		s.kneeSamples = make([]kneeSample, 0, a.n)
	}
	for i := range a.samples.len() {
		r := a.samples.at(i)
		if !r.present {
			continue
		}
		lag = append(lag, ms(max(r.sendLag-r.queueWait, 0)))
		queue = append(queue, ms(r.queueWait))
		if r.ok {
			s.Latencies = append(s.Latencies, r.e2e.Seconds())
			s.QueueTimes = append(s.QueueTimes, r.queueWait.Seconds())
		} else {
			s.Latencies = append(s.Latencies, 0)
			s.QueueTimes = append(s.QueueTimes, 0)
		}
		inLens = append(inLens, float64(r.in))
		reqOut = append(reqOut, float64(r.reqOut))
		if s.kneeSamples != nil {
			s.kneeSamples = append(s.kneeSamples, newKneeSample(r))
		}
		if !r.ok {
			s.Failed++
			continue
		}
		if r.good {
			s.GoodOutputTokens += r.out
		}
		s.Completed++
		s.TotalInputTokens += r.in
		s.TotalOutputTokens += r.out
		outLens = append(outLens, float64(r.out))
		e2el = append(e2el, ms(r.e2e))
		e2elSched = append(e2elSched, ms(r.e2e+r.sendLag))
		if r.noStream {
			continue // E2E only: no TTFT, TPOT or ITL figures
		}
		ttft = append(ttft, ms(r.ttft))
		if r.ttftText > 0 {
			// Content TTFT is over the requests that had content: a
			// tool-call-only answer has none (not 0 ms).
			ttftText = append(ttftText, ms(r.ttftText))
		}
		ttfa = append(ttfa, ms(r.ttfa))
		if r.srvSplit {
			srv.Requests++
			over := r.ttft - r.srvQueue - r.srvTTFT
			if over < 0 {
				srv.NegativeOverhead++
			}
			srvQueue, srvTTFT, srvOver = append(srvQueue, ms(r.srvQueue)), append(srvTTFT, ms(r.srvTTFT)), append(srvOver, ms(over))
			if r.srvGenOK {
				srvGen = append(srvGen, ms(r.srvGen))
			}
		}
		if r.reasoned {
			rs.Requests++
			rs.ReasoningTokens += int(r.reasonTok)
			rs.AnswerTokens += int(r.answerTok)
			if r.counted {
				rs.CountedRequests++
			}
			if r.ttfr > 0 {
				ttfr = append(ttfr, ms(r.ttfr))
				thinking = append(thinking, ms(r.thinking))
			}
		}
		if r.firstTool > 0 {
			rs.ToolCallRequests++
			rs.ToolCalls += int(r.toolCalls)
			firstTool = append(firstTool, ms(r.firstTool))
		}
		if r.out > 1 {
			tpot = append(tpot, ms((r.e2e-r.ttft)/time.Duration(r.out-1)))
		}
		for k := range int(r.itlN) {
			itl = append(itl, ms(*a.itl.at(r.itlOff + k)))
		}
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Failed) / float64(s.Requests)
	}

	dur := o.Duration
	if dur <= 0 && !a.durFirst.IsZero() {
		dur = a.durLast.Sub(a.durFirst)
	}
	s.Duration = dur.Seconds()
	if s.Duration > 0 {
		s.RequestThroughput = float64(s.Completed) / s.Duration
		s.RequestGoodput = float64(s.Good) / s.Duration
		s.OutputThroughput = float64(s.TotalOutputTokens) / s.Duration
		s.TotalTokenThroughput = float64(s.TotalInputTokens+s.TotalOutputTokens) / s.Duration
		s.GoodOutputThroughput = float64(s.GoodOutputTokens) / s.Duration
	}
	a.kneeFigures(&s, dur, o)

	// The samples are in the arrays now: release them before the
	// summaries copy and sort the largest array (ITL) again.
	a.samples, a.itl = chunked[reqSample]{}, chunked[time.Duration]{}
	// Each metric's bootstrap seed: o.Seed+1 for TTFT, +2 TPOT, +3 ITL, ...
	lat := func(xs []float64, k uint64) Latency {
		return summarizeLatency(xs, o.Percentiles, o.BootstrapIters, o.Seed+k)
	}
	s.ITL = lat(itl, 3)
	itl = nil
	s.TTFT, s.TPOT, s.E2EL = lat(ttft, 1), lat(tpot, 2), lat(e2el, 4)
	s.TTFTText, s.SendLag, s.QueueTime, s.E2ELFromScheduled = lat(ttftText, 5), lat(lag, 6), lat(queue, 7), lat(e2elSched, 8)
	s.sendLagsMS = lag
	s.TTFA = lat(ttfa, 9)
	if rs.Requests > 0 || rs.ToolCallRequests > 0 {
		rs.TTFR, rs.ThinkingTime, rs.FirstToolCall = lat(ttfr, 10), lat(thinking, 11), lat(firstTool, 12)
		s.Reasoning = &rs
	}
	if srv.Requests > 0 {
		srv.Queue, srv.ServerTTFT, srv.Generation, srv.Overhead = lat(srvQueue, 13), lat(srvTTFT, 14), lat(srvGen, 15), lat(srvOver, 16)
		s.ServerTiming = &srv
	}

	if a.poolingN > 0 {
		s.Pooling = &PoolingStats{Requests: a.poolingN, Inputs: a.pooling, MinDimension: a.minDim, MaxDimension: a.maxDim}
		if s.Duration > 0 {
			s.Pooling.InputThroughput = float64(a.pooling) / s.Duration
			s.Pooling.InputTokenThroughput = float64(s.TotalInputTokens) / s.Duration
		}
	}

	if a.imagesN > 0 {
		s.Images = &ImageStats{Requests: a.imagesN, Images: a.images, Bytes: a.imageBytes}
		if s.Duration > 0 {
			s.Images.Throughput = float64(a.images) / s.Duration
		}
	}

	if a.draftN > 0 && a.drafted > 0 {
		s.SpecDecode = &SpecDecodeStats{Requests: a.draftN, Drafted: a.drafted, Accepted: a.accepted,
			AcceptanceRate: float64(a.accepted) / float64(a.drafted)}
	}

	s.ScheduledRate = spanRateOf(a.schedFirst, a.schedLast, a.schedN)
	s.AchievedRate = spanRateOf(a.sentFirst, a.sentLast, a.sentN)
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

// floats returns an empty slice with room for n values (nil for none).
func floats(n int) []float64 {
	if n == 0 {
		return nil
	}
	return make([]float64, 0, n)
}

// kneeFigures fills ArrivalWindow, OfferedRate, DrainCorrectedDuration,
// GoodputRatio, KneeGoodput and KneeThroughput.
func (a *StatsAccumulator) kneeFigures(s *Stats, dur time.Duration, o StatsOptions) {
	s.KneeGoodput, s.KneeThroughput = s.RequestGoodput, s.RequestThroughput
	corrected := dur
	if a.minE2E > 0 && dur-a.minE2E > 0 {
		corrected = dur - a.minE2E
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
	if w <= 0 {
		w = a.window // 0 without o.Start
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

// spanRateOf is (n-1)/(last-first) in events per second, 0 with fewer than
// two events or a zero span.
func spanRateOf(first, last time.Time, n int) float64 {
	if n < 2 {
		return 0
	}
	span := last.Sub(first).Seconds()
	if span <= 0 {
		return 0
	}
	return float64(n-1) / span
}

// peaks computes vLLM's max_output_tokens_per_s (the most token events in a
// one-second bucket counted from the earliest send of a successful request)
// and max_concurrent_requests (an exact sweep over [sent, sent+E2E) of the
// successful requests).
func (a *StatsAccumulator) peaks() (float64, int) {
	var t0 time.Time
	for i := range a.samples.len() {
		r := a.samples.at(i)
		if r.present && r.ok && (t0.IsZero() || r.sent.Before(t0)) {
			t0 = r.sent
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
	for i := range a.samples.len() {
		r := a.samples.at(i)
		if !r.present || !r.ok {
			continue
		}
		start := r.sent.Sub(t0)
		tok := start + r.ttft
		buckets[int64(tok/time.Second)]++
		for k := range int(r.itlN) {
			tok += *a.itl.at(r.itlOff + k)
			buckets[int64(tok/time.Second)]++
		}
		edges = append(edges, edge{start, 1}, edge{start + r.e2e, -1})
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

// chunkBits sizes the chunks of a chunked list: 4096 elements.
const chunkBits = 12

// chunked is a list stored in fixed-size chunks, so that growing it never
// copies what it holds (a doubling slice would briefly need three times
// its size).
type chunked[T any] struct {
	chunks [][]T
	n      int
}

func (c *chunked[T]) len() int { return c.n }

func (c *chunked[T]) at(i int) *T { return &c.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

// set stores v at i, growing the list to i+1 elements (zero values in
// between) when needed.
func (c *chunked[T]) set(i int, v T) {
	for i>>chunkBits >= len(c.chunks) {
		c.chunks = append(c.chunks, make([]T, 1<<chunkBits))
	}
	*c.at(i) = v
	c.n = max(c.n, i+1)
}

func (c *chunked[T]) append(v T) { c.set(c.n, v) }
