package main

import (
	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/config"
)

// compareCostFlags are compare's per-side prices: each side's
// --<side>-cost-per-hour, defaulting to the shared --cost-per-hour (a
// sweep flag).
type compareCostFlags struct {
	baseline, candidate       float64
	baselineSet, candidateSet bool
}

// addCompareCostFlags adds --baseline-cost-per-hour and
// --candidate-cost-per-hour to compare.
func addCompareCostFlags(cmd *kingpin.CmdClause, f *compareCostFlags) {
	cmd.Flag("baseline-cost-per-hour", "Price of the baseline's serving in USD per hour (default --cost-per-hour).").
		IsSetByUser(&f.baselineSet).Float64Var(&f.baseline)
	cmd.Flag("candidate-cost-per-hour", "Price of the candidate's serving in USD per hour (default --cost-per-hour). "+
		"With both prices, --max-regression cost=5% judges the cost per million good output tokens (an increase is a regression).").
		IsSetByUser(&f.candidateSet).Float64Var(&f.candidate)
}

// set reports whether the side's own price flag was given.
func (f *compareCostFlags) set(side string) bool {
	if side == sideCandidate {
		return f.candidateSet
	}
	return f.baselineSet
}

// price returns the side's price: its own flag when given, else shared.
func (f *compareCostFlags) price(side string, shared float64) float64 {
	switch {
	case !f.set(side):
		return shared
	case side == sideCandidate:
		return f.candidate
	}
	return f.baseline
}

// targetCosts is every target's cost_per_hour, for
// llmprobe_target_cost_per_hour.
func targetCosts(c *config.Config) map[string]float64 {
	out := make(map[string]float64, len(c.Targets))
	for _, t := range c.Targets {
		out[t.Name] = t.CostPerHour
	}
	return out
}
