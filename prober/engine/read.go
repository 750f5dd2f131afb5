package engine

import (
	"maps"

	"github.com/llmprobe/llmprobe/prober/scrape"
)

// Quantity is a scalar figure an engine may expose on /metrics.
type Quantity string

// The quantities. Running, Waiting and KVCacheUsage are gauges (read with
// Read); the others are cumulative (read with Delta between two snapshots).
const (
	// Running is the number of requests in the running batch (summed over
	// engines/ranks).
	Running Quantity = "running"
	// Waiting is the number of requests queued in the server (summed).
	Waiting Quantity = "waiting"
	// KVCacheUsage is the KV-cache usage of the fullest engine, 0..1.
	KVCacheUsage Quantity = "kv_cache_usage"
	// PromptTokens counts prompt tokens processed, as the engine counts
	// them (llama.cpp: only the tokens evaluated, not the cached ones).
	PromptTokens Quantity = "prompt_tokens"
	// GenerationTokens counts generated tokens.
	GenerationTokens Quantity = "generation_tokens"
	// PrefillSeconds and DecodeSeconds are the time the engine reports
	// spending in prefill and in decode, summed over requests.
	PrefillSeconds Quantity = "prefill_seconds"
	DecodeSeconds  Quantity = "decode_seconds"
	// PrefixCacheQueries and PrefixCacheHits count prompt tokens looked up
	// in, and found in, the prefix cache.
	PrefixCacheQueries Quantity = "prefix_cache_queries"
	PrefixCacheHits    Quantity = "prefix_cache_hits"
	// MultimodalCacheQueries and MultimodalCacheHits count the multimodal
	// items (images) looked up in, and found in, the engine's multimodal
	// cache (vLLM's processor cache).
	MultimodalCacheQueries Quantity = "mm_cache_queries"
	MultimodalCacheHits    Quantity = "mm_cache_hits"
	// SpecDraftTokens and SpecAcceptedTokens count the tokens a
	// speculative decoder's drafter proposed and those the target model
	// accepted (vLLM: vllm:spec_decode_num_draft_tokens_total and
	// _accepted_tokens_total, only with a speculative config; llama.cpp:
	// llamacpp:spec_decode_num_draft_tokens_total and
	// _accepted_tokens_total, in releases after the late-2025 server split).
	SpecDraftTokens    Quantity = "spec_draft_tokens"
	SpecAcceptedTokens Quantity = "spec_accepted_tokens"
	// Preemptions counts preempted requests.
	Preemptions Quantity = "preemptions"
	// FinishedRequests counts requests the engine finished.
	FinishedRequests Quantity = "finished_requests"
)

// Quantities lists every Quantity in a stable order.
var Quantities = []Quantity{Running, Waiting, KVCacheUsage, PromptTokens, GenerationTokens,
	PrefillSeconds, DecodeSeconds, PrefixCacheQueries, PrefixCacheHits, MultimodalCacheQueries, MultimodalCacheHits,
	SpecDraftTokens, SpecAcceptedTokens, Preemptions, FinishedRequests}

// Latency is a server-side latency histogram (seconds).
type Latency string

// The server-side latencies.
const (
	TTFT      Latency = "ttft"
	ITL       Latency = "itl"
	TPOT      Latency = "tpot"
	E2E       Latency = "e2e"
	QueueTime Latency = "queue_time"
)

// Latencies lists every Latency in a stable order.
var Latencies = []Latency{TTFT, ITL, TPOT, E2E, QueueTime}

// Value is a figure that is known or not; Value is 0 when not Known.
type Value struct {
	Value float64
	Known bool
}

// kind says how a source is read.
type kind int

const (
	gaugeSum kind = iota // sum over series
	gaugeMax             // the largest series
	counter              // counter (with or without _total), or <histogram>_sum / _count
)

// source is one metric that may hold a quantity.
type source struct {
	name  string
	kind  kind
	match map[string]string
	// plus, when set, is a second counter added to name's value; the
	// source is present only when both are (llama.cpp's prompt tokens
	// looked up in its cache: the evaluated ones plus the cached ones).
	plus string
}

// find returns the first source of q present in s.
func (e *Engine) find(s *scrape.Snapshot, q Quantity) (source, bool) {
	for _, src := range e.quantities[q] {
		if s.Has(src.name) && (src.plus == "" || s.Has(src.plus)) {
			return src, true
		}
	}
	return source{}, false
}

// Read returns the value of q in s: for gauges the sum over series (the
// fullest engine for KVCacheUsage), for counters the current cumulative
// value. It is unknown when the engine does not expose q or s lacks it.
func (e *Engine) Read(s *scrape.Snapshot, q Quantity) Value {
	if s == nil {
		return Value{}
	}
	src, ok := e.find(s, q)
	if !ok {
		return Value{}
	}
	var v float64
	if src.kind == gaugeMax {
		v, ok = s.Max(src.name, src.match)
	} else {
		v, ok = s.Sum(src.name, src.match)
	}
	if ok && src.plus != "" {
		w, okPlus := s.Sum(src.plus, src.match)
		v, ok = v+w, okPlus
	}
	return Value{Value: v, Known: ok}
}

// Delta returns how much the cumulative quantity q grew between two
// snapshots (counter resets handled as scrape.CounterDelta does). It is
// unknown for gauges, when the engine does not expose q, or when either
// snapshot lacks it.
func (e *Engine) Delta(before, after *scrape.Snapshot, q Quantity) Value {
	if before == nil || after == nil {
		return Value{}
	}
	src, ok := e.find(after, q)
	if !ok || src.kind != counter {
		return Value{}
	}
	v, ok := scrape.CounterDelta(before, after, src.name, src.match)
	if ok && src.plus != "" {
		w, okPlus := scrape.CounterDelta(before, after, src.plus, src.match)
		v, ok = v+w, okPlus
	}
	return Value{Value: v, Known: ok}
}

// Source returns the metric names that may hold q for this engine, in the
// order they are tried (nil when the engine does not expose q).
func (e *Engine) Source(q Quantity) []string {
	var out []string
	for _, src := range e.quantities[q] {
		name := src.name
		if src.plus != "" {
			name += " + " + src.plus
		}
		out = append(out, name)
	}
	return out
}

// Idle reports whether the server has no request running or waiting. known
// is false when the engine does not expose both (or s lacks them); idle is
// then false.
func (e *Engine) Idle(s *scrape.Snapshot) (idle, known bool) {
	r, w := e.Read(s, Running), e.Read(s, Waiting)
	if !r.Known || !w.Known {
		return false, false
	}
	return r.Value+w.Value == 0, true
}

// Gauges returns the known gauges of s keyed by Quantity (Running, Waiting,
// KVCacheUsage), e.g. for the running maxima of a scrape.Recorder.
func (e *Engine) Gauges(s *scrape.Snapshot) map[Quantity]float64 {
	out := map[Quantity]float64{}
	for _, q := range []Quantity{Running, Waiting, KVCacheUsage} {
		if v := e.Read(s, q); v.Known {
			out[q] = v.Value
		}
	}
	return out
}

// RecorderGauges returns Gauges keyed by the Quantity names, the shape a
// scrape.Recorder's WithGauges option takes: with it, Recorder.Max()
// holds the maxima of "running", "waiting" and "kv_cache_usage" for any
// engine.
func (e *Engine) RecorderGauges(s *scrape.Snapshot) map[string]float64 {
	out := map[string]float64{}
	for q, v := range e.Gauges(s) {
		out[string(q)] = v
	}
	return out
}

// latencyName returns the first histogram of l present in s.
func (e *Engine) latencyName(s *scrape.Snapshot, l Latency) (string, bool) {
	for _, n := range e.latencies[l] {
		if _, ok := s.Histogram(n, nil); ok {
			return n, true
		}
	}
	return "", false
}

// Histogram returns the cumulative server-side histogram of l in s (summed
// over series); ok is false when the engine has none or s lacks it.
func (e *Engine) Histogram(s *scrape.Snapshot, l Latency) (*scrape.Histogram, bool) {
	if s == nil {
		return nil, false
	}
	n, ok := e.latencyName(s, l)
	if !ok {
		return nil, false
	}
	return s.Histogram(n, nil)
}

// HistogramDelta returns the observations of l between two snapshots (see
// scrape.HistogramDelta); ok is false when the engine has no such histogram
// or either snapshot lacks it.
func (e *Engine) HistogramDelta(before, after *scrape.Snapshot, l Latency) (*scrape.Histogram, bool) {
	if before == nil || after == nil {
		return nil, false
	}
	n, ok := e.latencyName(after, l)
	if !ok {
		return nil, false
	}
	return scrape.HistogramDelta(before, after, n, nil)
}

// LatencySource returns the histogram names that may hold l, in the order
// they are tried (nil when the engine has none).
func (e *Engine) LatencySource(l Latency) []string { return e.latencies[l] }

// ConfigLabels returns the engine configuration a /metrics snapshot carries
// (vLLM: the labels of vllm:cache_config_info); nil when none.
func (e *Engine) ConfigLabels(s *scrape.Snapshot) map[string]string {
	if e.name != VLLM || s == nil {
		return nil
	}
	l, ok := scrape.InfoLabels(s, scrape.MetricCacheConfigInfo)
	if !ok {
		return nil
	}
	return maps.Clone(l)
}
