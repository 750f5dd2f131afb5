package rundir

import (
	"errors"
	"fmt"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// AnalyzeOptions are the settings of Analyze (llmprobe analyze's flags).
type AnalyzeOptions struct {
	// SLO checks each input and decides the comparison's good requests
	// (zero: each input's own; for two inputs, theirs when they agree).
	SLO slo.SLO
	// Thresholds, Vary and Seed are the comparison's (compare.Options).
	Thresholds []compare.Threshold
	Vary       []string
	Seed       uint64
	// CostPerHour is the price of every input in USD per hour (0: the
	// price each recorded).
	CostPerHour float64
	// Given says which settings the command line gave: without an SLO the
	// goodput figure is dropped unless the thresholds were given, and a
	// compare run directory's own settings replace those not given.
	Given compare.Given
}

// Analyze reads every path (LoadInput) and analyzes them offline: each
// input's SLO check (compare.CheckSLO) and, for two inputs (baseline first)
// or one compare run directory, the comparison (compare.Compare) with the
// settings of o. An llmprobe run directory must verify against its manifest
// (an edited result.json is an error, not a verdict); an input without one
// is analyzed and listed in the output's Unverified. The output's ExitCode is analyze's. Inputs that cannot be
// read return a nil output and an error joining one error per input, each
// one line naming its path; so does a compare run directory given with
// another input.
func Analyze(paths []string, o AnalyzeOptions) (*report.AnalyzeOutput, error) {
	var ins []*Input
	var errs []error
	for _, p := range paths {
		in, err := LoadInput(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		setPrice(in, o.CostPerHour)
		ins = append(ins, in)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := &report.AnalyzeOutput{Inputs: []*compare.Check{}}
	for _, in := range ins {
		if in.Unverified != "" {
			if out.Unverified == nil {
				out.Unverified = map[string]string{}
			}
			out.Unverified[in.Path] = in.Unverified
		}
	}
	var pair *ComparePair
	switch {
	case len(ins) == 1 && ins[0].Pair != nil:
		pair = ins[0].Pair
	case len(ins) == 2 && ins[0].Pair == nil && ins[1].Pair == nil:
		pair = &ComparePair{Baseline: ins[0].Evidence, Candidate: ins[1].Evidence}
	}
	for _, in := range ins {
		if in.Pair != nil {
			if len(ins) > 1 {
				return nil, fmt.Errorf("%s: a compare run directory is analyzed alone", in.Path)
			}
			continue
		}
		out.Inputs = append(out.Inputs, compare.CheckSLO(in.Evidence, o.SLO))
	}
	if pair != nil {
		co := compare.Options{Thresholds: o.Thresholds, Vary: o.Vary, SLO: o.SLO, Seed: o.Seed}
		if co.SLO.IsZero() && pair.Baseline.SLO == pair.Candidate.SLO {
			co.SLO = pair.Baseline.SLO // both inputs' own SLO, when they agree
		}
		if co.SLO.IsZero() && !o.Given.Thresholds {
			co.Thresholds = compare.DropGoodput(co.Thresholds)
		}
		if pair.Stored != nil {
			co = pair.Stored.Options(co, o.Given)
			out.Decision, out.RollbackIf = pair.Stored.Decision, pair.Stored.RollbackIf
			out.Sequential = pair.Stored.Sequential
		}
		out.Comparison = compare.Compare(pair.Baseline, pair.Candidate, co)
		if pair.Stored != nil {
			pair.Stored.Reapply(out.Comparison) // an interrupted compare stays inconclusive
		}
		out.Prices = [2]float64{pair.Baseline.CostPerHour, pair.Candidate.CostPerHour}
		out.SLO = compare.SLOMS(co.SLO)
	}
	return out, nil
}

// setPrice gives every evidence of in the price (analyze's
// --cost-per-hour); 0 keeps the price each recorded.
func setPrice(in *Input, price float64) {
	if !(price > 0) {
		return
	}
	evs := []*compare.Evidence{in.Evidence}
	if in.Pair != nil {
		evs = append(evs, in.Pair.Baseline, in.Pair.Candidate)
	}
	for _, ev := range evs {
		if ev != nil {
			ev.CostPerHour = price
		}
	}
}
