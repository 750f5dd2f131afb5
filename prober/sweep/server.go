package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// Figure is a number that may be unknown: it encodes as a JSON number when
// Known and as the string "not-recorded" otherwise (never a guess).
type Figure struct {
	Value float64
	Known bool
}

// knownFigure returns a known Figure of v when ok; NaN and infinities are
// not known.
func knownFigure(v float64, ok bool) Figure {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return Figure{}
	}
	return Figure{Value: v, Known: true}
}

// MarshalJSON implements json.Marshaler.
func (f Figure) MarshalJSON() ([]byte, error) {
	if !f.Known {
		return json.Marshal(fingerprint.NotRecorded)
	}
	return json.Marshal(f.Value)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *Figure) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*f = Figure{}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Figure{Value: v, Known: true}
	return nil
}

// ServerLatency is a server-side latency histogram over one step (the delta
// of the after and before snapshots), in milliseconds, with quantiles
// estimated as Prometheus' histogram_quantile does.
//
// FirstBucketLEMS is the upper bound of the histogram's first bucket and
// FirstBucketCount the observations in it: a quantile whose rank falls there
// (FirstBucketCount >= q*Count) is only known to be at most that bound;
// histogram_quantile's interpolation from 0 inside the bucket is not data
// (a queue time whose mean is 0.02 ms reads p50 150 ms with a 300 ms first
// bucket). analysis.md shows such quantiles as "≤ bound".
type ServerLatency struct {
	Count            Figure `json:"count"`
	MeanMS           Figure `json:"mean_ms"`
	P50MS            Figure `json:"p50_ms"`
	P90MS            Figure `json:"p90_ms"`
	P99MS            Figure `json:"p99_ms"`
	FirstBucketLEMS  Figure `json:"first_bucket_le_ms"`
	FirstBucketCount Figure `json:"first_bucket_count"`
}

// ServerStats are a step's server-side figures, read from the target's
// /metrics before and after the step (and the maxima of the scrapes during
// it) through the engine's adapter (prober/engine). Every figure the server
// does not expose is "not-recorded".
type ServerStats struct {
	// Status is "recorded" when both snapshots were read, else
	// "not-recorded" with Reason.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// PromptTokens, GenerationTokens and Preemptions are counter deltas
	// (vLLM: vllm:prompt_tokens_total, vllm:generation_tokens_total,
	// vllm:num_preemptions_total; docs/engines.md lists each engine's).
	PromptTokens     Figure `json:"prompt_tokens"`
	GenerationTokens Figure `json:"generation_tokens"`
	Preemptions      Figure `json:"preemptions"`
	// FinishedReasons holds the deltas of the engine's finished-requests
	// counter by finished_reason (vLLM's vllm:request_success_total; the
	// other engines' counters have no such label).
	FinishedReasons map[string]float64 `json:"finished_reasons,omitempty"`
	// PrefixCacheQueries and PrefixCacheHits are token counter deltas over
	// the measured part; PrefixCacheHitRate is hits/queries (warm).
	PrefixCacheQueries Figure `json:"prefix_cache_queries"`
	PrefixCacheHits    Figure `json:"prefix_cache_hits"`
	PrefixCacheHitRate Figure `json:"prefix_cache_hit_rate"`
	// WarmupPrefixCacheHitRate is hits/queries over the warmup requests
	// (cold), from a snapshot taken before them.
	WarmupPrefixCacheHitRate Figure `json:"warmup_prefix_cache_hit_rate"`
	// MultimodalCache holds the multimodal cache's figures over the
	// measured part; nil when the server does not expose them (vLLM
	// before #26285, other engines).
	MultimodalCache *MultimodalCacheStats `json:"multimodal_cache,omitempty"`
	// SpecDecode holds the server's speculative decoding counters over the
	// measured part; nil when the server does not expose them or drafted
	// no token in the step (no draft model).
	SpecDecode *ServerSpecDecodeStats `json:"speculative_decoding,omitempty"`
	// MaxRunning, MaxWaiting (summed over engines) and MaxKVCacheUsage (the
	// fullest engine, 0..1) are maxima over the before, during and after
	// scrapes.
	MaxRunning      Figure `json:"max_running"`
	MaxWaiting      Figure `json:"max_waiting"`
	MaxKVCacheUsage Figure `json:"max_kv_cache_usage"`
	// Server-side latencies from histogram deltas.
	TTFT      ServerLatency `json:"ttft"`
	ITL       ServerLatency `json:"itl"`
	TPOT      ServerLatency `json:"tpot"`
	E2EL      ServerLatency `json:"e2el"`
	QueueTime ServerLatency `json:"queue_time"`
	// ClientMinusServerTTFTMeanMS is the client's mean TTFT minus the
	// server's (exact: the histogram's sum / count): the network and
	// front-end share. There is no median difference: the server's median
	// is interpolated within a bucket, so the difference would be noise.
	ClientMinusServerTTFTMeanMS Figure `json:"client_minus_server_ttft_mean_ms"`
	// NotRecorded says, keyed by the figure's key above, why a figure of a
	// recorded step is not-recorded: the engine has no such metric
	// ("llama.cpp has no server TTFT histogram") or the server's /metrics
	// lacked it. Figures not-recorded for want of data (no warmups, no
	// prefix-cache queries) are not listed. Absent when every figure the
	// step could have was recorded.
	NotRecorded map[string]string `json:"not_recorded,omitempty"`
}

const (
	statusRecorded           = "recorded"
	reasonNoMetricsSnapshots = "the server's /metrics could not be read before and after the step"
)

// finishedReasons are the finished_reason label values whose deltas are
// kept (vLLM's FinishReason values).
var finishedReasons = []string{"stop", "length", "abort", "error", "repetition"}

// computeServerStats derives a step's server-side figures through eng, the
// engine's adapter. preWarmup is the snapshot before the warmups (nil when
// none), before and after bracket the measured part, maxima are a
// Recorder's running maxima keyed as engine.Engine.RecorderGauges keys them
// (nil when none), and client is the client-side TTFT summary for the
// client - server difference.
func computeServerStats(eng *engine.Engine, preWarmup, before, after *scrape.Snapshot, maxima map[string]float64, client Latency) ServerStats {
	s := ServerStats{Status: fingerprint.NotRecorded}
	if before == nil || after == nil {
		s.Reason = reasonNoMetricsSnapshots
		return s
	}
	s.Status = statusRecorded
	why := map[string]string{}
	missing := func(key, what string, names []string) {
		if len(names) == 0 {
			why[key] = fmt.Sprintf("%s has no %s", eng, what)
		} else {
			why[key] = strings.Join(names, " or ") + " not on /metrics"
		}
	}
	delta := func(key string, q engine.Quantity, what string) Figure {
		v := eng.Delta(before, after, q)
		if !v.Known {
			missing(key, what, eng.Source(q))
		}
		return knownFigure(v.Value, v.Known)
	}
	s.PromptTokens = delta("prompt_tokens", engine.PromptTokens, "prompt-token counter")
	s.GenerationTokens = delta("generation_tokens", engine.GenerationTokens, "generation-token counter")
	s.Preemptions = delta("preemptions", engine.Preemptions, "preemption counter")
	if src := eng.Source(engine.FinishedRequests); len(src) > 0 && after.Has(src[0]) {
		s.FinishedReasons = map[string]float64{}
		for _, r := range finishedReasons {
			// vLLM's Python frontend labels the reason finished_reason,
			// its Rust frontend finish_reason (testdata/engines/vllm/
			// 0.24-rust-frontend/README.md).
			for _, label := range []string{"finished_reason", "finish_reason"} {
				if v, ok := scrape.CounterDelta(before, after, src[0], map[string]string{label: r}); ok && v > 0 {
					s.FinishedReasons[r] += v
				}
			}
		}
	}
	s.PrefixCacheQueries, s.PrefixCacheHits, s.PrefixCacheHitRate = prefixCache(eng, before, after)
	if !s.PrefixCacheQueries.Known || !s.PrefixCacheHits.Known {
		names := append(eng.Source(engine.PrefixCacheQueries), eng.Source(engine.PrefixCacheHits)...)
		for _, k := range []string{"prefix_cache_queries", "prefix_cache_hits", "prefix_cache_hit_rate", "warmup_prefix_cache_hit_rate"} {
			missing(k, "prefix-cache counters", names)
		}
	}
	if preWarmup != nil {
		_, _, s.WarmupPrefixCacheHitRate = prefixCache(eng, preWarmup, before)
	}
	s.MultimodalCache = multimodalCache(eng, before, after)
	s.SpecDecode = serverSpecDecode(eng, before, after)

	maxOf := func(key string, q engine.Quantity, what string) Figure {
		var f Figure
		upd := func(v engine.Value) {
			if v.Known && (!f.Known || v.Value > f.Value) {
				f = Figure{Value: v.Value, Known: true}
			}
		}
		upd(eng.Read(before, q))
		upd(eng.Read(after, q))
		v, ok := maxima[string(q)]
		upd(engine.Value{Value: v, Known: ok})
		if !f.Known {
			missing(key, what, eng.Source(q))
		}
		return f
	}
	s.MaxRunning = maxOf("max_running", engine.Running, "running-requests gauge")
	s.MaxWaiting = maxOf("max_waiting", engine.Waiting, "waiting-requests gauge")
	s.MaxKVCacheUsage = maxOf("max_kv_cache_usage", engine.KVCacheUsage, "KV-cache usage gauge")

	hist := func(key string, l engine.Latency, what string) ServerLatency {
		if h, ok := eng.HistogramDelta(before, after, l); ok {
			return serverLatency(h)
		}
		missing(key, "server "+what+" histogram", eng.LatencySource(l))
		return ServerLatency{}
	}
	s.TTFT = hist("ttft", engine.TTFT, "TTFT")
	s.ITL = hist("itl", engine.ITL, "ITL")
	s.TPOT = hist("tpot", engine.TPOT, "TPOT")
	s.E2EL = hist("e2el", engine.E2E, "E2E latency")
	s.QueueTime = hist("queue_time", engine.QueueTime, "queue-time")
	if client.N > 0 && s.TTFT.MeanMS.Known {
		s.ClientMinusServerTTFTMeanMS = Figure{Value: client.Mean - s.TTFT.MeanMS.Value, Known: true}
	} else if r, ok := why["ttft"]; ok {
		why["client_minus_server_ttft_mean_ms"] = r
	}
	if len(why) > 0 {
		s.NotRecorded = why
	}
	return s
}

func serverLatency(h *scrape.Histogram) ServerLatency {
	l := ServerLatency{Count: Figure{Value: h.Count(), Known: true}}
	if h.Count() <= 0 {
		return l
	}
	if len(h.Buckets) > 0 && !math.IsInf(h.Buckets[0].UpperBound, 1) {
		l.FirstBucketLEMS = knownFigure(1000*h.Buckets[0].UpperBound, true)
		l.FirstBucketCount = knownFigure(h.Buckets[0].Count, true)
	}
	l.MeanMS = knownFigure(1000*h.Mean(), true)
	l.P50MS = knownFigure(1000*h.Quantile(0.5), true)
	l.P90MS = knownFigure(1000*h.Quantile(0.9), true)
	l.P99MS = knownFigure(1000*h.Quantile(0.99), true)
	return l
}

// prefixCache returns the engine's prefix-cache query and hit deltas
// (tokens) and their ratio between two snapshots (vLLM: falling back to
// the names deprecated in 0.9.2).
func prefixCache(eng *engine.Engine, before, after *scrape.Snapshot) (queries, hits, rate Figure) {
	q, h := eng.Delta(before, after, engine.PrefixCacheQueries), eng.Delta(before, after, engine.PrefixCacheHits)
	if !q.Known || !h.Known {
		return Figure{}, Figure{}, Figure{}
	}
	queries, hits = Figure{Value: q.Value, Known: true}, Figure{Value: h.Value, Known: true}
	if q.Value > 0 {
		rate = Figure{Value: h.Value / q.Value, Known: true}
	}
	return queries, hits, rate
}

// MultimodalCacheStats are a step's multimodal cache figures: the deltas
// of the items (images) looked up (vLLM: vllm:mm_cache_queries_total) and
// found (vllm:mm_cache_hits_total), and HitRate, hits/queries
// (not-recorded when no item was looked up).
type MultimodalCacheStats struct {
	Queries float64 `json:"queries"`
	Hits    float64 `json:"hits"`
	HitRate Figure  `json:"hit_rate"`
}

// multimodalCache returns the multimodal cache's figures between two
// snapshots, nil when the server lacks its counters.
func multimodalCache(eng *engine.Engine, before, after *scrape.Snapshot) *MultimodalCacheStats {
	q, h := eng.Delta(before, after, engine.MultimodalCacheQueries), eng.Delta(before, after, engine.MultimodalCacheHits)
	if !q.Known || !h.Known {
		return nil
	}
	m := &MultimodalCacheStats{Queries: q.Value, Hits: h.Value}
	if q.Value > 0 {
		m.HitRate = Figure{Value: h.Value / q.Value, Known: true}
	}
	return m
}

// ServerSpecDecodeStats are a step's speculative decoding figures from the
// server's counters (the deltas over the measured part, all traffic the
// server served): the draft tokens proposed (vLLM:
// vllm:spec_decode_num_draft_tokens_total, llama.cpp:
// llamacpp:spec_decode_num_draft_tokens_total), those the target model
// accepted (..._num_accepted_tokens_total) and AcceptanceRate,
// accepted / drafted: the server-side counterpart of the per-request
// figures llama.cpp's timings carry (Stats.SpecDecode).
type ServerSpecDecodeStats struct {
	DraftTokens    float64 `json:"draft_tokens"`
	AcceptedTokens float64 `json:"accepted_tokens"`
	AcceptanceRate float64 `json:"acceptance_rate"`
}

// serverSpecDecode returns the server's speculative decoding figures
// between two snapshots, nil when the server lacks the counters or drafted
// nothing.
func serverSpecDecode(eng *engine.Engine, before, after *scrape.Snapshot) *ServerSpecDecodeStats {
	d, a := eng.Delta(before, after, engine.SpecDraftTokens), eng.Delta(before, after, engine.SpecAcceptedTokens)
	if !d.Known || !a.Known || d.Value <= 0 {
		return nil
	}
	return &ServerSpecDecodeStats{DraftTokens: d.Value, AcceptedTokens: a.Value, AcceptanceRate: a.Value / d.Value}
}

// engineNotes are result notes naming what the server's engine does not
// expose, so that its not-recorded server figures are explained (none for
// vLLM, which has them all, nor when /metrics was not read).
func (r *runner) engineNotes() []string {
	if !r.metricsOK || r.eng == nil || r.eng.Name() == engine.Unknown {
		return nil
	}
	var lacks []string
	for _, q := range []struct {
		q    engine.Quantity
		what string
	}{
		{engine.PromptTokens, "prompt-token counter"}, {engine.GenerationTokens, "generation-token counter"},
		{engine.Preemptions, "preemption counter"}, {engine.PrefixCacheHits, "prefix-cache counters"},
		{engine.KVCacheUsage, "KV-cache usage gauge"},
	} {
		if len(r.eng.Source(q.q)) == 0 {
			lacks = append(lacks, "no "+q.what)
		}
	}
	var hists []string
	for _, l := range []struct {
		l    engine.Latency
		what string
	}{{engine.TTFT, "TTFT"}, {engine.ITL, "ITL"}, {engine.TPOT, "TPOT"}, {engine.E2E, "E2E latency"}, {engine.QueueTime, "queue-time"}} {
		if len(r.eng.LatencySource(l.l)) == 0 {
			hists = append(hists, l.what)
		}
	}
	switch len(hists) {
	case 0:
	case 1:
		lacks = append(lacks, "no server "+hists[0]+" histogram")
	default:
		lacks = append(lacks, "no server "+strings.Join(hists[:len(hists)-1], ", ")+" or "+hists[len(hists)-1]+" histograms")
	}
	if len(lacks) == 0 {
		return nil
	}
	note := fmt.Sprintf("the server is %s, whose /metrics has %s: those server-side figures are not-recorded (docs/engines.md)", r.eng, joinAnd(lacks))
	if len(r.eng.LatencySource(engine.TTFT)) == 0 {
		note += ", and there is no client − server TTFT split"
	}
	return []string{note + "."}
}

// joinAnd joins words as "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
