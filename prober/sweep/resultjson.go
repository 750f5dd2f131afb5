package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// result.json's codec. Each object of the file (the top level, the knee, a
// level, a step and its p99_reliability) is one table of keys, built by
// topKeys, kneeKeys, levelKeys and stepKeys over the Go value: a key's
// pointer is what MarshalJSON writes and what UnmarshalJSON reads into.
// The same table serves both directions, so a key cannot be written and
// forgotten by the reader. A key whose value is computed from other keys
// (a duplicate under vLLM's name, a constant, the result's date repeated in
// every step) says so in its derived text and is not read back. The nested
// values (server, validity, a Latency object, ...) are their own types' json
// tags both ways; the Result, Step, Stats, Level and Knee types carry none.
//
// A new key is one row in its table (and a line in docs/sweep.md); a key
// that must not be read back says what it is derived from.
// TestResultKeysReadBack fails on a key written but not read back, a
// derived key that cannot be derived, and a key read but never written.

// field is one key of a result.json object.
type field struct {
	key string
	// v points to the key's value: json.Marshal(v) writes it and
	// json.Unmarshal(raw, v) reads it. A derived key may hold a value.
	v any
	// omit leaves the key out when writing (an optional key whose value is
	// absent); the reader reads it when it is there.
	omit bool
	// derived, when set, says what the key is computed from; the reader
	// skips it.
	derived string
}

// object is a JSON object in key order.
type object []field

// MarshalJSON writes the keys in table order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range o {
		if f.omit {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", f.key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads every key of the table that is not derived; a
// missing key leaves its value as it is.
func (o object) UnmarshalJSON(b []byte) error {
	var m fields
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	return o.read(m)
}

func (o object) read(m fields) error {
	for _, f := range o {
		if f.derived == "" {
			if err := m.get(f.key, f.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// keys returns the keys of o.
func (o object) keys() []string {
	ks := make([]string, len(o))
	for i, f := range o {
		ks[i] = f.key
	}
	return ks
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
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

func optional(key string, v any, present bool) field { return field{key: key, v: v, omit: !present} }

func derived(key string, v any, from string) field { return field{key: key, v: v, derived: from} }

// topKeys is result.json's top level; schema is llmprobe_result_schema.
// The steps come last: a step's keys depend on the result's goodput_ms
// and percentiles, which the reader has read by then.
func (r *Result) topKeys(schema *int) object {
	knee := r.kneeKeys()
	o := object{
		{key: "llmprobe_result_schema", v: schema},
		{key: "complete", v: &r.Complete},
		{key: "date", v: &r.Date},
		{key: "backend", v: &r.Backend},
		{key: "model_id", v: &r.ModelID},
		{key: "tokenizer_id", v: &r.TokenizerID},
	}
	// The --metadata pairs; the reader takes every key that is not in the
	// table for one (and the table of the Result being read has none).
	for _, k := range r.MetadataOrder {
		v := r.Metadata[k]
		o = append(o, field{key: k, v: &v})
	}
	return append(o,
		field{key: "mode", v: &r.Mode},
		field{key: "rates", v: &r.Rates},
		field{key: "arrival", v: &r.Arrival},
		field{key: "burstiness", v: &r.Burstiness},
		field{key: "goodput_ms", v: &r.SLO},
		field{key: "percentiles", v: &r.Percentiles},
		optional("prompt_nonce", &r.PromptNonce, r.PromptNonce != 0),
		optional("dataset", &r.Dataset, r.Dataset != nil),
		optional("cost_per_hour_usd", &r.CostPerHour, r.CostPerHour > 0),
		optional("sweep_mode", &r.SweepMode, r.SweepMode != ""),
		field{key: "knee", v: &knee},
		optional("background", &r.Background, r.Background != nil),
		optional("throughput_probe", &r.Probe, r.Probe != nil),
		optional("answers", &r.Answers, r.Answers != nil),
		field{key: "notes", v: (*nonNilStrings)(&r.Notes)},
		field{key: "levels", v: (*levelList)(&r.Levels)},
		field{key: "steps", v: &stepList{r}},
	)
}

// kneeKeys is result.json's "knee".
func (r *Result) kneeKeys() object {
	k := &r.Knee
	var cost any
	if r.CostPerHour > 0 && k.Found {
		cost = costJSON(r.KneeCost())
	}
	return object{
		{key: "found", v: &k.Found},
		{key: "unit", v: &r.KneeUnit},
		optional("level", &k.Level, k.Found),
		optional("bracket_low", &k.Low, k.Low != 0),
		{key: "bracket_high", v: (*rate)(&k.Upper), omit: k.Upper == 0, derived: "upper (schema 1 wrote only upper)"},
		optional("upper", (*rate)(&k.Upper), k.Upper != 0),
		{key: "max_goodput", v: &k.MaxGoodput},
		{key: "max_goodput_level", v: (*rate)(&k.MaxGoodputLevel)},
		{key: "non_monotonic", v: &k.NonMonotonic},
		{key: "reason", v: &k.Reason},
		optional("state", &k.State, k.State != ""),
		optional("undecided", &k.Undecided, k.Undecided != ""),
		optional("search_end", &r.SearchEnd, r.SearchEnd != ""),
		optional("search_stop", &k.Stop, k.Stop != ""),
		derived("decided", k.Decided(), "bracket_low and bracket_high (Knee.Decided)"),
		optional("bound", &k.Bound, k.Bound != nil),
		optional("reference_capacity", &r.ReferenceCapacity, r.ReferenceCapacity > 0),
		optional("interval", &k.Interval, k.Interval != nil),
		{key: "cost_per_million_good_output_tokens", v: cost, omit: !(r.CostPerHour > 0 && k.Found),
			derived: "cost_per_hour_usd and the good_output_throughput of the knee level's steps"},
		{key: "joules_per_good_output_token", v: kneeEnergyJSON(r), omit: !k.Found,
			derived: "the energy of the knee level's valid steps (energy.go); null when not recorded"},
	}
}

// levelKeys is one of result.json's "levels".
func levelKeys(l *Level) object {
	return object{
		{key: "label", v: &l.Label},
		{key: "level", v: (*rate)(&l.Level)},
		{key: "rounds", v: &l.Rounds},
		{key: "valid_rounds", v: &l.ValidRounds},
		{key: "passes", v: &l.Passes},
		{key: "request_goodput", v: &l.Goodput},
		{key: "request_throughput", v: &l.Throughput},
		{key: "p99_ttft_ms", v: &l.TTFTP99MS},
		{key: "p99_tpot_ms", v: &l.TPOTP99MS},
		{key: "knee_goodput", v: &l.KneeGoodput},
		{key: "goodput_ratio", v: &l.GoodputRatio},
	}
}

// latencyMetrics are the metrics a step writes under vllm bench serve's
// flat keys (mean_<name>_ms, ...) and in p99_reliability.
var latencyMetrics = [...]string{"ttft", "tpot", "itl", "e2el"}

func (s *Stats) latencies() [len(latencyMetrics)]*Latency {
	return [...]*Latency{&s.TTFT, &s.TPOT, &s.ITL, &s.E2EL}
}

// StepJSON renders one step as a vllm bench serve result object (the keys
// and order of vllm-reference.md §1.6, percentile keys for p50, p90, p99 and
// the extra percentiles of every latency metric) followed by llmprobe's
// extras. Per-request arrays (ttfts, itls, ...) are not repeated here:
// records.jsonl holds every request.
func (r *Result) StepJSON(s *Step) any { return r.stepKeys(s) }

// stepKeys is one of result.json's "steps". Its keys depend on the step's
// mode and on which extra percentiles its latencies hold, which the reader
// sets first (decodeStep).
func (r *Result) stepKeys(s *Step) object {
	st := &s.Stats
	const shared = "the result's key of that name"
	o := object{
		derived("date", &r.Date, shared),
		derived("endpoint_type", &r.Backend, "backend"),
		derived("backend", &r.Backend, shared),
		{key: "label", v: &s.Label},
		derived("model_id", &r.ModelID, shared),
		derived("tokenizer_id", &r.TokenizerID, shared),
		{key: "num_prompts", v: &st.Requests},
	}
	for _, k := range r.MetadataOrder {
		o = append(o, derived(k, r.Metadata[k], "the result's --metadata pair"))
	}
	if s.Mode == ModeClosed {
		// vLLM's closest equivalent of a closed loop: rate inf capped by
		// max_concurrency.
		o = append(o, derived("request_rate", "inf", "the mode (closed loop: inf)"),
			derived("burstiness", &r.Burstiness, shared),
			field{key: "max_concurrency", v: &s.Concurrency})
	} else {
		o = append(o, field{key: "request_rate", v: (*rate)(&s.Level)},
			derived("burstiness", &r.Burstiness, shared),
			field{key: "max_concurrency", v: (*nullZero)(&s.MaxConcurrency)})
	}
	goodput := field{key: "request_goodput", v: &st.RequestGoodput}
	if len(r.SLO) == 0 {
		goodput = derived("request_goodput", nil, "goodput_ms (null without an SLO: read back as good_completed / duration)")
	}
	o = append(o,
		field{key: "duration", v: &st.Duration},
		field{key: "completed", v: &st.Completed},
		field{key: "failed", v: &st.Failed},
		field{key: "total_input_tokens", v: &st.TotalInputTokens},
		field{key: "total_output_tokens", v: &st.TotalOutputTokens},
		optional("usage_cached_tokens", &st.CachedTokens, st.CachedTokensReports > 0),
		optional("usage_cached_tokens_reports", &st.CachedTokensReports, st.CachedTokensReports > 0),
		field{key: "request_throughput", v: &st.RequestThroughput},
		goodput,
		field{key: "output_throughput", v: &st.OutputThroughput},
		field{key: "total_token_throughput", v: &st.TotalTokenThroughput},
		field{key: "latencies", v: (*nonNilFloats)(&st.Latencies)},
		field{key: "queue_times", v: (*nonNilFloats)(&st.QueueTimes)},
		field{key: "max_output_tokens_per_s", v: &st.MaxOutputTokensPerS},
		field{key: "max_concurrent_requests", v: &st.MaxConcurrentRequests},
		derived("rtfx", 0.0, "a constant (vLLM's audio figure)"),
	)
	for i, l := range st.latencies() {
		o = append(o, latencyKeys(latencyMetrics[i], l)...)
	}
	capped := s.MaxConcurrency > 0
	o = append(o, latencyKeys("client_queue_time", &st.QueueTime).copyOf("client_queue_time_ms", capped)...)
	o = append(o, latencyKeys("e2el_including_client_queue", &st.E2ELFromScheduled).copyOf("e2el_from_scheduled_ms", capped)...)

	// llmprobe extras.
	var cost any
	if r.CostPerHour > 0 {
		cost = costJSON(r.StepCost(s))
	}
	o = append(o,
		field{key: "step", v: &s.Index},
		field{key: "round", v: &s.Round},
		field{key: "attempt", v: (*atLeastOne)(&s.Attempt)},
		field{key: "mode", v: &s.Mode},
		field{key: "start", v: (*utcTime)(&s.Start)},
		field{key: "end", v: (*utcTime)(&s.End)},
		field{key: "interrupted", v: &s.Interrupted},
		field{key: "requested_request_rate", v: (*rate)(&st.RequestedRate)},
		field{key: "scheduled_request_rate", v: &st.ScheduledRate},
		field{key: "achieved_request_rate", v: &st.AchievedRate},
		field{key: "offered_request_rate", v: &st.OfferedRate},
		field{key: "arrival_window_s", v: &st.ArrivalWindow},
		field{key: "drain_corrected_duration_s", v: &st.DrainCorrectedDuration},
		field{key: "goodput_ratio", v: &st.GoodputRatio},
		derived("keep_up_pct", st.KeepUpPct(), "goodput_ratio"),
		field{key: "knee_goodput", v: &st.KneeGoodput},
		field{key: "knee_throughput", v: &st.KneeThroughput},
		field{key: "good_completed", v: &st.Good},
		field{key: "good_output_tokens", v: &st.GoodOutputTokens},
		field{key: "good_output_throughput", v: &st.GoodOutputThroughput},
		field{key: "cost_per_million_good_output_tokens", v: cost, omit: !(r.CostPerHour > 0),
			derived: "cost_per_hour_usd and good_output_throughput"},
		field{key: "error_rate", v: &st.ErrorRate},
		field{key: "failed_by_class", v: &st.FailedByClass},
		field{key: "finish_reasons", v: &st.FinishReasons},
		field{key: "token_distributions", v: &object{
			{key: "input", v: &st.InputTokens},
			{key: "output", v: &st.OutputTokens},
			{key: "requested_output", v: &st.RequestedOutputTokens},
		}},
		field{key: "ttft_text_ms", v: &st.TTFTText},
		field{key: "ttfa_ms", v: &st.TTFA},
		optional("reasoning", &st.Reasoning, st.Reasoning != nil),
		optional("pooling", &st.Pooling, st.Pooling != nil),
		optional("images", &st.Images, st.Images != nil),
		optional("speculative_decoding", &st.SpecDecode, st.SpecDecode != nil),
		optional("server_timing", &st.ServerTiming, st.ServerTiming != nil),
		field{key: "send_lag_ms", v: &st.SendLag},
		field{key: "client_queue_time_ms", v: &st.QueueTime},
		field{key: "e2el_from_scheduled_ms", v: &st.E2ELFromScheduled},
	)
	// The same two figures as flat keys in vLLM's naming, for tools that
	// read mean_/median_/p99_<metric>_ms.
	for _, m := range []struct {
		name string
		l    *Latency
	}{{"ttft_text", &st.TTFTText}, {"e2el_from_scheduled", &st.E2ELFromScheduled}} {
		from := m.name + "_ms"
		o = append(o, derived("mean_"+m.name+"_ms", &m.l.Mean, from), derived("median_"+m.name+"_ms", &m.l.Median, from),
			derived("p99_"+m.name+"_ms", &m.l.P99, from))
	}
	rel := object{}
	for i, l := range st.latencies() {
		rel = append(rel, field{key: latencyMetrics[i], v: &object{
			{key: "n", v: &l.N},
			{key: "reliable", v: &l.P99Reliable},
			optional("ci95_ms", &ci95{&l.P99CI}, l.P99CI != nil),
		}})
	}
	return append(o,
		field{key: "p99_reliability", v: &rel},
		field{key: "slo_checks", v: &st.SLOChecks},
		field{key: "slo_held", v: &st.SLOHeld},
		field{key: "warmups", v: &s.Warmups},
		field{key: "warmup_failed", v: &s.WarmupFailed},
		optional("prefix_generation", &s.PrefixGeneration, s.PrefixGeneration != 0),
		field{key: "distinct_prompts", v: &s.DistinctPrompts},
		field{key: "server", v: &s.Server},
		field{key: "validity", v: &s.Validity},
		derived("in_knee", s.InKnee(), "validity and mode"),
		optional("search", &s.Search, s.Search != nil),
		optional("multi_turn", &s.MultiTurn, s.MultiTurn != nil),
		optional("trace", &s.Trace, s.Trace != nil),
		optional("background", &s.Background, s.Background != nil),
		optional("energy", &s.Energy, s.Energy != nil),
	)
}

// latencyKeys are a latency metric's vllm bench serve keys:
// mean_<name>_ms, median, std, p50, p90, p99 and p<P> of every extra
// percentile.
func latencyKeys(name string, l *Latency) object {
	o := object{}
	add := func(prefix string, v *float64) { o = append(o, field{key: prefix + "_" + name + "_ms", v: v}) }
	add("mean", &l.Mean)
	add("median", &l.Median)
	add("std", &l.Std)
	add("p50", &l.P50)
	add("p90", &l.P90)
	add("p99", &l.P99)
	for i := range l.Percentiles {
		add("p"+stats.PercentileKey(l.Percentiles[i].P), &l.Percentiles[i].Value)
	}
	return o
}

// copyOf marks every key of o derived from key from, and written only
// when present.
func (o object) copyOf(from string, present bool) object {
	for i := range o {
		o[i].derived, o[i].omit = from, !present
	}
	return o
}
