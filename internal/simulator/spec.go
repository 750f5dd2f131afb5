package simulator

import (
	"fmt"
	"math"

	"github.com/alecthomas/kingpin/v2"
)

// MaxSpecDraftTokens bounds --spec-draft-tokens (llama-server's
// --draft-max defaults to 16).
const MaxSpecDraftTokens = 256

// addSpecFlags registers --spec-draft-tokens and --spec-acceptance.
func addSpecFlags(cmd *kingpin.CmdClause, c *Config) {
	cmd.Flag("spec-draft-tokens", "Speculative decoding (llamacpp persona only): each decode step drafts K tokens and the "+
		"response's timings carry draft_n and draft_n_accepted, as llama-server's do; 0 (default) is off.").
		Default(fmt.Sprint(c.SpecDraftTokens)).IntVar(&c.SpecDraftTokens)
	cmd.Flag("spec-acceptance", "With --spec-draft-tokens K: the expected number of draft tokens a step accepts is P x K "+
		"(see docs/simulator.md for the rule).").Default(fmt.Sprint(c.SpecAcceptance)).Float64Var(&c.SpecAcceptance)
}

// validateSpec checks the speculative decoding options.
func (c Config) validateSpec() error {
	switch {
	case c.SpecDraftTokens < 0 || c.SpecDraftTokens > MaxSpecDraftTokens:
		return fmt.Errorf("--spec-draft-tokens must be in [0, %d], got %d", MaxSpecDraftTokens, c.SpecDraftTokens)
	case !isProbability(c.SpecAcceptance):
		return fmt.Errorf("--spec-acceptance must be in [0, 1], got %v", c.SpecAcceptance)
	case c.SpecDraftTokens > 0 && c.Engine != EngineLlamaCpp:
		return fmt.Errorf("--spec-draft-tokens is served by the llamacpp persona only, not --engine %q", c.Engine)
	}
	return nil
}

// specDraft is the speculative decoding of a response of n output tokens
// with k draft tokens per step and acceptance p, a deterministic rule: the
// response took s = ceil(n / (1 + p*k)) decode steps, each drafting k
// tokens (drafted = k*s), and every output token a step did not produce
// itself was an accepted draft token (accepted = n - s, at most drafted).
// Zero k or n is no speculative decoding (0, 0), which llama-server does
// not report.
func specDraft(n, k int, p float64) (drafted, accepted int) {
	if n <= 0 || k <= 0 {
		return 0, 0
	}
	s := int(math.Ceil(float64(n) / (1 + p*float64(k))))
	s = min(max(s, 1), n)
	return k * s, n - s
}

// specTimings adds the draft figures of a response of n output tokens to
// llama-server's timings t when the simulator drafts (--spec-draft-tokens),
// and notes them on the request's trace record.
func specTimings(t map[string]any, n, k int, p float64, tr *TraceRecord) {
	drafted, accepted := specDraft(n, k, p)
	if drafted > 0 {
		t["draft_n"], t["draft_n_accepted"] = drafted, accepted
		tr.DraftTokens, tr.DraftAccepted = drafted, accepted
	}
}
