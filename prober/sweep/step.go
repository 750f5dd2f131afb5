package sweep

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/proccpu"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/schedlat"
	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// runStep runs one step: warmups, idle wait, snapshot, load, drain,
// snapshot, statistics. Records go to the sink as they complete. It
// returns the step (nil when ctx ended before it began) and an error only
// for a sink (artifact write) failure.
func (r *runner) runStep(ctx context.Context, lv float64, round int) (*Step, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	c := r.cfg
	idx := len(r.steps)
	label := r.levelLabel(lv)
	if c.Rounds > 1 {
		label += "/round=" + strconv.Itoa(round)
	}
	attempt := 1
	for _, s := range r.steps {
		if s.Level == lv && s.Round == round {
			attempt++
		}
	}
	if attempt > 1 {
		label += "/attempt=" + strconv.Itoa(attempt)
	}
	st := &Step{Index: idx, Label: label, Level: lv, Round: round, Attempt: attempt, Mode: r.stepMode(lv), Warmups: c.Warmups}
	r.current = fmt.Sprintf("%d (%s)", idx, label)
	if st.Mode == ModeClosed {
		st.Concurrency = int(lv)
	} else {
		st.MaxConcurrency = c.MaxConcurrency
	}
	seed := attemptSeed(c.shardSeed(), lv, round, attempt)
	logger := log.With(r.logger, "step", idx, "label", label)

	// Items first (prompt building may call /tokenize): nothing of it may
	// happen on the send path.
	n, byDuration, err := r.plannedCount(st, seed)
	if err == nil {
		err = r.checkSessions(st, n)
	}
	if err != nil {
		return nil, err
	}
	short0 := r.prompts.info().ShortNonceItems
	items, err := r.buildItems(ctx, seed, n, c.Warmups, st.Mode == ModeBurst)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("step %s: build prompts: %w", label, err)
	}
	defer items.measured.close()
	if c.Workload.PrefixTokens > 0 {
		st.PrefixGeneration = r.prompts.prefixGeneration()
	}

	var preWarm *scrape.Snapshot
	if c.Warmups > 0 {
		preWarm = r.snapshot(ctx, st, PhaseBeforeWarmup)
		st.WarmupFailed = r.warmup(ctx, st, items.warmups)
	}
	idle := r.waitIdle(ctx, logger)
	r.bg.reset()
	before := r.snapshot(ctx, st, PhaseBefore)
	energy := r.energy.begin(ctx)

	var maxima map[string]float64
	var stopRec func() error
	if r.metricsOK {
		_ = r.sink.Snapshot(Snapshot{Step: idx, Label: label, Phase: PhaseDuring, Time: time.Now(), Source: redact.Text(r.metricsURL)})
		rec := scrape.NewRecorder(r.http, r.metricsURL, c.MetricsInterval, scrapeWriter{r, idx},
			append(r.scrapeOpts(), scrape.WithGauges(r.gauges()))...)
		stop := rec.Start(ctx)
		stopRec = func() error {
			err := stop()
			maxima = rec.Max()
			return err
		}
	} else {
		_ = r.sink.Snapshot(Snapshot{Step: idx, Label: label, Phase: PhaseDuring, Time: time.Now(), NotRecorded: r.metricsReason})
	}

	requested := c.sendRate(lv)
	if st.Mode == ModeClosed {
		requested = 0
	}
	window := time.Duration(0)
	if byDuration {
		window = c.Duration
	}
	if late, ok := r.waitSlot(ctx, idx); !ok {
		return nil, nil
	} else if late > time.Second {
		r.stepNotes = append(r.stepNotes, "step "+label+": "+shardNote(late))
	}
	level.Info(logger).Log("msg", "step starting", "mode", st.Mode, "requests", countText(n))
	cpu0, cpuOK := proccpu.Used()
	sched0 := schedlat.Read()
	t0 := time.Now()
	st.Start = t0.UTC()
	acc := NewStatsAccumulator(StatsOptions{
		SLO: c.SLO, Percentiles: c.Percentiles, RequestedRate: requested, Seed: seed,
		Start: t0, Window: window,
	})
	r.obs.StepStarted(st, n)
	// The step's own context: the sink's byte cap (ErrStepCapReached)
	// cancels it, with that error as the cause.
	loadCtx, stopLoad := context.WithCancelCause(ctx)
	r.beginStep(stopLoad)
	r.load(loadCtx, st, t0, seed, items.measured, n, acc)
	capErr := r.endStep()
	stopLoad(nil)
	dur := time.Since(t0)
	cpu1, cpuOK1 := proccpu.Used()
	sched := schedFigureOf(schedlat.Read().Sub(sched0), r.validityOptions().withDefaults().MaxSchedLatency)
	st.End = time.Now().UTC()
	if stopRec != nil {
		if err := stopRec(); err != nil {
			level.Warn(logger).Log("msg", "during-step scrapes incomplete", "err", r.redact(err.Error()))
		}
	}
	st.Interrupted = ctx.Err() != nil
	st.Stats = acc.Stats(dur)
	if st.Stats.ServerTiming == nil {
		st.Stats.ServerTiming = &ServerTimingStats{NotRecorded: r.serverTimingReason()}
	}
	var after *scrape.Snapshot
	if st.Interrupted {
		_ = r.sink.Snapshot(Snapshot{Step: idx, Label: label, Phase: PhaseAfter, Time: time.Now(), NotRecorded: "interrupted"})
	} else {
		after = r.settledSnapshot(ctx, st, PhaseAfter, before, st.Stats.Completed)
	}
	st.Energy = energy.finish(ctx, st)
	st.Stats.schedLat = sched
	st.Trace = r.traceTiming(st)
	gen := r.prompts.info()
	if r.dataset == nil && st.Trace == nil {
		st.DistinctPrompts = gen.DistinctPrompts - items.distinct0
	}
	st.Server = computeServerStats(r.eng, preWarm, before, after, maxima, st.Stats.TTFT)
	if !r.metricsOK {
		st.Server.Reason = "the server's /metrics could not be read: " + r.metricsReason
	}
	cores := -1.0
	if cpuOK && cpuOK1 && dur > 0 {
		cores = float64(cpu1-cpu0) / float64(dur)
	}
	st.Validity = Judge(st.Stats, cores, idle, st.Interrupted, r.validityOptions())
	if capErr != nil {
		st.Validity.Flags = append(st.Validity.Flags, FlagByteCap)
		st.Validity.Reasons = append(st.Validity.Reasons, fmt.Sprintf(
			"the step's records reached the byte cap (%d bytes, --max-step-bytes): it stopped sending after %d of its requests",
			r.cfg.StepByteCap(), st.Stats.Requests))
		st.Validity.Valid = false
		level.Warn(logger).Log("msg", "step stopped at the byte cap: the sweep ends after it", "max_step_bytes", r.cfg.StepByteCap())
	}
	r.checkPrefixReuse(st, gen, gen.ShortNonceItems-short0)
	r.measureBackground(st, before, after)
	st.Stats.sendLagsMS = nil // only Judge needs them; the Result keeps every step
	r.steps = append(r.steps, st)
	r.fp.Steps = append(r.fp.Steps, fingerprint.StepWindow{Index: idx, Label: label, Start: st.Start, End: st.End, Requests: st.Stats.Requests})
	r.obs.StepDone(st)
	if err := r.sinkError(); err != nil {
		return st, err
	}
	if capErr != nil {
		return st, fmt.Errorf("step %s: %w", label, capErr)
	}
	level.Info(logger).Log(stepDoneFields(st, !c.SLO.IsZero())...)
	return st, nil
}

// stepDoneFields are the "step done" log line's fields. As in the table,
// goodput is "-" without an SLO (it would only repeat the throughput of the
// successful requests) and a p99 without samples is "-", not 0 (issue 22
// V6).
func stepDoneFields(st *Step, sloSet bool) []any {
	goodput := "-"
	if sloSet {
		goodput = fmt.Sprintf("%.3g", st.Stats.RequestGoodput)
	}
	p99 := func(x Latency) string {
		if x.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%.4g", x.P99)
	}
	kv := []any{"msg", "step done", "completed", st.Stats.Completed, "failed", st.Stats.Failed,
		"req_per_s", fmt.Sprintf("%.3g", st.Stats.RequestThroughput), "goodput", goodput,
		"ttft_p99_ms", p99(st.Stats.TTFT), "tpot_p99_ms", p99(st.Stats.TPOT),
		"valid", st.Validity.Valid}
	if !st.Validity.Valid {
		kv = append(kv, "flags", strings.Join(st.Validity.Flags, ","))
	}
	return kv
}

func countText(n int) string {
	if n < 0 {
		return "until the duration ends"
	}
	return strconv.Itoa(n)
}

// plannedCount returns the number of requests a step will send, or -1 when
// it is not known in advance (closed loop bounded by a duration), and
// whether the step's arrival window is the duration (closed loop only). An
// open loop sends --num-prompts, or round(rate x --duration) raised to
// MinPrompts, on a schedule normalized as vllm bench serve's
// (normalizedOffsets): its window ends at the last arrival, N / rate.
func (r *runner) plannedCount(st *Step, seed uint64) (n int, byDuration bool, err error) {
	c := r.cfg
	if sp, ok := r.traceSpeed(st.Level); ok {
		return c.traceCount(sp), false, nil
	}
	if c.NumPrompts > MaxStepRequests { // a search's longer rerun
		return 0, false, fmt.Errorf("step %s would send more than %d requests", st.Label, MaxStepRequests)
	}
	if c.NumPrompts > 0 {
		return c.shardPrompts(), false, nil
	}
	if st.Mode == ModeClosed {
		return -1, true, nil
	}
	x := math.Round(c.sendRate(st.Level) * c.Duration.Seconds())
	if x > MaxStepRequests || c.MinPrompts > MaxStepRequests {
		return 0, false, fmt.Errorf("step %s would send more than %d requests: shorten --duration", st.Label, MaxStepRequests)
	}
	return max(int(x), c.MinPrompts, 1), false, nil
}

// warmup sends the warmup requests (concurrently, at most MaxConcurrency
// or 8 at once) and returns how many failed. They are not measured.
func (r *runner) warmup(ctx context.Context, st *Step, items []promptItem) int {
	limit := 8
	if r.cfg.MaxConcurrency > 0 {
		limit = min(limit, r.cfg.MaxConcurrency)
	}
	if st.Mode == ModeClosed {
		limit = min(limit, st.Concurrency)
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rec := prober.Record{Model: r.model, Scheduled: time.Now()}
			r.client.Do(ctx, r.request(fmt.Sprintf("llmprobe-%s-%d-warmup-%d", r.runID, st.Index, i), it), &rec)
			if !rec.OK() {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// checkPrefixReuse flags st FlagUnintendedPrefixCache when the server's
// prefix-cache hits show more reuse than the shared prefix explains
// (CheckPrefixReuse), or notes why that could not be judged. gen is the
// workload generator's Info after the step and short the step's items with
// a shortened nonce.
func (r *runner) checkPrefixReuse(st *Step, gen workload.Info, short int64) {
	if st.Interrupted || r.dataset != nil {
		return // a dataset's prompts may share prefixes and repeat: reuse is theirs, not a leak
	}
	if st.Trace != nil { // a trace shares prefixes on purpose: Step.Trace compares them
		return
	}
	sv := st.Server
	requests, queries, hits, usage := st.Stats.Requests, sv.PrefixCacheQueries, sv.PrefixCacheHits, false
	if x := &st.Stats; (!hits.Known || !queries.Known) && x.CachedTokensReports > 0 && x.CachedTokensReports == x.Completed {
		// No counters, but every response's usage said what was cached.
		requests, usage = x.CachedTokensReports, true
		queries, hits = knownFigure(float64(x.TotalInputTokens), true), knownFigure(float64(x.CachedTokens), true)
	}
	flag, reason, note := CheckPrefixReuse(PrefixReuse{
		Requests: requests, Queries: queries, Hits: hits, Preemptions: sv.Preemptions, FromUsage: usage,
		PrefixTokens: max(r.cfg.Workload.PrefixTokens, gen.PrefixTokens), OverheadTokens: gen.OverheadTokens,
		MaxPromptTokens: int(st.Stats.InputTokens.Max), BlockSize: r.cacheBlockSize(),
		Prompts: gen.DistinctPrompts + int64(len(endpoint.CalibrationWords)), NonceAlphabet: gen.NonceAlphabet,
		NonceTested: gen.NonceTested, ShortNonceItems: short, ContextTokens: st.MultiTurn.resent(),
	})
	switch {
	case flag:
		st.Validity.Flags = append(st.Validity.Flags, FlagUnintendedPrefixCache)
		st.Validity.Reasons = append(st.Validity.Reasons, reason)
		st.Validity.Valid = false
		level.Warn(r.logger).Log("msg", "unintended prefix-cache reuse", "step", st.Index, "engine", r.eng.Name(), "reason", reason)
	case note != "":
		r.stepNotes = append(r.stepNotes, fmt.Sprintf("step %d (%s): %s.", st.Index, st.Label, note))
	}
}

// cacheBlockSize is the server's prefix-cache block in tokens, from its
// engine configuration (vLLM block_size, SGLang page_size); 0 when unknown.
func (r *runner) cacheBlockSize() int {
	for _, k := range []string{"block_size", "page_size"} {
		if n, err := strconv.Atoi(r.info.EngineConfig[k]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}
