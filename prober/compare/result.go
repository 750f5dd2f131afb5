package compare

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/redact"
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
	// Attempt is 2 for the rerun of a round whose client was flagged
	// (omitted for a first attempt); Discarded, when set, says why this
	// attempt's evidence does not count (it was rerun: Procedure.Run).
	Attempt   int    `json:"attempt,omitempty"`
	Discarded string `json:"discarded,omitempty"`
}

// Side identifies one side in result.json.
type Side struct {
	// Target is the redacted base URL; Model the model requested (the
	// first round's when the config names none).
	Target string `json:"target"`
	Model  string `json:"model"`
	// CostPerHour is the side's price in USD per hour (0: none).
	CostPerHour float64 `json:"cost_per_hour_usd,omitempty"`
	// GPUMetricsURL is the side's DCGM exporter (redacted; "": none, its
	// energy not-recorded) and GPUSelector the selector of its GPUs.
	GPUMetricsURL string `json:"gpu_metrics_url,omitempty"`
	GPUSelector   string `json:"gpu_selector,omitempty"`
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
	Order         string `json:"order"`
	Seed          int64  `json:"seed"`
	PromptNonce   int64  `json:"prompt_nonce,omitempty"`
	MaxRegression string `json:"max_regression"`
	// Compared is the thresholds compared (FormatThresholds): MaxRegression
	// without goodput when there was no SLO. A result.json without it
	// (older llmprobe) compared MaxRegression's, goodput dropped when
	// goodput_ms is empty.
	Compared string             `json:"compared,omitempty"`
	Vary     []string           `json:"vary"`
	SLO      map[string]float64 `json:"goodput_ms"`
	// BootstrapIters is Procedure.Iters.
	BootstrapIters int `json:"bootstrap_iters"`
	// Rounds lists every round that measured something, in order.
	Rounds []Round `json:"rounds"`
	// Sequential is the design and the looks of a sequential comparison
	// (Procedure.Budget; nil: the fixed design, one look).
	Sequential *Sequential `json:"sequential,omitempty"`
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
		if r.Compared != "" {
			if th, err := ParseThresholds(r.Compared); err == nil {
				o.Thresholds = th
			}
		} else if th, err := ParseThresholds(r.MaxRegression); err == nil {
			if len(r.SLO) == 0 {
				th = DropGoodput(th) // as compare did: no SLO, no goodput
			}
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
	o.Z = r.Sequential.Z() // the last look's boundaries
	o.ZPass = r.Sequential.ZPass()
	o.Reruns = r.Reruns()
	return o
}

// Reruns names the rounds rerun because their client was flagged, as
// Procedure.Run hands them to Compare (Options.Reruns).
func (r *Result) Reruns() []string {
	var out []string
	for _, rd := range r.Rounds {
		if rd.Discarded != "" {
			out = append(out, fmt.Sprintf("round %d (%s) rerun: %s", rd.Round, rd.Side, strings.TrimPrefix(rd.Discarded, discardedClient)))
		}
	}
	return out
}

// newResult is the Result of p before its first round.
func (p *Procedure) newResult() *Result {
	return &Result{
		Schema: ResultSchema, Decision: p.Decision, RollbackIf: p.RollbackIf,
		Baseline:  p.side(&p.Baseline),
		Candidate: p.side(&p.Candidate),
		Order:     p.Order, Seed: p.Seed, PromptNonce: p.Baseline.PromptNonce, MaxRegression: p.MaxRegression, Compared: FormatThresholds(p.Thresholds),
		Vary: p.Vary, SLO: SLOMS(p.Baseline.SLO),
		BootstrapIters: p.Iters, Rounds: []Round{},
	}
}

// side is the result.json identification of a side's config.
func (p *Procedure) side(c *sweep.Config) Side {
	return Side{Target: redact.Text(c.Target), Model: c.Model, CostPerHour: c.CostPerHour,
		GPUMetricsURL: redact.Text(c.GPUMetricsURL), GPUSelector: c.GPUSelector}
}

// finish sets the verdict; an incomplete comparison is inconclusive,
// naming why it stopped.
func (r *Result) finish(v *Verdict, complete bool, stopReason string) {
	if !complete {
		markIncomplete(v, stopReason)
	}
	r.Verdict, r.ExitCode, r.Complete, r.Result = v.Outcome, v.ExitCode(), complete, v
}

// markIncomplete makes v the verdict of a comparison that stopped early:
// inconclusive, naming why, whatever its rounds say.
func markIncomplete(v *Verdict, stopReason string) {
	v.Outcome = OutcomeInconclusive
	v.Reasons = append([]string{stopReason}, v.Reasons...)
	v.Missing = append([]string{"every round of the comparison, complete"}, v.Missing...)
}

// Reapply does to v, a verdict re-derived from the stored comparison's
// rounds (llmprobe analyze), what finishing the comparison did to its own:
// its quality section, when it has one, is judged again from the stored
// checks and settings and folded in (ApplyQuality); a comparison that did not complete is inconclusive, naming why it
// stopped (the first of its stored reasons).
func (r *Result) Reapply(v *Verdict) {
	r.Sequential.apply(v)
	if r.Result != nil && r.Result.Quality != nil {
		sq := r.Result.Quality
		ApplyQuality(v, JudgeQuality(sq.QualitySettings, slices.Clone(sq.Checks), slices.Clone(sq.Notes)))
	}
	if r.Complete {
		return
	}
	reason := "the comparison did not complete"
	if r.Result != nil && len(r.Result.Reasons) > 0 {
		reason = r.Result.Reasons[0]
	}
	markIncomplete(v, reason)
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
