// Package compare owns the A/B comparison of two LLM serving
// configurations (DESIGN.md §9 points 8-10) and the offline checks of one
// result file: the procedure (Procedure: the rounds A/B/B/A, each a sweep of
// one side through prober/sweep, and its Result, a compare run's
// result.json), the evidence model both `llmprobe compare` and `llmprobe
// analyze` fill (Evidence: steps, rounds, per-request samples, fingerprint
// fields, what was not recorded), the decoders of the files it is read from
// (llmprobe's sweep results, vllm bench serve's --save-result files, and
// foreign files such as the methodology's teaching example), the validity
// rules (one table, rules.go: fingerprints, success counts, output-token
// distributions, finish reasons, error classes, client saturation, idle
// proof, samples per percentile, rounds), the difference between the sides with a two-level
// bootstrap interval, and the single-input SLO checks (Check).
//
// Everything but Procedure is pure: no network, no files, no clock. Inputs
// are decoded values; outputs are plain structs that internal/report
// renders. Procedure reaches the servers only through the sweep engine and
// writes no file: its rounds run in memory unless a RoundRunner writes them
// (internal/rundir.RunCompare writes the compare run directory). A rule is
// "ok", "failed" or "not-recorded"; evidence that is missing never turns into
// a confident answer: it makes the verdict "inconclusive" and says what to
// add.
package compare

import (
	"maps"
	"slices"
	"strconv"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Formats of an input (Evidence.Format).
const (
	// FormatLLMProbe: an llmprobe run directory or its result.json.
	FormatLLMProbe = "llmprobe"
	// FormatVLLM: a vllm bench serve --save-result file.
	FormatVLLM = "vllm-bench-serve"
	// FormatForeign: JSON that holds result figures in neither schema (the
	// methodology's teaching example); read as given, with a warning.
	FormatForeign = "foreign"
)

// Latency metric names, as in vLLM's result keys (p99_<name>_ms).
const (
	MetricTTFT = "ttft"
	MetricTPOT = "tpot"
	MetricITL  = "itl"
	MetricE2EL = "e2el"
)

// Evidence is what one side of a comparison (or one analyzed input)
// recorded. A nil map or slice means "not recorded"; the decoders list what
// they could not find in Missing.
type Evidence struct {
	// Name says where the evidence came from (a path, or "baseline").
	Name string
	// Format is FormatLLMProbe, FormatVLLM or FormatForeign.
	Format string
	// Warnings are sentences for the reader (a foreign schema, a key
	// spelled the old way).
	Warnings []string
	// Missing lists the figures the input does not record (e.g.
	// "per-request samples (--save-detailed)").
	Missing []string
	// Fields are the fingerprint fields (FieldNames) and every distinct
	// value they took over the input's rounds, sorted; a field that is
	// absent was not recorded.
	Fields map[string][]string
	// SLO is the SLO the input itself records (llmprobe's goodput_ms, a
	// foreign file's slo_ms; zero: none) and SLOSource where it came from.
	SLO       slo.SLO
	SLOSource string
	// Steps in run order.
	Steps []Step
	// CostPerHour is the price of the side's serving in USD per hour (an
	// llmprobe run's cost_per_hour_usd, or given on the command line; 0:
	// none), for the cost per million good output tokens.
	CostPerHour float64
}

// Step is one measured step: one level of one round.
type Step struct {
	// Label names the level without its round ("rate=4", "concurrency=8");
	// steps of the same level are compared with each other.
	Label string
	// Round counts the input's rounds from 1; Order is the step's position
	// in the run order of a comparison (0: not known).
	Round int
	Order int
	// Completed and Failed count the requests.
	Completed, Failed int
	// Duration is the benchmark duration in seconds (0: not recorded).
	// RateDuration is the duration the goodput and throughput figures
	// divide by: llmprobe's drain-corrected duration (Duration minus the
	// shortest successful E2E, so that the last request's own latency is
	// not counted as lost capacity), else Duration.
	Duration, RateDuration float64
	// Throughput is request_throughput (req/s); Goodput request_goodput
	// (nil: not recorded), computed by the run under GoodputSLO when
	// GoodputSLOKnown (vllm bench serve does not record its --goodput).
	Throughput      float64
	Goodput         *float64
	GoodputSLO      slo.SLO
	GoodputSLOKnown bool
	// Percentiles holds the recorded latency percentiles in ms by metric
	// (MetricTTFT, ...) and percentile (50, 90, 99, ...).
	Percentiles map[string]map[float64]float64
	// FinishReasons and ErrorClasses count requests (nil: not recorded).
	FinishReasons map[string]int
	ErrorClasses  map[string]int
	// Validity is the sweep's validity verdict of the step (nil: not
	// recorded).
	Validity *sweep.Validity
	// Requests are the per-request samples in arrival order (nil: not
	// recorded).
	Requests []Request
	// Contradictions name the recorded summary percentiles that disagree
	// with the step's own per-request samples (a vllm bench serve file:
	// decodeDetailed; nil: none found). Such a step's summary is not
	// trusted: its checks use the samples and are inconclusive.
	Contradictions []string
	// OutputThroughput is output_throughput, output tokens per second of
	// Duration (nil: not recorded); GoodOutputThroughput the output tokens
	// of good requests per second, as llmprobe records it under GoodputSLO
	// (nil: not recorded).
	OutputThroughput     *float64
	GoodOutputThroughput *float64
	// Energy is the step's GPU energy in joules over its window (an
	// llmprobe step's energy.joules; nil: not recorded, EnergyNote says
	// why) and EnergyMethod how it was measured (sweep.EnergyCounter, or
	// sweep.EnergyPowerTime, the fallback).
	Energy       *float64
	EnergyMethod string
	EnergyNote   string
	// ServerTimingNote says why the step's requests carry no server
	// timing (an llmprobe step's server_timing.not_recorded; "": it has
	// some, or the input does not say).
	ServerTimingNote string
}

// Request is what the comparison needs of one request. Latencies are in
// milliseconds.
type Request struct {
	// OK is true for a successful request.
	OK bool
	// TTFT, TPOT and E2EL of a successful request; TPOT is negative when
	// the request produced one output token or fewer (vLLM's rule: no
	// TPOT sample, and 0 for goodput).
	TTFT, TPOT, E2EL float64
	// OutputTokens is the actual output length (-1: not recorded).
	OutputTokens int
	// FinishReason ("" when none was sent) and ErrorClass ("" when OK).
	FinishReason string
	ErrorClass   string
	// ServerTiming is true when the response of a successful request
	// carried the server's queue time and TTFT (ServerQueue, ServerTTFT,
	// in ms: prober.Record.ServerQueueTime, ServerTTFT); its client TTFT
	// less both is the client-side overhead (ServerTimingSide).
	ServerTiming            bool
	ServerQueue, ServerTTFT float64
}

// Good applies the goodput rule (slo.SLO.Verdict's, vLLM's) to r.
func (r Request) Good(s slo.SLO) bool {
	if !r.OK {
		return false
	}
	const ms = 1e6 // ns per ms
	if s.TTFT != 0 && r.TTFT*ms > float64(s.TTFT) {
		return false
	}
	if s.TPOT != 0 && r.TPOT > 0 && r.TPOT*ms > float64(s.TPOT) {
		return false
	}
	if s.E2EL != 0 && r.E2EL*ms > float64(s.E2EL) {
		return false
	}
	return true
}

// value returns r's value of metric m and whether r has one.
func (r Request) value(m string) (float64, bool) {
	if !r.OK {
		return 0, false
	}
	switch m {
	case MetricTTFT:
		return r.TTFT, true
	case MetricTPOT:
		return r.TPOT, r.TPOT >= 0
	case MetricE2EL:
		return r.E2EL, true
	}
	return 0, false
}

// RequestOf converts a measured Record (records.jsonl) into a Request.
func RequestOf(rec *prober.Record) Request {
	r := Request{OK: rec.OK(), OutputTokens: rec.CompletionTokens, FinishReason: rec.FinishReason, ErrorClass: string(rec.Error), TPOT: -1}
	if !r.OK {
		r.OutputTokens = -1
		return r
	}
	r.TTFT = float64(rec.TTFT) / 1e6
	r.E2EL = float64(rec.E2E) / 1e6
	if _, _, ok := rec.TTFTOverhead(); ok {
		r.ServerTiming = true
		r.ServerQueue, r.ServerTTFT = float64(rec.ServerQueueTime)/1e6, float64(rec.ServerTTFT)/1e6
	}
	if tpot, ok := rec.TPOT(); ok {
		r.TPOT = float64(tpot) / 1e6
	}
	return r
}

// Total returns the step's request count (completed + failed).
func (s *Step) Total() int { return s.Completed + s.Failed }

// FromSweep builds the Evidence of an llmprobe sweep result: every step with
// its recorded figures and validity, and the fingerprint's fields. requests
// holds the per-request samples by step index (records.jsonl; nil: not
// recorded, and Missing says so).
func FromSweep(name string, res *sweep.Result, requests map[int][]Request) *Evidence {
	ev := &Evidence{Name: name, Format: FormatLLMProbe, Fields: map[string][]string{}, CostPerHour: res.CostPerHour}
	addFields(ev.Fields, FieldsOf(res.Fingerprint))
	if len(res.SLO) > 0 {
		ev.SLO = sloOfMS(res.SLO)
		ev.SLOSource = "the run's --goodput"
	}
	if requests == nil {
		ev.Missing = append(ev.Missing, "per-request samples (records.jsonl)")
	}
	for _, st := range res.Steps {
		s := Step{
			Label: levelLabel(st), Round: max(st.Round, 1),
			Completed: st.Stats.Completed, Failed: st.Stats.Failed, Duration: st.Stats.Duration,
			RateDuration: st.Stats.DrainCorrectedDuration,
			Throughput:   st.Stats.RequestThroughput, GoodputSLO: ev.SLO, GoodputSLOKnown: true,
			FinishReasons: maps.Clone(st.Stats.FinishReasons), ErrorClasses: maps.Clone(st.Stats.FailedByClass),
		}
		if s.FinishReasons == nil {
			s.FinishReasons = map[string]int{}
		}
		if s.ErrorClasses == nil {
			s.ErrorClasses = map[string]int{}
		}
		g := st.Stats.RequestGoodput
		s.Goodput = &g
		ot, gt := st.Stats.OutputThroughput, st.Stats.GoodOutputThroughput
		s.OutputThroughput = &ot
		if st.Stats.GoodOutputTokens > 0 || st.Stats.Good == 0 {
			// result.json before good_output_tokens was recorded reads 0.
			s.GoodOutputThroughput = &gt
		}
		switch e := st.Energy; {
		case e == nil:
			s.EnergyNote = "the run recorded no energy (written before llmprobe measured it)"
		case e.NotRecorded != "":
			s.EnergyNote = e.NotRecorded
		default:
			j := e.Joules
			s.Energy, s.EnergyMethod = &j, e.Method
		}
		if sv := st.Stats.ServerTiming; sv != nil {
			s.ServerTimingNote = sv.NotRecorded
		}
		v := st.Validity
		s.Validity = &v
		s.Percentiles = map[string]map[float64]float64{}
		for m, l := range map[string]sweep.Latency{MetricTTFT: st.Stats.TTFT, MetricTPOT: st.Stats.TPOT, MetricITL: st.Stats.ITL, MetricE2EL: st.Stats.E2EL} {
			if l.N == 0 {
				continue
			}
			p := map[float64]float64{50: l.P50, 90: l.P90, 99: l.P99}
			for _, q := range l.Percentiles {
				p[q.P] = q.Value
			}
			s.Percentiles[m] = p
		}
		if requests != nil {
			s.Requests = requests[st.Index]
			if s.Requests == nil {
				s.Requests = []Request{}
			}
		}
		ev.Steps = append(ev.Steps, s)
	}
	return ev
}

// levelLabel is a step's level label without its "/round=N" suffix.
func levelLabel(st *sweep.Step) string {
	switch st.Mode {
	case sweep.ModeClosed:
		return "concurrency=" + strconv.Itoa(st.Concurrency)
	}
	return "rate=" + rateText(st.Level)
}

// addFields merges one round's field values into a side's sets.
func addFields(dst map[string][]string, f map[string]string) {
	for k, v := range f {
		if v == "" || v == notRecorded {
			continue
		}
		if !slices.Contains(dst[k], v) {
			dst[k] = append(dst[k], v)
			slices.Sort(dst[k])
		}
	}
}

// Merge appends the steps of more (another round or level of the same
// side, in run order) to e, numbering each step's round after the rounds e
// already holds of its level, and merges fields, warnings and missing
// figures.
func (e *Evidence) Merge(more *Evidence) {
	last := map[string]int{}
	for _, s := range e.Steps {
		last[s.Label] = max(last[s.Label], s.Round)
	}
	base := map[string]int{}
	for k, v := range last {
		base[k] = v
	}
	for _, s := range more.Steps {
		s.Round += base[s.Label]
		e.Steps = append(e.Steps, s)
	}
	if e.Fields == nil {
		e.Fields = map[string][]string{}
	}
	for k, vs := range more.Fields {
		for _, v := range vs {
			addFields(e.Fields, map[string]string{k: v})
		}
	}
	for _, w := range more.Warnings {
		if !slices.Contains(e.Warnings, w) {
			e.Warnings = append(e.Warnings, w)
		}
	}
	for _, m := range more.Missing {
		if !slices.Contains(e.Missing, m) {
			e.Missing = append(e.Missing, m)
		}
	}
	if e.SLO.IsZero() {
		e.SLO, e.SLOSource = more.SLO, more.SLOSource
	}
	if e.CostPerHour == 0 {
		e.CostPerHour = more.CostPerHour
	}
}

// Rounds returns the number of distinct rounds of e.
func (e *Evidence) Rounds() int {
	seen := map[int]bool{}
	for _, s := range e.Steps {
		seen[s.Round] = true
	}
	return len(seen)
}
