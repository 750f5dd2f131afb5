package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// ResultSchemaVersion is the version of result.json's llmprobe extras. 2:
// knee.level only when found, knee.bracket_low and bracket_high, a step's
// search verdict (DecodeResult reads 1 too).
const ResultSchemaVersion = 2

// Step is one measured step: one level, one round.
type Step struct {
	// Index is the step's position in run order (0-based); Label names it
	// ("rate=4", "rate=inf", "concurrency=8"), with "/round=N" when the
	// sweep has several rounds.
	Index int    `json:"index"`
	Label string `json:"label"`
	// Level is the requested rate (req/s; +Inf for a burst) or the
	// concurrency; Round counts from 1.
	Level float64 `json:"-"`
	Round int     `json:"round"`
	// Attempt counts the runs of this level and round from 1: the knee
	// search reruns a level that came out invalid.
	Attempt int `json:"attempt"`
	// Mode is the step's load mode (ModeOpen, ModeClosed, ModeBoth,
	// ModeBurst).
	Mode string `json:"mode"`
	// Concurrency is the closed-loop level; MaxConcurrency the open-loop
	// cap (0 = none).
	Concurrency    int `json:"concurrency,omitempty"`
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Start and End are the UTC wall-clock window of the measured part.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Warmups is the number of warmup requests sent and WarmupFailed how
	// many of them failed.
	Warmups      int `json:"warmups"`
	WarmupFailed int `json:"warmup_failed"`
	// PrefixGeneration numbers the step's shared prefix: 0 for the sweep's
	// one prefix, a new number per step with --fresh-prefix.
	PrefixGeneration uint64 `json:"prefix_generation,omitempty"`
	// DistinctPrompts is the number of distinct prompts among the step's
	// measured requests, as the workload generator counted them
	// (workload.Generator.DistinctPrompts); it equals Stats.Requests unless
	// prompts repeated (inputs too short for a full nonce). 0 in a result
	// written before it was recorded.
	DistinctPrompts int64 `json:"distinct_prompts,omitempty"`
	// Stats are the client-side statistics, Server the server-side deltas,
	// Validity the verdict.
	Stats    Stats       `json:"stats"`
	Server   ServerStats `json:"server"`
	Validity Validity    `json:"validity"`
	// Interrupted is true when the step was cut short.
	Interrupted bool `json:"interrupted"`
	// Search is what the adaptive search made of the step's run (nil for
	// a ladder): result.json's "search".
	Search *StepVerdict `json:"search,omitempty"`
	// MultiTurn is what a multi-turn step's sessions did (nil for a
	// single-turn workload): result.json's "multi_turn".
	MultiTurn *MultiTurnStats `json:"multi_turn,omitempty"`
	// Trace compares a trace replay's achieved send times with the
	// trace's (nil unless --trace): result.json's "trace".
	Trace *TraceTiming `json:"trace,omitempty"`
}

// StepVerdict is the adaptive search's verdict on one run of a level.
type StepVerdict struct {
	// Verdict is a Verdict* constant (VerdictPass, VerdictTooShort, ...).
	Verdict string `json:"verdict"`
	// Why says why, in words (and, for a too-short run, how long its rerun
	// is); empty for a plain pass.
	Why string `json:"why,omitempty"`
}

// Spread summarizes one figure over the rounds of a level.
type Spread struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Std  float64 `json:"std"`
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := Spread{Mean: stats.Mean(xs), Std: stats.Std(xs), Min: xs[0], Max: xs[0]}
	for _, x := range xs {
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	return s
}

// Level aggregates the rounds of one level for the knee.
type Level struct {
	Label string  `json:"label"`
	Level float64 `json:"-"`
	// Rounds is the number of rounds run, ValidRounds how many were valid.
	Rounds      int `json:"rounds"`
	ValidRounds int `json:"valid_rounds"`
	// Goodput, Throughput, TTFTP99MS and TPOTP99MS spread over the valid
	// rounds (over all rounds when none was valid).
	Goodput    Spread `json:"request_goodput"`
	Throughput Spread `json:"request_throughput"`
	TTFTP99MS  Spread `json:"p99_ttft_ms"`
	TPOTP99MS  Spread `json:"p99_tpot_ms"`
	// KneeGoodput and GoodputRatio spread the figures the knee uses (see
	// Stats.GoodputRatio).
	KneeGoodput  Spread `json:"knee_goodput"`
	GoodputRatio Spread `json:"goodput_ratio"`
	// Passes says whether the level kept up: valid, every valid round's SLO
	// p99s held, and mean goodput >= 90 % of the offered rate.
	Passes bool `json:"passes"`
	// Outcome is what the knee logic saw.
	Outcome StepOutcome `json:"-"`
}

// aggregate builds the Level of a level's rounds: the spread of its
// figures over the valid rounds and the outcome the knee logic sees (a
// burst level is never valid for the knee).
func aggregate(label string, level float64, mode string, rounds []*Step, ratio float64) Level {
	l := Level{Label: label, Level: level, Rounds: len(rounds)}
	use := make([]*Step, 0, len(rounds))
	for _, s := range rounds {
		if s.Validity.Valid {
			use = append(use, s)
		}
	}
	l.ValidRounds = len(use)
	if len(use) == 0 {
		use = rounds
	}
	var good, tp, ttft, tpot, kgood, ktp, ratios []float64
	held := true
	requests, samples, need := 0, 0, 0
	for i, s := range use {
		if i == 0 || s.Stats.Requests < requests {
			requests = s.Stats.Requests
		}
		if n, ok := s.Stats.sloSamples(); ok {
			if need == 0 || n < samples {
				samples = n
			}
			need = MinSLOSamples
		}
		good = append(good, s.Stats.RequestGoodput)
		tp = append(tp, s.Stats.RequestThroughput)
		ttft = append(ttft, s.Stats.TTFT.P99)
		tpot = append(tpot, s.Stats.TPOT.P99)
		kgood = append(kgood, s.Stats.KneeGoodput)
		ktp = append(ktp, s.Stats.KneeThroughput)
		ratios = append(ratios, s.Stats.GoodputRatio)
		held = held && s.Stats.SLOHeld
	}
	l.Goodput, l.Throughput = spreadOf(good), spreadOf(tp)
	l.TTFTP99MS, l.TPOTP99MS = spreadOf(ttft), spreadOf(tpot)
	l.KneeGoodput, l.GoodputRatio = spreadOf(kgood), spreadOf(ratios)
	// The knee compares the goodput ratio with the required ratio: Offered
	// is the level scaled so that Goodput/Offered is the mean ratio.
	l.Outcome = StepOutcome{
		Level:           level,
		Offered:         level,
		Goodput:         l.GoodputRatio.Mean * level,
		Throughput:      spreadOf(ktp).Mean,
		Served:          l.Throughput.Mean,
		Requests:        requests,
		Samples:         samples,
		NeedSamples:     need,
		SLOHeld:         held,
		Valid:           l.ValidRounds > 0 && !math.IsInf(level, 1),
		MeasuredGoodput: l.Goodput.Mean,
	}
	if !l.Outcome.Valid && len(rounds) > 0 {
		last := rounds[len(rounds)-1]
		for i, f := range last.Validity.Flags {
			l.Outcome.Invalid = append(l.Outcome.Invalid, f+": "+last.Validity.Reasons[i])
		}
		if math.IsInf(level, 1) {
			l.Outcome.Invalid = append(l.Outcome.Invalid, "burst: rate inf is not an open loop")
		}
	}
	if mode == ModeClosed {
		// The served-throughput rule does not apply: the offered rate is
		// what was served.
		l.Outcome.Offered, l.Outcome.Served = l.Throughput.Mean, 0
		l.Outcome.Goodput = l.Goodput.Mean
		l.Outcome.Throughput = l.Throughput.Mean
	}
	l.Passes = l.Outcome.Passes(ratio)
	return l
}

// Result is result.json: the sweep's settings, every step, the levels and
// the knee.
type Result struct {
	// Date, Backend, ModelID and TokenizerID are vllm bench serve's
	// identification keys, shared by every step; Metadata holds the
	// --metadata pairs, written in MetadataOrder.
	Date          string
	Backend       string
	ModelID       string
	TokenizerID   string
	Metadata      map[string]string
	MetadataOrder []string
	// Mode, Arrival, Burstiness, Rates (as given), SLO (ms by vLLM key)
	// and Percentiles restate the settings.
	Mode        string
	Arrival     string
	Burstiness  float64
	Rates       string
	SLO         map[string]float64
	Percentiles []float64
	// Steps in run order, Levels sorted by level, and the Knee.
	Steps  []*Step
	Levels []Level
	Knee   Knee
	// KneeUnit is "req/s" or "concurrency".
	KneeUnit string
	// Complete is false for an interrupted sweep.
	Complete bool
	// Notes are sentences for the reader (warnings such as the burst
	// warning, or why the knee could not be decided).
	Notes []string
	// Probe is the throughput probe that chose the adaptive search's first
	// rate (nil when none ran); SearchEnd says why the search ended
	// (SearchBracketed, SearchMaxSteps, ...; "" for a ladder).
	Probe     *ThroughputProbe
	SearchEnd string
	// ReferenceCapacity is Config.ReferenceCapacity (0: not written).
	ReferenceCapacity float64
	// CostPerHour is Config.CostPerHour, the price in USD per hour
	// (result.json cost_per_hour_usd; 0: no price, not written).
	CostPerHour float64

	// The fields below are not written to result.json (the manifest and
	// the command line hold them); reports read them.

	// Name is Config.Name (--name).
	Name string
	// InterruptedReason says why an incomplete sweep stopped ("" when
	// complete), as in manifest.json.
	InterruptedReason string
	// MaxConcurrency is the open loop's concurrency cap (0: none, and
	// always 0 in closed-loop mode).
	MaxConcurrency int
	// Rounds is Config.Rounds.
	Rounds int
	// Fingerprint is the experiment fingerprint, as in manifest.json.
	Fingerprint fingerprint.Fingerprint

	// Dataset describes the workload's dataset as measured at preflight
	// (nil for a drawn workload): result.json "dataset", the entries'
	// input and output token distributions beside the steps' server-
	// reported ones. It holds no prompt text.
	Dataset *workload.DatasetInfo
}

// resultKeys returns every key result.json writes at the top level and in a
// step, for rejecting --metadata keys that would collide with them.
func resultKeys() map[string]bool {
	keys := map[string]bool{}
	r := &Result{SLO: map[string]float64{"ttft": 1}, Dataset: &workload.DatasetInfo{}, CostPerHour: 1}
	st := &Step{Mode: ModeBoth, MaxConcurrency: 1, Stats: Stats{TTFT: Latency{P99CI: &stats.CI{}}}, Search: &StepVerdict{}, Trace: &TraceTiming{}}
	r.Steps = []*Step{st}
	for _, o := range []object{r.StepJSON(st).(object), r.top()} {
		for _, e := range o {
			keys[e.k] = true
		}
	}
	return keys
}

// object is a JSON object that keeps its key order.
type object []kv

type kv struct {
	k string
	v any
}

func (o *object) add(k string, v any) { *o = append(*o, kv{k, v}) }

// MarshalJSON writes the keys in insertion order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", e.k, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonRate writes a rate as vLLM does: a number, or the string "inf".
func jsonRate(r float64) any {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return r
}

// finite replaces NaN and infinities (not valid JSON) with nil.
func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// StepJSON renders one step as a vllm bench serve result object (the keys
// and order of vllm-reference.md §1.6, percentile keys for p50, p90, p99 and
// the extra percentiles of every latency metric) followed by llmprobe's
// extras. Per-request arrays (ttfts, itls, latencies, ...) are not
// repeated here: records.jsonl holds every request.
func (r *Result) StepJSON(s *Step) any {
	o := object{}
	o.add("date", r.Date)
	o.add("endpoint_type", r.Backend)
	o.add("backend", r.Backend)
	o.add("label", s.Label)
	o.add("model_id", r.ModelID)
	o.add("tokenizer_id", r.TokenizerID)
	o.add("num_prompts", s.Stats.Requests)
	for _, k := range r.MetadataOrder {
		o.add(k, r.Metadata[k])
	}
	st := &s.Stats
	switch s.Mode {
	case ModeClosed:
		// vLLM's closest equivalent of a closed loop: rate inf capped by
		// max_concurrency.
		o.add("request_rate", "inf")
		o.add("burstiness", r.Burstiness)
		o.add("max_concurrency", s.Concurrency)
	default:
		o.add("request_rate", jsonRate(s.Level))
		o.add("burstiness", r.Burstiness)
		if s.MaxConcurrency > 0 {
			o.add("max_concurrency", s.MaxConcurrency)
		} else {
			o.add("max_concurrency", nil)
		}
	}
	o.add("duration", st.Duration)
	o.add("completed", st.Completed)
	o.add("failed", st.Failed)
	o.add("total_input_tokens", st.TotalInputTokens)
	o.add("total_output_tokens", st.TotalOutputTokens)
	o.add("request_throughput", st.RequestThroughput)
	if len(r.SLO) > 0 {
		o.add("request_goodput", st.RequestGoodput)
	} else {
		o.add("request_goodput", nil)
	}
	o.add("output_throughput", st.OutputThroughput)
	o.add("total_token_throughput", st.TotalTokenThroughput)
	o.add("latencies", nonNilFloats(st.Latencies))
	o.add("queue_times", nonNilFloats(st.QueueTimes))
	o.add("max_output_tokens_per_s", st.MaxOutputTokensPerS)
	o.add("max_concurrent_requests", st.MaxConcurrentRequests)
	o.add("rtfx", 0.0)
	metric := func(name string, l Latency) {
		o.add("mean_"+name+"_ms", l.Mean)
		o.add("median_"+name+"_ms", l.Median)
		o.add("std_"+name+"_ms", l.Std)
		o.add("p50_"+name+"_ms", l.P50)
		o.add("p90_"+name+"_ms", l.P90)
		o.add("p99_"+name+"_ms", l.P99)
		for _, q := range l.Percentiles {
			o.add("p"+stats.PercentileKey(q.P)+"_"+name+"_ms", q.Value)
		}
	}
	metric("ttft", st.TTFT)
	metric("tpot", st.TPOT)
	metric("itl", st.ITL)
	metric("e2el", st.E2EL)
	if s.MaxConcurrency > 0 {
		metric("client_queue_time", st.QueueTime)
		metric("e2el_including_client_queue", st.E2ELFromScheduled)
	}

	// llmprobe extras.
	o.add("step", s.Index)
	o.add("round", s.Round)
	o.add("attempt", max(s.Attempt, 1))
	o.add("mode", s.Mode)
	o.add("start", s.Start.UTC())
	o.add("end", s.End.UTC())
	o.add("interrupted", s.Interrupted)
	o.add("requested_request_rate", jsonRate(st.RequestedRate))
	o.add("scheduled_request_rate", st.ScheduledRate)
	o.add("achieved_request_rate", st.AchievedRate)
	o.add("offered_request_rate", st.OfferedRate)
	o.add("arrival_window_s", st.ArrivalWindow)
	o.add("drain_corrected_duration_s", st.DrainCorrectedDuration)
	o.add("goodput_ratio", st.GoodputRatio)
	o.add("keep_up_pct", st.KeepUpPct())
	o.add("knee_goodput", st.KneeGoodput)
	o.add("knee_throughput", st.KneeThroughput)
	o.add("good_completed", st.Good)
	o.add("good_output_tokens", st.GoodOutputTokens)
	o.add("good_output_throughput", st.GoodOutputThroughput)
	if r.CostPerHour > 0 {
		c, ok := r.StepCost(s)
		o.add("cost_per_million_good_output_tokens", costJSON(c, ok))
	}
	o.add("error_rate", st.ErrorRate)
	o.add("failed_by_class", st.FailedByClass)
	o.add("finish_reasons", st.FinishReasons)
	o.add("token_distributions", map[string]TokenDist{
		"input":            st.InputTokens,
		"requested_output": st.RequestedOutputTokens,
		"output":           st.OutputTokens,
	})
	o.add("ttft_text_ms", st.TTFTText)
	o.add("send_lag_ms", st.SendLag)
	o.add("client_queue_time_ms", st.QueueTime)
	o.add("e2el_from_scheduled_ms", st.E2ELFromScheduled)
	// The same two figures as flat keys in vLLM's naming, for tools that
	// read mean_/median_/p99_<metric>_ms.
	for _, m := range []struct {
		name string
		l    Latency
	}{{"ttft_text", st.TTFTText}, {"e2el_from_scheduled", st.E2ELFromScheduled}} {
		o.add("mean_"+m.name+"_ms", m.l.Mean)
		o.add("median_"+m.name+"_ms", m.l.Median)
		o.add("p99_"+m.name+"_ms", m.l.P99)
	}
	rel := object{}
	for _, m := range []struct {
		name string
		l    Latency
	}{{"ttft", st.TTFT}, {"tpot", st.TPOT}, {"itl", st.ITL}, {"e2el", st.E2EL}} {
		e := object{}
		e.add("n", m.l.N)
		e.add("reliable", m.l.P99Reliable)
		if m.l.P99CI != nil {
			e.add("ci95_ms", []any{finite(m.l.P99CI.Lo), finite(m.l.P99CI.Hi)})
		}
		rel.add(m.name, e)
	}
	o.add("p99_reliability", rel)
	o.add("slo_checks", st.SLOChecks)
	o.add("slo_held", st.SLOHeld)
	o.add("warmups", s.Warmups)
	o.add("warmup_failed", s.WarmupFailed)
	if s.PrefixGeneration != 0 {
		o.add("prefix_generation", s.PrefixGeneration)
	}
	o.add("distinct_prompts", s.DistinctPrompts)
	o.add("server", s.Server)
	o.add("validity", s.Validity)
	o.add("in_knee", s.Validity.Valid && s.Mode != ModeBurst)
	if s.Search != nil {
		o.add("search", s.Search)
	}
	if s.MultiTurn != nil {
		o.add("multi_turn", s.MultiTurn)
	}
	if s.Trace != nil {
		o.add("trace", s.Trace)
	}
	return o
}

// MarshalJSON renders result.json.
func (r *Result) MarshalJSON() ([]byte, error) { return json.Marshal(r.top()) }

// top builds result.json's top-level object.
func (r *Result) top() object {
	o := object{}
	o.add("llmprobe_result_schema", ResultSchemaVersion)
	o.add("complete", r.Complete)
	o.add("date", r.Date)
	o.add("backend", r.Backend)
	o.add("model_id", r.ModelID)
	o.add("tokenizer_id", r.TokenizerID)
	for _, k := range r.MetadataOrder {
		o.add(k, r.Metadata[k])
	}
	o.add("mode", r.Mode)
	o.add("rates", r.Rates)
	o.add("arrival", r.Arrival)
	o.add("burstiness", r.Burstiness)
	o.add("goodput_ms", r.SLO)
	o.add("percentiles", r.Percentiles)
	if r.Dataset != nil {
		o.add("dataset", r.Dataset)
	}
	if r.CostPerHour > 0 {
		o.add("cost_per_hour_usd", r.CostPerHour)
	}
	k := object{}
	k.add("found", r.Knee.Found)
	k.add("unit", r.KneeUnit)
	if r.Knee.Found {
		k.add("level", r.Knee.Level)
	}
	if r.Knee.Low != 0 {
		k.add("bracket_low", r.Knee.Low)
	}
	if r.Knee.Upper != 0 {
		k.add("bracket_high", jsonRate(r.Knee.Upper))
		k.add("upper", jsonRate(r.Knee.Upper))
	}
	k.add("max_goodput", r.Knee.MaxGoodput)
	k.add("max_goodput_level", jsonRate(r.Knee.MaxGoodputLevel))
	k.add("non_monotonic", r.Knee.NonMonotonic)
	k.add("reason", r.Knee.Reason)
	if r.SearchEnd != "" {
		k.add("search_end", r.SearchEnd)
	}
	if r.Knee.Stop != "" {
		k.add("search_stop", r.Knee.Stop)
	}
	if r.ReferenceCapacity > 0 {
		k.add("reference_capacity", r.ReferenceCapacity)
	}
	if r.Knee.Interval != nil {
		k.add("interval", r.Knee.Interval)
	}
	if r.CostPerHour > 0 && r.Knee.Found {
		c, ok := r.KneeCost()
		k.add("cost_per_million_good_output_tokens", costJSON(c, ok))
	}
	o.add("knee", k)
	if r.Probe != nil {
		o.add("throughput_probe", r.Probe)
	}
	o.add("notes", nonNil(r.Notes))
	levels := make([]any, 0, len(r.Levels))
	for _, l := range r.Levels {
		lo := object{}
		lo.add("label", l.Label)
		lo.add("level", jsonRate(l.Level))
		lo.add("rounds", l.Rounds)
		lo.add("valid_rounds", l.ValidRounds)
		lo.add("passes", l.Passes)
		lo.add("request_goodput", l.Goodput)
		lo.add("request_throughput", l.Throughput)
		lo.add("p99_ttft_ms", l.TTFTP99MS)
		lo.add("p99_tpot_ms", l.TPOTP99MS)
		lo.add("knee_goodput", l.KneeGoodput)
		lo.add("goodput_ratio", l.GoodputRatio)
		levels = append(levels, lo)
	}
	o.add("levels", levels)
	steps := make([]any, 0, len(r.Steps))
	for _, s := range r.Steps {
		steps = append(steps, r.StepJSON(s))
	}
	o.add("steps", steps)
	return o
}

func nonNilFloats(s []float64) []float64 {
	if s == nil {
		return []float64{}
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
