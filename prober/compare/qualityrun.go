package compare

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kit/log"
	kitlevel "github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
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
	sp, err := sweep.Prepare(ctx, cfg, sweep.Options{Logger: logger, Args: p.Args})
	if err != nil {
		return nil, "", err
	}
	defer sp.Close()
	c, api, redact := sp.CheckClient()
	top, note := qualityTopLogprobs, ""
	reps := p.qualitySettings().Repeats
	out := make([]answer.Result, 0, reps*len(p.AnswerChecks.Items))
	for n := range reps * len(p.AnswerChecks.Items) {
		it := p.AnswerChecks.Items[n%len(p.AnswerChecks.Items)]
		send := func(top int) answer.Result {
			id := fmt.Sprintf("llmprobe-compare-%s-check-%d", side, n+1)
			req, err := it.Request(api, id, answer.RequestOptions{TopLogprobs: top})
			if err != nil {
				return answer.Result{Check: it.ID, Kind: it.Kind, Outcome: answer.Error, RequestID: id, Reason: err.Error()}
			}
			rec := &prober.Record{RequestID: id, Scheduled: time.Now(), Model: sp.Model()}
			c.Do(ctx, req, rec)
			return answer.Evaluate(it, &req, rec, redact)
		}
		r := send(top)
		if n == 0 && r.Outcome == answer.Error && ctx.Err() == nil {
			if again := send(0); again.Outcome != answer.Error {
				top, r = 0, again
				note = fmt.Sprintf("the %s refused logprobs: its checks ran without them (its top-2 margins are unknown; "+
					"on the baseline, every divergence then counts as a mismatch)", side)
				kitlevel.Warn(logger).Log("msg", "answer checks: the server refused logprobs, running without")
			}
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		out = append(out, r)
	}
	kitlevel.Info(logger).Log("msg", "answer checks done", "set", p.AnswerChecks.Name, "checks", len(out))
	return out, note, nil
}
