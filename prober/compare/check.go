package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// SLOCheckPercentile is the percentile an SLO is checked on.
const SLOCheckPercentile = 99

// Check is the offline analysis of one input: per step, the error rate,
// the goodput ratio and each SLO's p99 against its threshold.
type Check struct {
	// Name, Format, Warnings and Missing are the Evidence's.
	Name     string   `json:"name"`
	Format   string   `json:"format"`
	Warnings []string `json:"warnings"`
	Missing  []string `json:"missing"`
	// SLO is the SLO checked (the --goodput given, else the input's own)
	// in ms by key, and SLOSource where it came from ("" without SLO).
	SLO       map[string]float64 `json:"slo_ms"`
	SLOSource string             `json:"slo_source,omitempty"`
	// Steps in the input's order.
	Steps []StepCheck `json:"steps"`
	// Outcome is decided on the valid steps only (a step whose recorded
	// validity is false is named in StepCheck.Invalid and never supports a
	// pass, nor a fail): OutcomeFail when an SLO check of a valid step
	// failed, OutcomeInconclusive when one could not be made, a step's
	// figures are not trusted (StepCheck.Problems) or no step is valid,
	// OutcomePass otherwise (also without SLO). A step without a recorded
	// validity (a foreign file) counts as valid.
	Outcome string `json:"outcome"`
	// OutcomeReason says why the outcome is inconclusive when the steps'
	// lines do not ("" otherwise): no valid step.
	OutcomeReason string `json:"outcome_reason,omitempty"`
	// CostPerHour is the price the costs were computed at (USD per hour; 0:
	// none given, no cost).
	CostPerHour float64 `json:"cost_per_hour_usd,omitempty"`
}

// StepCheck is one step's figures.
type StepCheck struct {
	Label     string `json:"label"`
	Round     int    `json:"round"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	// ErrorRate is failed / (completed + failed) (nil without requests).
	ErrorRate *float64 `json:"error_rate"`
	// GoodputRatio is good / completed requests, i.e. request_goodput /
	// request_throughput (nil: not recorded); GoodputNote says how it was
	// obtained or why it is missing.
	GoodputRatio *float64 `json:"goodput_ratio"`
	GoodputNote  string   `json:"goodput_note"`
	// SLO has one entry per SLO threshold.
	SLO []SLOResult `json:"slo"`
	// Problems say why the step's figures are not trusted (its summary
	// contradicts its own per-request samples: Step.Contradictions); a step
	// with a problem makes the outcome inconclusive.
	Problems []string `json:"problems,omitempty"`
	// Invalid names each validity flag the step recorded with its reason
	// ("client-saturated: send lag p99 ..."; nil: valid or not recorded).
	// An invalid step's SLO lines are shown but decide nothing.
	Invalid []string `json:"invalid,omitempty"`
	// CostPerMillion is the cost in USD per million good output tokens
	// (nil: no price, or not computable), GoodOutputThroughput the good
	// output tokens per second it rests on, and CostNote how they were
	// obtained (exact, approximated, a lower bound) or why not.
	CostPerMillion       *float64 `json:"cost_per_million_good_output_tokens,omitempty"`
	GoodOutputThroughput *float64 `json:"good_output_throughput,omitempty"`
	CostNote             string   `json:"cost_note,omitempty"`
}

// SLOResult is one SLO's percentile against its threshold.
type SLOResult struct {
	Metric      string  `json:"metric"`
	P           float64 `json:"p"`
	ThresholdMS float64 `json:"threshold_ms"`
	ValueMS     float64 `json:"value_ms"`
	// Status is ok (value <= threshold: PASS), failed (FAIL) or
	// not-recorded.
	Status Status `json:"status"`
	// N is the number of samples behind the value (0: not known);
	// Reliable is false when N < stats.MinSamples(P).
	N        int  `json:"n"`
	Reliable bool `json:"reliable"`
	// Source is "recorded" (the file's percentile) or "samples" (computed
	// from per-request samples).
	Source string `json:"source"`
	Detail string `json:"detail,omitempty"`
}

// CheckSLO analyzes one input under s (the --goodput given; the zero SLO
// uses the input's own, ev.SLO). It never fails: what the input does not
// record is reported as such.
func CheckSLO(ev *Evidence, s slo.SLO) *Check {
	c := &Check{Name: ev.Name, Format: ev.Format, Warnings: nonNil(ev.Warnings), Missing: nonNil(ev.Missing),
		SLO: map[string]float64{}, Steps: []StepCheck{}, Outcome: OutcomePass, CostPerHour: ev.CostPerHour}
	switch {
	case !s.IsZero():
		c.SLOSource = "--goodput"
	case !ev.SLO.IsZero():
		s, c.SLOSource = ev.SLO, ev.SLOSource
	}
	for _, t := range s.Thresholds() {
		c.SLO[t.Name] = float64(t.Value) / 1e6
	}
	failed, unknown := false, false
	var invalid []string
	valid := 0
	for i := range ev.Steps {
		st := &ev.Steps[i]
		sc := StepCheck{Label: st.Label, Round: st.Round, Completed: st.Completed, Failed: st.Failed, SLO: []SLOResult{}}
		if t := st.Total(); t > 0 {
			r := float64(st.Failed) / float64(t)
			sc.ErrorRate = &r
		}
		sc.GoodputRatio, sc.GoodputNote = goodputRatio(st, s)
		sc.CostPerMillion, sc.GoodOutputThroughput, sc.CostNote = stepCost(st, s, ev.CostPerHour)
		sc.Invalid = invalidText(st.Validity)
		counts := sc.Invalid == nil
		if counts {
			valid++
		} else {
			invalid = append(invalid, checkStepName(st))
		}
		if len(st.Contradictions) > 0 {
			sc.Problems = append(sc.Problems, contradictionText(st))
			unknown = unknown || counts
		}
		for _, t := range s.Thresholds() {
			r := checkOne(st, t)
			switch {
			case !counts:
			case r.Status == StatusFailed:
				failed = true
			case r.Status == StatusNotRecorded:
				unknown = true
			}
			sc.SLO = append(sc.SLO, r)
		}
		c.Steps = append(c.Steps, sc)
	}
	if valid == 0 && len(invalid) > 0 {
		unknown = true
		c.OutcomeReason = fmt.Sprintf("no valid step: %s did not pass its validity checks, and an invalid step's figures decide nothing",
			strings.Join(invalid, ", "))
	}
	switch {
	case unknown:
		c.Outcome = OutcomeInconclusive
	case failed:
		c.Outcome = OutcomeFail
	}
	return c
}

// ExitCode is the process exit code of the check: pass 0, fail 1,
// inconclusive 3.
func (c *Check) ExitCode() int {
	switch c.Outcome {
	case OutcomeFail:
		return ExitFail
	case OutcomeInconclusive:
		return ExitInconclusive
	}
	return ExitPass
}

// checkStepName is a step's name in a check: its label, and its round
// after the first.
func checkStepName(st *Step) string {
	if st.Round > 1 {
		return fmt.Sprintf("%s round %d", st.Label, st.Round)
	}
	return st.Label
}

// invalidText names each flag of an invalid step with its reason (nil: the
// step is valid, or its validity is not recorded).
func invalidText(v *sweep.Validity) []string {
	if v == nil || v.Valid {
		return nil
	}
	out := []string{}
	for i, f := range v.Flags {
		if i < len(v.Reasons) && v.Reasons[i] != "" {
			f += ": " + v.Reasons[i]
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		out = append(out, "invalid (no flag recorded)")
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// goodputRatio is the step's good share of completed requests under s:
// from per-request samples when there are some, else from the recorded
// request_goodput when it was computed under s (or under an SLO the file
// does not record, which the note says).
func goodputRatio(st *Step, s slo.SLO) (*float64, string) {
	if s.IsZero() {
		return nil, "no SLO (give --goodput): every success is good"
	}
	if st.Requests != nil {
		good, ok := 0, 0
		for _, q := range st.Requests {
			if q.OK {
				ok++
				if q.Good(s) {
					good++
				}
			}
		}
		if ok == 0 {
			return nil, "no successful request"
		}
		r := float64(good) / float64(ok)
		return &r, fmt.Sprintf("%d of %d completed requests met the SLO (per-request samples)", good, ok)
	}
	if st.Goodput == nil || !(st.Throughput > 0) {
		return nil, "not recorded: the input has neither request_goodput with request_throughput nor per-request samples"
	}
	r := *st.Goodput / st.Throughput
	switch {
	case st.GoodputSLOKnown && st.GoodputSLO == s:
		return &r, fmt.Sprintf("request_goodput %s / request_throughput %s", Num(*st.Goodput), Num(st.Throughput))
	case st.GoodputSLOKnown:
		return nil, fmt.Sprintf("not recorded under this SLO: the input's request_goodput counts the SLO %s, and it has no per-request samples to recount", st.GoodputSLO)
	}
	return &r, fmt.Sprintf("request_goodput %s / request_throughput %s, under the run's own --goodput (the file does not record which)",
		Num(*st.Goodput), Num(st.Throughput))
}

// checkOne compares the step's p99 of t's metric with t.
func checkOne(st *Step, t slo.Threshold) SLOResult {
	r := SLOResult{Metric: t.Name, P: SLOCheckPercentile, ThresholdMS: float64(t.Value) / 1e6}
	if v, ok := st.Percentiles[t.Name][SLOCheckPercentile]; ok && len(st.Contradictions) == 0 {
		r.ValueMS, r.Source = v, "recorded"
		r.N = st.Completed
		if rs, ok := latencySamples([]*Step{st}, t.Name); ok {
			r.N = len(rs[0])
		}
	} else if rs, ok := latencySamples([]*Step{st}, t.Name); ok && len(rs[0]) > 0 {
		r.ValueMS, r.Source, r.N = stats.Percentile(rs[0], SLOCheckPercentile), "samples", len(rs[0])
	} else {
		r.Status = StatusNotRecorded
		r.Detail = fmt.Sprintf("no p99 of %s recorded", t.Name)
		if ps := st.Percentiles[t.Name]; len(ps) > 0 {
			hi := math.Inf(-1)
			for p := range ps {
				hi = math.Max(hi, p)
			}
			r.Detail += fmt.Sprintf(" (the highest recorded is p%s = %s ms, which does not decide a p99 SLO)", stats.PercentileKey(hi), Num(ps[hi]))
		}
		return r
	}
	r.Reliable = r.N >= stats.MinSamples(SLOCheckPercentile)
	if r.ValueMS <= r.ThresholdMS {
		r.Status = StatusOK
	} else {
		r.Status = StatusFailed
	}
	if !r.Reliable && r.N > 0 {
		r.Detail = fmt.Sprintf("p99 of %d samples is unreliable: needs %d", r.N, stats.MinSamples(SLOCheckPercentile))
	}
	return r
}
