package compare

import (
	"context"
	"fmt"

	"github.com/go-kit/log"
	kitlevel "github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// qualityTopLogprobs is how many log-probabilities per token a check asks
// for: two give the top-2 margin.
const qualityTopLogprobs = 2

// quality runs the check set against both sides (baseline first), one
// check after another, the whole set Repeats times, and judges the
// section. A side whose first check
// fails with logprobs asked and passes without runs without (a note says
// so). The error is a side's preflight failing or ctx ending.
func (p *Procedure) quality(ctx context.Context) (*Quality, error) {
	var res [2][]answer.Result
	var notes []string
	for i, side := range []string{SideBaseline, SideCandidate} {
		r, note, err := p.runChecks(ctx, side)
		if err != nil {
			return nil, fmt.Errorf("answer checks on the %s: %w", side, err)
		}
		res[i] = r
		if note != "" {
			notes = append(notes, note)
		}
	}
	return JudgeQuality(p.qualitySettings(), PairChecks(res[0], res[1]), notes), nil
}

// qualitySettings are the procedure's quality settings, defaults filled.
func (p *Procedure) qualitySettings() QualitySettings {
	s := QualitySettings{Set: p.AnswerChecks.Name, LowMargin: p.LowMargin, Tolerance: p.QualityTolerance,
		Repeats: p.AnswerRepeats, Iters: p.Iters, Seed: uint64(p.Seed), Conf: DefaultConf}
	if s.Repeats <= 0 {
		s.Repeats = DefaultAnswerRepeats
	}
	if s.LowMargin == 0 {
		s.LowMargin = DefaultLowMargin
	}
	if s.Tolerance == 0 {
		s.Tolerance = DefaultQualityTolerance
	}
	if s.Iters <= 0 {
		s.Iters = DefaultIters
	}
	return s
}

// runChecks sends every check of the set to one side through its sweep's
// request path (sweep.Prepare: the side's target, model, API, key and
// HTTP settings) and judges each reply.
func (p *Procedure) runChecks(ctx context.Context, side string) ([]answer.Result, string, error) {
	logger := log.With(p.logger(), "side", side)
	cfg := *p.config(side)
	cfg.Rounds = 1
	cfg.Name = "quality-" + side
	cfg.AnswerChecks = nil // sent here, not by the sweep
	sp, err := sweep.Prepare(ctx, cfg, sweep.Options{Logger: logger, Args: p.Args})
	if err != nil {
		return nil, "", err
	}
	defer sp.Close()
	c, api, redact := sp.CheckClient()
	out, refused, err := answer.Send(ctx, c, p.AnswerChecks, answer.SendOptions{API: api, Model: sp.Model(), Redact: redact,
		IDPrefix: "llmprobe-compare-" + side + "-check-", Repeats: p.qualitySettings().Repeats, TopLogprobs: qualityTopLogprobs})
	if err != nil {
		return nil, "", err
	}
	note := ""
	if refused {
		note = fmt.Sprintf("the %s refused logprobs: its checks ran without them (its top-2 margins are unknown; "+
			"on the baseline, every divergence then counts as a mismatch)", side)
		kitlevel.Warn(logger).Log("msg", "answer checks: the server refused logprobs, running without")
	}
	kitlevel.Info(logger).Log("msg", "answer checks done", "set", p.AnswerChecks.Name, "checks", len(out))
	return out, note, nil
}
