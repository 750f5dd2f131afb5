package simulator

import "time"

// perRequestMetrics is vLLM's PerRequestTimingMetrics, the metrics object a
// request that sets include_metrics gets from a server started with
// --enable-per-request-metrics (vllm/entrypoints/generate/base/serving.py
// build_per_request_timing_metrics, docs/features/per_request_metrics.md):
// the fields of the final usage chunk of a stream, or of the body of a
// non-streamed answer. Nil fields are written as null.
type perRequestMetrics struct {
	TimeToFirstTokenMS *float64 `json:"time_to_first_token_ms"`
	GenerationTimeMS   *float64 `json:"generation_time_ms"`
	QueueTimeMS        *float64 `json:"queue_time_ms"`
	MeanITLMS          *float64 `json:"mean_itl_ms"`
	TokensPerSecond    *float64 `json:"tokens_per_second"`
}

// serverTiming is the metrics object of a finished sequence when g asked
// for it and the simulator serves it (nil otherwise), computed as vLLM
// does from the engine's timestamps: queue_time_ms = scheduled − queued,
// time_to_first_token_ms = first token − scheduled (the prefill, not the
// queue), generation_time_ms = last token − first token, mean_itl_ms over
// the tokens after the first, tokens_per_second = tokens / (last token −
// scheduled). tr notes the truth in nanoseconds. Call it only after
// seq.snapshot reported the sequence finished (the engine's timestamps
// are then published).
func (s *Simulator) serverTiming(g *genRequest, seq *sequence, tr *TraceRecord) *perRequestMetrics {
	if !g.includeMetrics || !s.cfg.EnablePerRequestMetrics || g.kind == kindResponses ||
		(s.cfg.Engine != EngineVLLM && s.cfg.Engine != "") || seq.scheduledAt.IsZero() || seq.firstAt.IsZero() {
		return nil
	}
	ms := func(d time.Duration) *float64 {
		v := float64(d) / float64(time.Millisecond)
		return &v
	}
	queue, ttft := seq.scheduledAt.Sub(seq.arrival), seq.firstAt.Sub(seq.scheduledAt)
	decode := seq.lastAt.Sub(seq.firstAt)
	m := &perRequestMetrics{QueueTimeMS: ms(queue), TimeToFirstTokenMS: ms(ttft), GenerationTimeMS: ms(decode)}
	n := seq.outputs
	if n > 1 {
		m.MeanITLMS = ms(decode / time.Duration(n-1))
	}
	if inf := seq.lastAt.Sub(seq.scheduledAt); inf > 0 {
		v := float64(n) / inf.Seconds()
		m.TokensPerSecond = &v
	}
	tr.ArrivalNS, tr.QueueNS, tr.ServerTTFTNS = seq.arrival.UnixNano(), int64(queue), int64(ttft)
	return m
}
