package sweep

import (
	"context"
	"fmt"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
)

// Answer checks in a sweep (Config.AnswerChecks): once the last step of a
// complete sweep has finished, the check set is sent once, item after item,
// through the sweep's own request path (the client of its load, as
// compare's quality section sends it: answer.Send), each reply judged.
// They are no step's requests: no step's figures, knee or records.jsonl
// count them. The outcome is Result.Answers (result.json "answers").

// Answers is result.json's "answers": the answer checks a complete sweep
// sent after its last step.
type Answers struct {
	// Set names the check set ("builtin" or the file's path); SHA256 is
	// the file's hex SHA-256 (empty for builtin).
	Set    string `json:"set"`
	SHA256 string `json:"set_sha256,omitempty"`
	// Checks counts the checks sent; Pass, Fail and Error count them by
	// outcome.
	Checks int `json:"checks"`
	Pass   int `json:"pass"`
	Fail   int `json:"fail"`
	Error  int `json:"error"`
	// PassRatio is Pass / (Pass + Fail): the share of the judged checks
	// that passed (an error is no evidence about the answers, as in the
	// daemon's pass-ratio rules); nil when none was judged.
	PassRatio *float64 `json:"pass_ratio"`
	// Results are the checks in the order sent, each with its reply
	// (redacted with the target's secrets, at most answer.MaxReplyBytes)
	// and request id.
	Results []answer.Result `json:"results"`
}

// NewAnswers summarizes the results of a set's checks.
func NewAnswers(set *answer.Set, results []answer.Result) *Answers {
	t := answer.Count(results)
	a := &Answers{Set: set.Name, SHA256: set.SHA256, Checks: len(results), Pass: t.Pass, Fail: t.Fail, Error: t.Error,
		Results: results}
	if a.Results == nil {
		a.Results = []answer.Result{}
	}
	if r, ok := t.PassRatio(); ok {
		a.PassRatio = &r
	}
	return a
}

// Failing returns the checks that did not pass (fail or error), in the
// order sent.
func (a *Answers) Failing() []answer.Result {
	var out []answer.Result
	for _, r := range a.Results {
		if r.Outcome != answer.Pass {
			out = append(out, r)
		}
	}
	return out
}

// validateAnswerChecks checks that every check of the set can be sent to
// the sweep's API: one with a reply to judge, and messages only to chat.
func (c *Config) validateAnswerChecks() error {
	s := c.AnswerChecks
	switch {
	case s == nil:
		return nil
	case c.api().Pooling:
		return fieldErr("AnswerChecks", "answer checks judge a generated reply: they need {API} %s, not %s",
			client.NamesWith(client.Generating, "or"), c.API)
	case len(s.Items) == 0:
		return fieldErr("AnswerChecks", "the set %s has no checks", s.Name)
	}
	for _, it := range s.Items {
		if _, err := it.Request(c.API, "check", answer.RequestOptions{}); err != nil {
			return fieldErr("AnswerChecks", "check %s: %w", it.ID, err)
		}
	}
	return nil
}

// sendAnswerChecks sends the sweep's check set once through its client,
// without log-probabilities, and returns its summary (nil when ctx ended
// first: the sweep is then incomplete).
func (r *runner) sendAnswerChecks(ctx context.Context) *Answers {
	set := r.cfg.AnswerChecks
	level.Info(r.logger).Log("msg", "answer checks: sending the set after the last step", "set", set.Name, "checks", len(set.Items))
	results, _, err := answer.Send(ctx, r.client, set, answer.SendOptions{API: r.cfg.API, Model: r.model, Redact: r.ep.Redact,
		IDPrefix: fmt.Sprintf("llmprobe-%s-check-", r.runID)})
	if err != nil {
		return nil
	}
	a := NewAnswers(set, results)
	ratio := "none judged"
	if a.PassRatio != nil {
		ratio = fmt.Sprintf("%.3g", *a.PassRatio)
	}
	level.Info(r.logger).Log("msg", fmt.Sprintf("answer checks done: %d of %d passed", a.Pass, a.Checks), "set", set.Name,
		"pass", a.Pass, "fail", a.Fail, "error", a.Error, "pass_ratio", ratio)
	for _, f := range a.Failing() {
		level.Debug(r.logger).Log("msg", "answer check did not pass", "check", f.Check, "outcome", f.Outcome, "reason", f.Reason,
			"request_id", f.RequestID)
	}
	return a
}
