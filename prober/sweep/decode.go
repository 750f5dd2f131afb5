package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// MarshalJSON renders result.json (the tables of resultjson.go).
func (r *Result) MarshalJSON() ([]byte, error) {
	schema := ResultSchemaVersion
	return json.Marshal(r.topKeys(&schema))
}

// DecodeResult reads a result.json written by Result.MarshalJSON back into
// a Result (see Result.UnmarshalJSON for what it cannot restore). The file
// is untrusted input: what it allocates is in proportion to its size.
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

// UnmarshalJSON reads result.json through the tables MarshalJSON writes it
// with: encoding the decoded Result again gives the same bytes. It fails on
// a document without llmprobe_result_schema or with a newer schema than
// ResultSchemaVersion.
//
// What result.json does not hold stays zero: the Go-only fields (Name,
// InterruptedReason, MaxConcurrency, Rounds, Fingerprint: the manifest
// holds them), the Min and Max of the TTFT, TPOT, ITL and E2EL summaries
// and the Conf and Iters of their p99 intervals, and the per-request send
// lags Judge uses and samples the knee's bootstrap draws. Derived figures
// are derived again: Level.Outcome from the level's steps, a closed-loop
// step's Level from its concurrency, RequestGoodput from good_completed /
// duration when result.json has none (no SLO set), a percentile's Reliable
// from its metric's sample count; a p99 interval bound written as null (not
// finite) is NaN.
func (r *Result) UnmarshalJSON(b []byte) error {
	var top fields
	if err := json.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	var schema int
	if err := top.get("llmprobe_result_schema", &schema); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	switch {
	case schema == 0:
		return errors.New("decode result: no llmprobe_result_schema, not an llmprobe result.json")
	case schema > ResultSchemaVersion:
		return fmt.Errorf("decode result: llmprobe_result_schema %d is newer than this llmprobe reads (%d)", schema, ResultSchemaVersion)
	}
	var out Result
	if err := out.topKeys(&schema).read(top); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if err := out.readMetadata(top); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if schema < 2 {
		// Schema 1 wrote knee.level (the highest passing level) found or
		// not, and no bracket.
		out.Knee.Low = out.Knee.Level
		if !out.Knee.Found {
			out.Knee.Level = 0
		}
	}
	rounds := map[float64][]*Step{}
	for _, st := range out.Steps {
		rounds[st.Level] = append(rounds[st.Level], st)
	}
	for i := range out.Levels {
		l := &out.Levels[i]
		if rs := rounds[l.Level]; len(rs) > 0 {
			l.Outcome = aggregate(l.Label, l.Level, rs[0].Mode, rs, DefaultGoodputRatio).Outcome
		}
	}
	*r = out
	return nil
}

// readMetadata reads the --metadata pairs: every top-level key that is not
// in the tables, but for the latency keys ParseMetadata reserves too
// (p75_ttft_ms, ...: a step holds them).
func (r *Result) readMetadata(top fields) error {
	known := resultKeys()
	for k, raw := range top {
		if known[k] || percentileKey.MatchString(k) {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("metadata %s: %w", k, err)
		}
		if r.Metadata == nil {
			r.Metadata = map[string]string{}
		}
		r.Metadata[k] = v
		r.MetadataOrder = append(r.MetadataOrder, k)
	}
	slices.Sort(r.MetadataOrder)
	return nil
}

// resultKeys returns every key result.json writes at the top level and in a
// step (optional ones included), for rejecting --metadata keys that would
// collide with them and for telling the metadata pairs apart when reading.
// The map is shared: read it only.
var resultKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	var schema int
	r := &Result{}
	for _, o := range []object{r.topKeys(&schema), r.stepKeys(&Step{Mode: ModeOpen}), r.stepKeys(&Step{Mode: ModeClosed})} {
		for _, f := range o {
			keys[f.key] = true
		}
	}
	return keys
})

// stepList is result.json's "steps" of a Result.
type stepList struct{ r *Result }

// MarshalJSON implements json.Marshaler.
func (l *stepList) MarshalJSON() ([]byte, error) {
	steps := make([]object, 0, len(l.r.Steps))
	for _, s := range l.r.Steps {
		steps = append(steps, l.r.stepKeys(s))
	}
	return json.Marshal(steps)
}

// UnmarshalJSON implements json.Unmarshaler; the Result's goodput_ms and
// percentiles are read.
func (l *stepList) UnmarshalJSON(b []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return err
	}
	index, err := newPercentileIndex(l.r.Percentiles)
	if err != nil {
		return err
	}
	l.r.Steps = nil
	for i, raw := range raws {
		st, err := l.r.decodeStep(raw, index)
		if err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		l.r.Steps = append(l.r.Steps, st)
	}
	return nil
}

// decodeStep reads one step: first what its table depends on (its mode and
// which extra percentile keys it holds), then the table, then what is
// derived.
func (r *Result) decodeStep(raw []byte, index percentileIndex) (*Step, error) {
	var m fields
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	s := &Step{}
	if err := m.get("mode", &s.Mode); err != nil {
		return nil, err
	}
	index.prefill(m, &s.Stats)
	if err := r.stepKeys(s).read(m); err != nil {
		return nil, err
	}
	if err := m.require(vllmStepKeys); err != nil {
		return nil, err
	}
	if v := &s.Validity; len(v.Reasons) != len(v.Flags) {
		// Reasons[i] explains Flags[i] (the knee's notes, the reports and
		// compare's rules read them so).
		return nil, fmt.Errorf("validity: %d flags but %d reasons", len(v.Flags), len(v.Reasons))
	}
	st := &s.Stats
	// The scheduling latency Judge read is kept in the validity object.
	st.SetSchedLatency(s.Validity.SchedLatencyP99MS, s.Validity.SchedLatencySamples, s.Validity.SchedLatencyOverLimit)
	if s.Mode == ModeClosed {
		s.Level = float64(s.Concurrency)
	}
	if len(r.SLO) == 0 && st.Duration > 0 {
		// Written as null without SLOs: every success is good.
		if g := float64(st.Good) / st.Duration; !math.IsInf(g, 0) {
			st.RequestGoodput = g
		}
	}
	for _, l := range st.latencies() {
		for i := range l.Percentiles {
			l.Percentiles[i].Reliable = stats.Reliable(l.N, l.Percentiles[i].P)
		}
	}
	return s, nil
}

// percentileIndex maps the extra percentile keys of a step
// (p<P>_<metric>_ms) to their metric (in latencyMetrics) and percentile
// (in the result's percentiles).
type percentileIndex struct {
	ps   []float64
	keys map[string][2]int
}

func newPercentileIndex(ps []float64) (percentileIndex, error) {
	x := percentileIndex{ps: ps, keys: map[string][2]int{}}
	for i, p := range ps {
		for m, name := range latencyMetrics {
			k := "p" + stats.PercentileKey(p) + "_" + name + "_ms"
			if _, dup := x.keys[k]; dup {
				// llmprobe writes each percentile once (ParsePercentiles);
				// a repeated one would be read into every step again and
				// again.
				return x, fmt.Errorf("percentile %v given twice", p)
			}
			x.keys[k] = [2]int{m, i}
		}
	}
	return x, nil
}

// prefill gives the latencies of s the extra percentiles whose keys m
// holds, in the result's order, for the step's table to read their values
// into. It looks at m's keys, not at every percentile: the work is in
// proportion to the step's size.
func (x percentileIndex) prefill(m fields, s *Stats) {
	var present [len(latencyMetrics)][]int
	for k := range m {
		if e, ok := x.keys[k]; ok {
			present[e[0]] = append(present[e[0]], e[1])
		}
	}
	for mi, l := range s.latencies() {
		slices.Sort(present[mi])
		for _, i := range present[mi] {
			l.Percentiles = append(l.Percentiles, stats.Quantile{P: x.ps[i]})
		}
	}
}

// levelList is result.json's "levels".
type levelList []Level

// MarshalJSON implements json.Marshaler.
func (l levelList) MarshalJSON() ([]byte, error) {
	levels := make([]object, 0, len(l))
	for i := range l {
		levels = append(levels, levelKeys(&l[i]))
	}
	return json.Marshal(levels)
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *levelList) UnmarshalJSON(b []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return err
	}
	*l = nil
	for i, raw := range raws {
		var m fields
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("level %d: %w", i, err)
		}
		var lv Level
		o := levelKeys(&lv)
		if err := o.read(m); err != nil {
			return fmt.Errorf("level %d: %w", i, err)
		}
		// Every level llmprobe wrote has all its keys.
		if err := m.require(o.keys()); err != nil {
			return fmt.Errorf("level %d: %w", i, err)
		}
		*l = append(*l, lv)
	}
	return nil
}

// vllmStepKeys are vllm bench serve's own keys of a step, which every
// step llmprobe wrote holds (llmprobe's extras grew over time), less the
// two that are derived in some steps (request_rate of a closed loop,
// request_goodput without an SLO). Requiring them keeps what a step costs
// to read in proportion to its size: a Step is some kilobytes in memory,
// an object like {} two bytes.
var vllmStepKeys = slices.Concat([]string{"label", "num_prompts", "max_concurrency", "duration", "completed",
	"failed", "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput",
	"total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests"},
	latencyKeys(latencyMetrics[0], &Latency{}).keys(), latencyKeys(latencyMetrics[1], &Latency{}).keys(),
	latencyKeys(latencyMetrics[2], &Latency{}).keys(), latencyKeys(latencyMetrics[3], &Latency{}).keys())

// require fails when f lacks one of keys.
func (f fields) require(keys []string) error {
	for _, k := range keys {
		if _, ok := f[k]; !ok {
			return fmt.Errorf("no %s key", k)
		}
	}
	return nil
}

// rate is a rate as vLLM writes it: a number, or the string "inf" for a
// burst; null reads as 0.
type rate float64

// MarshalJSON implements json.Marshaler.
func (x rate) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(x), 1) {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(x))
}

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

// nullZero is a count written as null when 0 (vLLM's max_concurrency
// without a cap).
type nullZero int

// MarshalJSON implements json.Marshaler.
func (x nullZero) MarshalJSON() ([]byte, error) {
	if x == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(int(x))
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *nullZero) UnmarshalJSON(b []byte) error {
	var v *int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*x = 0
	if v != nil {
		*x = nullZero(*v)
	}
	return nil
}

// atLeastOne is a count from 1 (a step's attempt): 0, unset, is written 1.
type atLeastOne int

// MarshalJSON implements json.Marshaler.
func (x atLeastOne) MarshalJSON() ([]byte, error) { return json.Marshal(max(int(x), 1)) }

// nonNilFloats and nonNilStrings write nil as [].
type (
	nonNilFloats  []float64
	nonNilStrings []string
)

// MarshalJSON implements json.Marshaler.
func (x nonNilFloats) MarshalJSON() ([]byte, error) {
	if x == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]float64(x))
}

// MarshalJSON implements json.Marshaler.
func (x nonNilStrings) MarshalJSON() ([]byte, error) {
	if x == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(x))
}

// utcTime is a time written in UTC; it is read in UTC too, and a time
// whose UTC year is outside [0, 9999] (which JSON cannot write) is an
// error.
type utcTime time.Time

// MarshalJSON implements json.Marshaler.
func (t utcTime) MarshalJSON() ([]byte, error) { return time.Time(t).UTC().MarshalJSON() }

// UnmarshalJSON implements json.Unmarshaler.
func (t *utcTime) UnmarshalJSON(b []byte) error {
	var v time.Time
	if err := v.UnmarshalJSON(b); err != nil {
		return err
	}
	v = v.UTC()
	if y := v.Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %s: year outside [0, 9999]", b)
	}
	*t = utcTime(v)
	return nil
}

// ci95 is a p99 interval as p99_reliability writes it: [lo, hi], a bound
// that is not finite as null (read back as NaN).
type ci95 struct{ ci **stats.CI }

// MarshalJSON implements json.Marshaler.
func (c ci95) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{finite((*c.ci).Lo), finite((*c.ci).Hi)})
}

// UnmarshalJSON implements json.Unmarshaler; anything but two bounds
// leaves no interval.
func (c ci95) UnmarshalJSON(b []byte) error {
	var bounds []*float64
	if err := json.Unmarshal(b, &bounds); err != nil {
		return err
	}
	if len(bounds) != 2 {
		return nil
	}
	bound := func(v *float64) float64 {
		if v == nil {
			return math.NaN()
		}
		return *v
	}
	*c.ci = &stats.CI{Lo: bound(bounds[0]), Hi: bound(bounds[1])}
	return nil
}

// finite replaces NaN and infinities (not valid JSON) with nil.
func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}
