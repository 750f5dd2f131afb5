package sweep

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/schedule"
)

// Trace replay (Config.Trace): each speed is a level whose value is the
// replay's mean rate in req/s (the entries replayed over their span at that
// speed), so that the knee, the goodput ratio and result.json's
// request_rate keep their meaning; the step's label names the speed
// ("trace-speed=2"). A step is an open loop on the trace's own offsets
// divided by the speed (schedule.Offsets), with the same warmups, idle
// proof, snapshots and validity as every step, and its prompts come from
// the trace's lengths and hash ids (workload.TracePrompts). Step.Trace
// compares the achieved send times with the trace's.

// MaxTraceSpeed bounds a replay speed.
const MaxTraceSpeed = 1e6

// traceRun is a trace sweep's state.
type traceRun struct {
	// speeds maps a level (the replay's mean rate) to its speed.
	speeds map[float64]float64
	mu     sync.Mutex
	cur    *traceCollector // the step in flight
}

// ParseTraceSpeeds parses --trace-speed: a comma-separated list of speeds
// > 0 (1 = the trace's own timing), in the order given, no duplicates.
func ParseTraceSpeeds(s string) ([]float64, error) {
	return parseLevels("TraceSpeeds", "speed", "a speed (a number > 0; 2 replays twice as fast)", s, false)
}

// validateTrace checks the trace settings (nothing without a trace, except
// that speeds need one).
func (c *Config) validateTrace() error {
	if c.Workload.Trace != nil {
		// A workload's trace: is the daemon's config (prober/config
		// loads it into Trace); the sweep reads no file from the workload.
		return fieldErr("Workload", "trace: give the trace with {Trace} (workload.trace is a daemon config's scheduled-sweep key)")
	}
	if c.Trace == nil {
		if len(c.TraceSpeeds) > 0 {
			return fieldErr("TraceSpeeds", "needs {Trace}")
		}
		return nil
	}
	switch {
	case len(c.Trace.Entries) == 0:
		return fieldErr("Trace", "%s has no entries", c.Trace.Path)
	case len(c.Rates) > 0 || c.Auto || len(c.Concurrency) > 0:
		return fieldErr("Trace", "replays the trace's own timing: give {TraceSpeeds}, not {Rates} or {Concurrency}")
	case c.Sharded():
		return fieldErr("Trace", "a trace replay is not sharded ({ShardCount}): each shard would send the whole trace")
	case c.Unscaled:
		return fieldErr("Trace", "{Unscaled} does not apply to a trace replay (it has no arrival process)")
	case len(c.TraceSpeeds) == 0:
		return fieldErr("TraceSpeeds", "give at least one speed (1: the trace's own timing)")
	}
	rates := map[float64]float64{}
	for _, sp := range c.TraceSpeeds {
		if p := LookupField("TraceSpeeds").Bound.check(sp); p != "" {
			return fieldErr("TraceSpeeds", "speed %s, got %v", p, sp)
		}
		n := c.traceCount(sp)
		if c.Trace.Entries[n-1].Offset <= 0 {
			field := "NumPrompts"
			if c.Duration > 0 {
				field = "Duration"
			}
			return fieldErr(field, "leaves %d trace entries at speed %s, all at offset 0: no span to replay", n, fmtLevel(sp))
		}
		rate := c.traceRate(sp)
		if other, dup := rates[rate]; dup {
			return fieldErr("TraceSpeeds", "speeds %s and %s replay the same mean rate (%s req/s) after the cut", fmtLevel(other), fmtLevel(sp), fmtLevel(rate))
		}
		rates[rate] = sp
	}
	return nil
}

// traceCount is the number of entries a step at speed sends.
func (c *Config) traceCount(speed float64) int {
	return c.Trace.Cut(c.NumPrompts, c.Duration, speed)
}

// traceRate is the mean rate of the replay at speed: its entries over
// their span at that speed (the step's level).
func (c *Config) traceRate(speed float64) float64 {
	n := c.traceCount(speed)
	span := c.Trace.Entries[n-1].Offset.Seconds() / speed
	return float64(n) / span
}

// runTraceLevels runs one level per speed.
func (r *runner) runTraceLevels(ctx context.Context) error {
	r.trace = &traceRun{speeds: map[float64]float64{}}
	for _, sp := range r.cfg.TraceSpeeds {
		if ctx.Err() != nil {
			return nil
		}
		lv := r.cfg.traceRate(sp)
		r.trace.speeds[lv] = sp
		if _, err := r.runLevel(ctx, lv); err != nil {
			return err
		}
	}
	return nil
}

// traceSpeed returns the speed of level lv (ok false outside a trace).
func (r *runner) traceSpeed(lv float64) (float64, bool) {
	if r.trace == nil {
		return 0, false
	}
	sp, ok := r.trace.speeds[lv]
	return sp, ok
}

// traceOffsets returns the n send offsets of a step at speed.
func (r *runner) traceOffsets(speed float64, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i, e := range r.cfg.Trace.Entries[:n] {
		out[i] = time.Duration(math.Round(float64(e.Offset) / speed))
	}
	return out
}

// traceSchedule sets sc to replay the step's entries; it returns the
// collector of their send times (nil outside a trace).
func (r *runner) traceSchedule(sc *schedule.Config, st *Step, t0 time.Time, n int) *traceCollector {
	sp, ok := r.traceSpeed(st.Level)
	if !ok {
		return nil
	}
	offs := r.traceOffsets(sp, n)
	sc.Mode, sc.Process = schedule.Open, schedule.NewOffsets(offs)
	tc := &traceCollector{t0: t0, speed: sp, offsets: offs, sent: make([]time.Duration, n), present: make([]bool, n)}
	r.trace.mu.Lock()
	r.trace.cur = tc
	r.trace.mu.Unlock()
	return tc
}

// traceCollector keeps the actual send offset of each request of a step
// (16 bytes + 1 a request).
type traceCollector struct {
	t0      time.Time
	speed   float64
	offsets []time.Duration // scheduled, from t0

	mu      sync.Mutex
	sent    []time.Duration
	present []bool
	notSent int
}

// add records the request of arrival index i.
func (tc *traceCollector) add(i int64, rec *prober.Record) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if i < 0 || int(i) >= len(tc.sent) {
		return
	}
	tc.sent[i], tc.present[i] = rec.Sent.Sub(tc.t0), true
	if rec.NotSent {
		tc.notSent++
	}
}

// TraceTiming compares a trace step's achieved send times with the
// trace's (result.json's step "trace").
type TraceTiming struct {
	// Source is the trace file, SHA256 its hash, Format its format.
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
	Format string `json:"format"`
	// Speed is the replay speed; Entries the trace entries the step
	// replayed (the first ones, after --num-prompts / --duration), Sent how
	// many of them were sent (the rest failed before sending, or the step
	// was interrupted).
	Speed   float64 `json:"speed"`
	Entries int     `json:"entries"`
	Sent    int     `json:"sent"`
	// TraceSpanS is the replayed entries' span at the trace's own timing,
	// ScheduledSpanS the same divided by the speed, AchievedSpanS the first
	// to the last actual send.
	TraceSpanS     float64 `json:"trace_span_s"`
	ScheduledSpanS float64 `json:"scheduled_span_s"`
	AchievedSpanS  float64 `json:"achieved_span_s"`
	// OffsetErrorMS is achieved - scheduled send offset (send lag plus any
	// wait for a --max-concurrency slot) over the requests sent.
	OffsetErrorMS OffsetError `json:"offset_error_ms"`
	// SendLagP99MS is the step's send-lag p99 (Stats.SendLag).
	SendLagP99MS float64 `json:"send_lag_p99_ms"`
	// ReorderedSends counts requests sent before one scheduled earlier
	// (ties in the trace are not counted).
	ReorderedSends int `json:"reordered_sends"`
	// WindowS is the width of the rate windows; Windows counts the
	// scheduled (trace) and the actual (achieved) sends in each, from the
	// step's start. MaxRateErrorPerS is the largest |achieved - trace| rate
	// of a window, in req/s.
	WindowS          float64       `json:"window_s"`
	Windows          []TraceWindow `json:"windows"`
	MaxRateErrorPerS float64       `json:"max_rate_error_per_s"`
	// SharedPrefixTokens and InputTokens sum the replayed entries' shared
	// prefixes (from their hash ids) and inputs: PrefixShare is their ratio,
	// the prefix-cache hit rate an unbounded cache would see (compare
	// server.prefix_cache_hit_rate).
	SharedPrefixTokens int64   `json:"shared_prefix_tokens"`
	InputTokens        int64   `json:"input_tokens"`
	PrefixShare        float64 `json:"prefix_share"`
	// BlockSize is the trace's tokens per hash id.
	BlockSize int `json:"block_size"`
}

// OffsetError summarizes achieved - scheduled send offsets in ms.
type OffsetError struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// TraceWindow is one rate window of a trace step.
type TraceWindow struct {
	// StartS is the window's start from the step's start, in seconds.
	StartS float64 `json:"start_s"`
	// Trace and Achieved count the scheduled and the actual sends in it.
	Trace    int `json:"trace"`
	Achieved int `json:"achieved"`
}

// maxTraceWindows bounds TraceTiming.Windows.
const maxTraceWindows = 500

// niceWindows are the window widths, in seconds.
var niceWindows = []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400}

// traceWindow picks the window width for a span: 10 s, or narrower for a
// span under 100 s (about ten windows), wider for one over 5,000 s (at
// most maxTraceWindows).
func traceWindow(span float64) float64 {
	want := math.Max(math.Min(10, span/10), span/maxTraceWindows)
	for _, w := range niceWindows {
		if w >= want {
			return w
		}
	}
	return math.Ceil(span / maxTraceWindows)
}

// traceTiming fills st.Trace from the step's collector once its Stats are
// set (nil outside a trace).
func (r *runner) traceTiming(st *Step) *TraceTiming {
	if r.trace == nil {
		return nil
	}
	r.trace.mu.Lock()
	tc := r.trace.cur
	r.trace.cur = nil
	r.trace.mu.Unlock()
	if tc == nil {
		return nil
	}
	t := r.cfg.Trace
	n := len(tc.offsets)
	tt := &TraceTiming{
		Source: redact.Text(t.Path), SHA256: t.SHA256, Format: t.Format, Speed: tc.speed, Entries: n,
		TraceSpanS: t.Entries[n-1].Offset.Seconds(), ScheduledSpanS: tc.offsets[n-1].Seconds(),
		SendLagP99MS: st.Stats.SendLag.P99, BlockSize: t.BlockSize, Windows: []TraceWindow{},
	}
	tt.SharedPrefixTokens, tt.InputTokens = t.PrefixShare(n)
	if tt.InputTokens > 0 {
		tt.PrefixShare = float64(tt.SharedPrefixTokens) / float64(tt.InputTokens)
	}
	repeats := 0
	for _, e := range t.Entries[:n] {
		if e.Repeat {
			repeats++
		}
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	st.DistinctPrompts = int64(st.Stats.Requests - repeats)
	var errs []float64
	first, last := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	var prevSched, prevSent time.Duration
	havePrev := false
	for i := range n {
		if !tc.present[i] {
			continue
		}
		s := tc.sent[i]
		errs = append(errs, ms(s-tc.offsets[i]))
		first, last = min(first, s), max(last, s)
		if havePrev && tc.offsets[i] > prevSched && s < prevSent {
			tt.ReorderedSends++
		}
		prevSched, prevSent, havePrev = tc.offsets[i], max(prevSent, s), true
	}
	tt.Sent = len(errs) - tc.notSent
	if len(errs) > 0 {
		tt.AchievedSpanS = (last - first).Seconds()
		slices.Sort(errs)
		q := func(p float64) float64 { return errs[int(math.Ceil(p*float64(len(errs))))-1] }
		tt.OffsetErrorMS = OffsetError{P50: q(0.5), P99: q(0.99), Max: errs[len(errs)-1]}
	}
	span := math.Max(tt.ScheduledSpanS, tt.AchievedSpanS)
	w := traceWindow(math.Max(span, 1e-3))
	tt.WindowS = w
	nw := int(math.Floor(span/w)) + 1
	tt.Windows = make([]TraceWindow, nw)
	for k := range tt.Windows {
		tt.Windows[k].StartS = math.Round(float64(k)*w*1e6) / 1e6
	}
	wd := time.Duration(math.Round(w * float64(time.Second)))
	bucket := func(d time.Duration) int { return min(nw-1, max(0, int(d/wd))) }
	for i := range n {
		tt.Windows[bucket(tc.offsets[i])].Trace++
		if tc.present[i] {
			tt.Windows[bucket(tc.sent[i])].Achieved++
		}
	}
	for _, win := range tt.Windows {
		tt.MaxRateErrorPerS = math.Max(tt.MaxRateErrorPerS, math.Abs(float64(win.Achieved-win.Trace))/w)
	}
	return tt
}

// checkTraceFits refuses a trace whose longest replayed request does not
// fit the model's max_model_len.
func checkTraceFits(c Config, maxLen int64, source string) error {
	if c.Trace == nil {
		return nil
	}
	n := 0
	for _, sp := range c.TraceSpeeds {
		n = max(n, c.traceCount(sp))
	}
	e := c.Trace.Longest(n)
	if need := int64(e.InputTokens + e.OutputTokens); need > maxLen {
		return fieldErr("Trace", "%s:%d: the request needs %d tokens (input %d + output %d), more than the model's max_model_len %d (from %s)",
			c.Trace.Path, e.Line, need, e.InputTokens, e.OutputTokens, maxLen, source)
	}
	return nil
}

// traceFingerprint records the trace in the fingerprint's workload.
func (r *runner) traceFingerprint(fp *fingerprint.Fingerprint) {
	c := r.cfg
	if c.Trace == nil {
		return
	}
	t := c.Trace
	shared, input := t.PrefixShare(0)
	ft := &fingerprint.Trace{
		Source: redact.Text(t.Path), SHA256: t.SHA256, Format: t.Format, Entries: len(t.Entries),
		BlockSize: t.BlockSize, HashIDs: t.HashIDs, Reordered: t.Reordered, SpanS: t.Span().Seconds(),
		Speeds: slices.Clone(c.TraceSpeeds), SharedPrefixTokens: shared, InputTokens: input,
	}
	fp.Workload.Trace = ft
}
