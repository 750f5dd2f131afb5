package compare

import (
	"fmt"
	"slices"
	"time"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// ResultSchema is the version of a compare run's result.json
// (Result.Schema, key llmprobe_compare_schema).
const ResultSchema = 1

// Round is one round of a comparison, as result.json lists it.
type Round struct {
	Round int    `json:"round"`
	Side  string `json:"side"`
	Seed  int64  `json:"seed"`
	// PromptNonce is the round's prompt nonce (every round has its own,
	// derived from Result.PromptNonce: the rounds of a pair share the
	// lengths and arrivals, never the texts).
	PromptNonce int64 `json:"prompt_nonce,omitempty"`
	// Dir is the round's sweep run directory, relative to the compare run
	// directory ("" when the round was not written to one).
	Dir      string    `json:"dir"`
	Complete bool      `json:"complete"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
}

// Side identifies one side in result.json.
type Side struct {
	// Target is the redacted base URL; Model the model requested (the
	// first round's when the config names none).
	Target string `json:"target"`
	Model  string `json:"model"`
	// CostPerHour is the side's price in USD per hour (0: none).
	CostPerHour float64 `json:"cost_per_hour_usd,omitempty"`
}

// Result is the outcome of a Procedure: a compare run directory's
// result.json.
type Result struct {
	Schema int `json:"llmprobe_compare_schema"`
	// Verdict and ExitCode are Result.Outcome and its exit code; Complete
	// is false when a round failed, was interrupted or did not complete.
	Verdict    string `json:"verdict"`
	ExitCode   int    `json:"exit_code"`
	Complete   bool   `json:"complete"`
	Decision   string `json:"decision,omitempty"`
	RollbackIf string `json:"rollback_if,omitempty"`
	Baseline   Side   `json:"baseline"`
	Candidate  Side   `json:"candidate"`
	// The settings: Procedure's.
	Order         string             `json:"order"`
	Seed          int64              `json:"seed"`
	PromptNonce   int64              `json:"prompt_nonce,omitempty"`
	MaxRegression string             `json:"max_regression"`
	Vary          []string           `json:"vary"`
	SLO           map[string]float64 `json:"goodput_ms"`
	// BootstrapIters is Procedure.Iters.
	BootstrapIters int `json:"bootstrap_iters"`
	// Rounds lists every round that measured something, in order.
	Rounds []Round `json:"rounds"`
	// Result is the verdict.
	Result *Verdict `json:"result"`
}

// Side returns the identification of the named side (SideBaseline or
// SideCandidate).
func (r *Result) Side(name string) *Side {
	if name == SideCandidate {
		return &r.Candidate
	}
	return &r.Baseline
}

// Given says which comparison settings a re-analysis was given (the others
// come from the stored Result: Result.Options).
type Given struct {
	Thresholds, Vary, SLO, Seed bool
}

// Options are the comparison settings the run used, in o where given does
// not say the re-analysis gave its own (llmprobe analyze of a compare run
// directory re-derives the same verdict).
func (r *Result) Options(o Options, given Given) Options {
	if !given.Thresholds {
		if th, err := ParseThresholds(r.MaxRegression); err == nil {
			o.Thresholds = th
		}
	}
	if !given.Vary && r.Vary != nil {
		o.Vary = r.Vary
	}
	if !given.SLO && len(r.SLO) > 0 {
		var pairs []string
		for k, v := range r.SLO {
			pairs = append(pairs, fmt.Sprintf("%s:%v", k, v))
		}
		slices.Sort(pairs)
		if s, err := sweep.ParseGoodput(pairs); err == nil {
			o.SLO = s
		}
	}
	if r.BootstrapIters > 0 {
		o.Iters = r.BootstrapIters
	}
	if !given.Seed {
		o.Seed = uint64(r.Seed)
	}
	return o
}

// newResult is the Result of p before its first round.
func (p *Procedure) newResult() *Result {
	return &Result{
		Schema: ResultSchema, Decision: p.Decision, RollbackIf: p.RollbackIf,
		Baseline:  Side{Target: fingerprint.RedactText(p.Baseline.Target), Model: p.Baseline.Model, CostPerHour: p.Baseline.CostPerHour},
		Candidate: Side{Target: fingerprint.RedactText(p.Candidate.Target), Model: p.Candidate.Model, CostPerHour: p.Candidate.CostPerHour},
		Order:     p.Order, Seed: p.Seed, PromptNonce: p.Baseline.PromptNonce, MaxRegression: p.MaxRegression, Vary: p.Vary, SLO: SLOMS(p.Baseline.SLO),
		BootstrapIters: p.Iters, Rounds: []Round{},
	}
}

// finish sets the verdict; an incomplete comparison is inconclusive,
// naming why it stopped.
func (r *Result) finish(v *Verdict, complete bool, stopReason string) {
	if !complete {
		v.Outcome = OutcomeInconclusive
		v.Reasons = append([]string{stopReason}, v.Reasons...)
		v.Missing = append([]string{"every round of the comparison, complete"}, v.Missing...)
	}
	r.Verdict, r.ExitCode, r.Complete, r.Result = v.Outcome, v.ExitCode(), complete, v
}

// SLOMS is s in milliseconds by vLLM key (ttft, tpot, e2el), as
// result.json's goodput_ms writes it; empty for no SLO.
func SLOMS(s slo.SLO) map[string]float64 {
	out := map[string]float64{}
	for _, t := range s.Thresholds() {
		out[t.Name] = float64(t.Value) / 1e6
	}
	return out
}
