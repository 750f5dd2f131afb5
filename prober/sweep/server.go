package sweep

import (
	"encoding/json"
	"math"

	"github.com/llmprobe/llmprobe/collector/scrape"
	"github.com/llmprobe/llmprobe/internal/fingerprint"
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
// it). Every figure the server does not expose is "not-recorded".
type ServerStats struct {
	// Status is "recorded" when both snapshots were read, else
	// "not-recorded" with Reason.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// PromptTokens, GenerationTokens and Preemptions are counter deltas
	// (vllm:prompt_tokens_total, vllm:generation_tokens_total,
	// vllm:num_preemptions_total).
	PromptTokens     Figure `json:"prompt_tokens"`
	GenerationTokens Figure `json:"generation_tokens"`
	Preemptions      Figure `json:"preemptions"`
	// FinishedReasons holds the vllm:request_success_total deltas by
	// finished_reason.
	FinishedReasons map[string]float64 `json:"finished_reasons,omitempty"`
	// PrefixCacheQueries and PrefixCacheHits are token counter deltas over
	// the measured part; PrefixCacheHitRate is hits/queries (warm).
	PrefixCacheQueries Figure `json:"prefix_cache_queries"`
	PrefixCacheHits    Figure `json:"prefix_cache_hits"`
	PrefixCacheHitRate Figure `json:"prefix_cache_hit_rate"`
	// WarmupPrefixCacheHitRate is hits/queries over the warmup requests
	// (cold), from a snapshot taken before them.
	WarmupPrefixCacheHitRate Figure `json:"warmup_prefix_cache_hit_rate"`
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
}

// vLLM metric names read for server-side deltas (vllm-reference.md §2).
const (
	metricPromptTokens       = "vllm:prompt_tokens"
	metricGenerationTokens   = "vllm:generation_tokens"
	metricPreemptions        = "vllm:num_preemptions"
	metricRequestSuccess     = "vllm:request_success"
	metricPrefixQueries      = "vllm:prefix_cache_queries"
	metricPrefixHits         = "vllm:prefix_cache_hits"
	metricPrefixQueriesOld   = "vllm:gpu_prefix_cache_queries"
	metricPrefixHitsOld      = "vllm:gpu_prefix_cache_hits"
	metricTTFTSeconds        = "vllm:time_to_first_token_seconds"
	metricITLSeconds         = "vllm:inter_token_latency_seconds"
	metricITLSecondsOld      = "vllm:time_per_output_token_seconds"
	metricTPOTSeconds        = "vllm:request_time_per_output_token_seconds"
	metricE2ESeconds         = "vllm:e2e_request_latency_seconds"
	metricQueueTimeSeconds   = "vllm:request_queue_time_seconds"
	statusRecorded           = "recorded"
	reasonNoMetricsSnapshots = "the server's /metrics could not be read before and after the step"
)

// computeServerStats derives a step's server-side figures. preWarmup is the
// snapshot before the warmups (nil when none), before and after bracket the
// measured part, maxima are a Recorder's running maxima (nil when none), and
// client is the client-side TTFT summary for the client - server
// difference.
func computeServerStats(preWarmup, before, after *scrape.Snapshot, maxima map[string]float64, client Latency) ServerStats {
	s := ServerStats{Status: fingerprint.NotRecorded}
	if before == nil || after == nil {
		s.Reason = reasonNoMetricsSnapshots
		return s
	}
	s.Status = statusRecorded
	delta := func(name string) Figure { return knownFigure(scrape.CounterDelta(before, after, name, nil)) }
	s.PromptTokens = delta(metricPromptTokens)
	s.GenerationTokens = delta(metricGenerationTokens)
	s.Preemptions = delta(metricPreemptions)
	if after.Has(metricRequestSuccess) {
		s.FinishedReasons = map[string]float64{}
		for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
			if v, ok := scrape.CounterDelta(before, after, metricRequestSuccess, map[string]string{"finished_reason": r}); ok && v > 0 {
				s.FinishedReasons[r] = v
			}
		}
	}
	s.PrefixCacheQueries, s.PrefixCacheHits, s.PrefixCacheHitRate = prefixCache(before, after)
	if preWarmup != nil {
		_, _, s.WarmupPrefixCacheHitRate = prefixCache(preWarmup, before)
	}

	maxOf := func(name string, read func(*scrape.Snapshot) (float64, bool)) Figure {
		var f Figure
		upd := func(v float64, ok bool) {
			if ok && (!f.Known || v > f.Value) {
				f = Figure{Value: v, Known: true}
			}
		}
		upd(read(before))
		upd(read(after))
		v, ok := maxima[name]
		upd(v, ok)
		return f
	}
	s.MaxRunning = maxOf(scrape.MetricNumRequestsRunning, func(x *scrape.Snapshot) (float64, bool) { return x.Sum(scrape.MetricNumRequestsRunning, nil) })
	s.MaxWaiting = maxOf(scrape.MetricNumRequestsWaiting, func(x *scrape.Snapshot) (float64, bool) { return x.Sum(scrape.MetricNumRequestsWaiting, nil) })
	s.MaxKVCacheUsage = maxOf(scrape.MetricKVCacheUsage, func(x *scrape.Snapshot) (float64, bool) { return x.Max(scrape.MetricKVCacheUsage, nil) })

	hist := func(names ...string) ServerLatency {
		for _, n := range names {
			if h, ok := scrape.HistogramDelta(before, after, n, nil); ok {
				return serverLatency(h)
			}
		}
		return ServerLatency{}
	}
	s.TTFT = hist(metricTTFTSeconds)
	s.ITL = hist(metricITLSeconds, metricITLSecondsOld)
	s.TPOT = hist(metricTPOTSeconds)
	s.E2EL = hist(metricE2ESeconds)
	s.QueueTime = hist(metricQueueTimeSeconds)
	if client.N > 0 && s.TTFT.MeanMS.Known {
		s.ClientMinusServerTTFTMeanMS = Figure{Value: client.Mean - s.TTFT.MeanMS.Value, Known: true}
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

// prefixCache returns the prefix-cache query and hit deltas (tokens) and
// their ratio between two snapshots, falling back to the names deprecated in
// vLLM 0.9.2.
func prefixCache(before, after *scrape.Snapshot) (queries, hits, rate Figure) {
	for _, names := range [][2]string{{metricPrefixQueries, metricPrefixHits}, {metricPrefixQueriesOld, metricPrefixHitsOld}} {
		q, okq := scrape.CounterDelta(before, after, names[0], nil)
		h, okh := scrape.CounterDelta(before, after, names[1], nil)
		if !okq || !okh {
			continue
		}
		queries, hits = Figure{Value: q, Known: true}, Figure{Value: h, Known: true}
		if q > 0 {
			rate = Figure{Value: h / q, Known: true}
		}
		return queries, hits, rate
	}
	return Figure{}, Figure{}, Figure{}
}
