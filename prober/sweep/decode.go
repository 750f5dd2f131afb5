package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// DecodeResult reads a result.json written by Result.MarshalJSON back into
// a Result (see Result.UnmarshalJSON for what it cannot restore).
func DecodeResult(r io.Reader) (*Result, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	res := &Result{}
	if err := res.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return res, nil
}

// UnmarshalJSON reads result.json as MarshalJSON writes it: encoding the
// decoded Result again gives the same bytes. It fails on a document without
// llmprobe_result_schema or with a newer schema than ResultSchemaVersion.
//
// What result.json does not hold stays zero: the Go-only fields (Name,
// InterruptedReason, MaxConcurrency, Rounds, Fingerprint: the manifest
// holds them), the Min and Max of the TTFT, TPOT, ITL and E2EL summaries
// and the Conf and Iters of their p99 intervals, and the per-request send
// lags Judge uses and samples the knee's bootstrap draws. Derived figures are derived again: Level.Outcome from the
// level's steps, a step's Level from its request_rate (its concurrency in
// closed loop), RequestGoodput from good_completed / duration when
// result.json has none (no SLO set), and a p99 interval bound written as
// null (not finite) is NaN.
func (r *Result) UnmarshalJSON(b []byte) error {
	var top fields
	if err := json.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	var schema int
	if err := top.get("llmprobe_result_schema", &schema); err != nil {
		return err
	}
	switch {
	case schema == 0:
		return errors.New("decode result: no llmprobe_result_schema, not an llmprobe result.json")
	case schema > ResultSchemaVersion:
		return fmt.Errorf("decode result: llmprobe_result_schema %d is newer than this llmprobe reads (%d)", schema, ResultSchemaVersion)
	}
	var out Result
	var knee kneeJSON
	var levels []levelJSON
	var steps []json.RawMessage
	for _, f := range []struct {
		key string
		v   any
	}{
		{"complete", &out.Complete}, {"date", &out.Date}, {"backend", &out.Backend}, {"model_id", &out.ModelID},
		{"tokenizer_id", &out.TokenizerID}, {"mode", &out.Mode}, {"rates", &out.Rates}, {"arrival", &out.Arrival},
		{"burstiness", &out.Burstiness}, {"goodput_ms", &out.SLO}, {"percentiles", &out.Percentiles}, {"cost_per_hour_usd", &out.CostPerHour},
		{"knee", &knee}, {"throughput_probe", &out.Probe}, {"dataset", &out.Dataset}, {"notes", &out.Notes}, {"levels", &levels}, {"steps", &steps},
	} {
		if err := top.get(f.key, f.v); err != nil {
			return err
		}
	}
	// Every other top-level key is a --metadata pair.
	known := resultKeys()
	known["throughput_probe"] = true
	for k, raw := range top {
		if known[k] {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("decode result: metadata %s: %w", k, err)
		}
		if out.Metadata == nil {
			out.Metadata = map[string]string{}
		}
		out.Metadata[k] = v
		out.MetadataOrder = append(out.MetadataOrder, k)
	}
	slices.Sort(out.MetadataOrder)

	out.Knee = Knee{Found: knee.Found, Level: knee.Level, Low: knee.Low, Upper: float64(knee.Upper), MaxGoodput: knee.MaxGoodput,
		MaxGoodputLevel: float64(knee.MaxGoodputLevel), NonMonotonic: knee.NonMonotonic, Reason: knee.Reason, Stop: knee.Stop, Interval: knee.Interval}
	if schema < 2 {
		// Schema 1 wrote knee.level (the highest passing level) found or
		// not, and no bracket.
		out.Knee.Low = knee.Level
		if !knee.Found {
			out.Knee.Level = 0
		}
	}
	out.KneeUnit, out.SearchEnd, out.ReferenceCapacity = knee.Unit, knee.SearchEnd, knee.ReferenceCapacity

	for i, raw := range steps {
		st, err := decodeStep(raw, out.Percentiles)
		if err != nil {
			return fmt.Errorf("decode result: step %d: %w", i, err)
		}
		out.Steps = append(out.Steps, st)
	}
	for _, lj := range levels {
		l := lj.Level
		l.Level = float64(lj.LevelValue)
		var rounds []*Step
		for _, st := range out.Steps {
			if st.Level == l.Level {
				rounds = append(rounds, st)
			}
		}
		if len(rounds) > 0 {
			l.Outcome = aggregate(l.Label, l.Level, rounds[0].Mode, rounds, DefaultGoodputRatio).Outcome
		}
		out.Levels = append(out.Levels, l)
	}
	*r = out
	return nil
}

// fields is a JSON object by key.
type fields map[string]json.RawMessage

// get decodes key into v; a missing key leaves v as it is.
func (f fields) get(key string, v any) error {
	raw, ok := f[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode result: %s: %w", key, err)
	}
	return nil
}

// rate is a rate as jsonRate writes it: a number or the string "inf";
// null is 0.
type rate float64

// UnmarshalJSON implements json.Unmarshaler.
func (x *rate) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s != "inf" {
			return fmt.Errorf("rate %q: want a number or \"inf\"", s)
		}
		*x = rate(math.Inf(1))
		return nil
	}
	var v *float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*x = 0
	if v != nil {
		*x = rate(*v)
	}
	return nil
}

// kneeJSON is result.json's "knee" object.
type kneeJSON struct {
	Found             bool          `json:"found"`
	Unit              string        `json:"unit"`
	Level             float64       `json:"level"`
	Low               float64       `json:"bracket_low"`
	Upper             rate          `json:"upper"`
	MaxGoodput        float64       `json:"max_goodput"`
	MaxGoodputLevel   rate          `json:"max_goodput_level"`
	NonMonotonic      bool          `json:"non_monotonic"`
	Reason            string        `json:"reason"`
	SearchEnd         string        `json:"search_end"`
	Stop              string        `json:"search_stop"`
	ReferenceCapacity float64       `json:"reference_capacity"`
	Interval          *KneeInterval `json:"interval"`
}

// levelJSON is one of result.json's "levels": Level's own keys and the
// level, written as a rate.
type levelJSON struct {
	Level
	LevelValue rate `json:"level"`
}

// stepJSON holds the keys of a result.json step that map one to one onto
// Step and Stats; decodeStep reads the per-metric latency keys.
type stepJSON struct {
	Label                  string                 `json:"label"`
	NumPrompts             int                    `json:"num_prompts"`
	RequestRate            rate                   `json:"request_rate"`
	MaxConcurrency         *int                   `json:"max_concurrency"`
	Duration               float64                `json:"duration"`
	Completed              int                    `json:"completed"`
	Failed                 int                    `json:"failed"`
	TotalInputTokens       int                    `json:"total_input_tokens"`
	TotalOutputTokens      int                    `json:"total_output_tokens"`
	RequestThroughput      float64                `json:"request_throughput"`
	RequestGoodput         *float64               `json:"request_goodput"`
	OutputThroughput       float64                `json:"output_throughput"`
	TotalTokenThroughput   float64                `json:"total_token_throughput"`
	Latencies              []float64              `json:"latencies"`
	QueueTimes             []float64              `json:"queue_times"`
	MaxOutputTokensPerS    float64                `json:"max_output_tokens_per_s"`
	MaxConcurrentRequests  int                    `json:"max_concurrent_requests"`
	Index                  int                    `json:"step"`
	Round                  int                    `json:"round"`
	Attempt                int                    `json:"attempt"`
	Mode                   string                 `json:"mode"`
	Start                  time.Time              `json:"start"`
	End                    time.Time              `json:"end"`
	Interrupted            bool                   `json:"interrupted"`
	RequestedRate          rate                   `json:"requested_request_rate"`
	ScheduledRate          float64                `json:"scheduled_request_rate"`
	AchievedRate           float64                `json:"achieved_request_rate"`
	OfferedRate            float64                `json:"offered_request_rate"`
	ArrivalWindow          float64                `json:"arrival_window_s"`
	DrainCorrectedDuration float64                `json:"drain_corrected_duration_s"`
	GoodputRatio           float64                `json:"goodput_ratio"`
	KneeGoodput            float64                `json:"knee_goodput"`
	KneeThroughput         float64                `json:"knee_throughput"`
	Good                   int                    `json:"good_completed"`
	GoodOutputTokens       int                    `json:"good_output_tokens"`
	GoodOutputThroughput   float64                `json:"good_output_throughput"`
	ErrorRate              float64                `json:"error_rate"`
	FailedByClass          map[string]int         `json:"failed_by_class"`
	FinishReasons          map[string]int         `json:"finish_reasons"`
	TokenDistributions     map[string]TokenDist   `json:"token_distributions"`
	TTFTText               Latency                `json:"ttft_text_ms"`
	SendLag                Latency                `json:"send_lag_ms"`
	QueueTime              Latency                `json:"client_queue_time_ms"`
	E2ELFromScheduled      Latency                `json:"e2el_from_scheduled_ms"`
	P99Reliability         map[string]reliability `json:"p99_reliability"`
	SLOChecks              []SLOCheck             `json:"slo_checks"`
	SLOHeld                bool                   `json:"slo_held"`
	Warmups                int                    `json:"warmups"`
	WarmupFailed           int                    `json:"warmup_failed"`
	PrefixGeneration       uint64                 `json:"prefix_generation"`
	DistinctPrompts        int64                  `json:"distinct_prompts"`
	Server                 ServerStats            `json:"server"`
	Validity               Validity               `json:"validity"`
	Search                 *StepVerdict           `json:"search"`
	MultiTurn              *MultiTurnStats        `json:"multi_turn"`
	Trace                  *TraceTiming           `json:"trace"`
}

// reliability is one metric of a step's "p99_reliability".
type reliability struct {
	N        int        `json:"n"`
	Reliable bool       `json:"reliable"`
	CI95     []*float64 `json:"ci95_ms"`
}

// decodeStep reads one step object; percentiles are the result's extra
// percentiles (their keys, p<P>_<metric>_ms, are in every step).
func decodeStep(raw []byte, percentiles []float64) (*Step, error) {
	var f fields
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	var j stepJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	st := &Step{
		Index: j.Index, Label: j.Label, Level: float64(j.RequestRate), Round: j.Round, Attempt: j.Attempt, Mode: j.Mode,
		Start: j.Start, End: j.End, Warmups: j.Warmups, WarmupFailed: j.WarmupFailed, PrefixGeneration: j.PrefixGeneration,
		DistinctPrompts: j.DistinctPrompts, Server: j.Server, Validity: j.Validity, Interrupted: j.Interrupted, Search: j.Search,
		MultiTurn: j.MultiTurn,
		Trace:     j.Trace,
	}
	mc := 0
	if j.MaxConcurrency != nil {
		mc = *j.MaxConcurrency
	}
	if j.Mode == ModeClosed {
		st.Concurrency, st.Level = mc, float64(mc)
	} else {
		st.MaxConcurrency = mc
	}
	s := &st.Stats
	*s = Stats{
		Duration: j.Duration, Requests: j.NumPrompts, Completed: j.Completed, Failed: j.Failed,
		FailedByClass: j.FailedByClass, ErrorRate: j.ErrorRate, Good: j.Good,
		GoodOutputTokens: j.GoodOutputTokens, GoodOutputThroughput: j.GoodOutputThroughput,
		TotalInputTokens: j.TotalInputTokens, TotalOutputTokens: j.TotalOutputTokens,
		RequestThroughput: j.RequestThroughput, OutputThroughput: j.OutputThroughput, TotalTokenThroughput: j.TotalTokenThroughput,
		MaxOutputTokensPerS: j.MaxOutputTokensPerS, MaxConcurrentRequests: j.MaxConcurrentRequests,
		TTFTText: j.TTFTText, SendLag: j.SendLag, QueueTime: j.QueueTime, E2ELFromScheduled: j.E2ELFromScheduled,
		RequestedRate: float64(j.RequestedRate), ScheduledRate: j.ScheduledRate, AchievedRate: j.AchievedRate,
		ArrivalWindow: j.ArrivalWindow, OfferedRate: j.OfferedRate, DrainCorrectedDuration: j.DrainCorrectedDuration,
		GoodputRatio: j.GoodputRatio, KneeGoodput: j.KneeGoodput, KneeThroughput: j.KneeThroughput,
		InputTokens: j.TokenDistributions["input"], RequestedOutputTokens: j.TokenDistributions["requested_output"],
		OutputTokens: j.TokenDistributions["output"], FinishReasons: j.FinishReasons,
		SLOChecks: j.SLOChecks, SLOHeld: j.SLOHeld, Latencies: j.Latencies, QueueTimes: j.QueueTimes,
	}
	switch {
	case j.RequestGoodput != nil:
		s.RequestGoodput = *j.RequestGoodput
	case s.Duration > 0:
		// Written as null without SLOs: every success is good.
		s.RequestGoodput = float64(s.Good) / s.Duration
	}
	for _, m := range []struct {
		name string
		dst  *Latency
	}{{"ttft", &s.TTFT}, {"tpot", &s.TPOT}, {"itl", &s.ITL}, {"e2el", &s.E2EL}} {
		l, err := flatLatency(f, m.name, j.P99Reliability[m.name], percentiles)
		if err != nil {
			return nil, err
		}
		*m.dst = l
	}
	return st, nil
}

// flatLatency reads a latency metric from vllm bench serve's flat keys
// (mean_<name>_ms, ..., p<P>_<name>_ms) and its p99_reliability entry.
func flatLatency(f fields, name string, rel reliability, percentiles []float64) (Latency, error) {
	l := Latency{P99Reliable: rel.Reliable}
	l.N = rel.N
	for _, k := range []struct {
		key string
		dst *float64
	}{{"mean", &l.Mean}, {"median", &l.Median}, {"std", &l.Std}, {"p50", &l.P50}, {"p90", &l.P90}, {"p99", &l.P99}} {
		if err := f.get(k.key+"_"+name+"_ms", k.dst); err != nil {
			return l, err
		}
	}
	for _, p := range percentiles {
		key := "p" + stats.PercentileKey(p) + "_" + name + "_ms"
		if _, ok := f[key]; !ok {
			continue
		}
		q := stats.Quantile{P: p, Reliable: stats.Reliable(rel.N, p)}
		if err := f.get(key, &q.Value); err != nil {
			return l, err
		}
		l.Percentiles = append(l.Percentiles, q)
	}
	if len(rel.CI95) == 2 {
		bound := func(v *float64) float64 {
			if v == nil {
				return math.NaN()
			}
			return *v
		}
		l.P99CI = &stats.CI{Lo: bound(rel.CI95[0]), Hi: bound(rel.CI95[1])}
	}
	return l, nil
}
