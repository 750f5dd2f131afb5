package manager

import (
	"context"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// runSession runs a multi-turn probe's session (workload.MultiTurn) from
// the arrival that fire prepared: rec is turn 1's Record, item its message.
// Each turn is finished like a single request (observers, rings);
// the arrival's slot is held for the whole session, so the probe's
// max_concurrency counts sessions in flight. How the session ended is
// logged at debug level.
func (p *probeRunner) runSession(ctx context.Context, rec *prober.Record, c *client.Client, tok workload.Tokenizer, item workload.Item, maxModelLen int) {
	t := p.t
	first := rec
	s := endpoint.Session{
		ID: t.m.requestID("session-"), Client: c, Sessions: p.sessions, Index: item.Index, Tokenizer: tok,
		First: item, Scheduled: rec.Scheduled, QueueWait: rec.QueueWait,
		IgnoreEOS: p.cfg.Workload.IgnoreEOSOrDefault(), MaxModelLen: maxModelLen,
		Features: p.features.Draw(p.cfg.Seed, item.Index), Header: t.sloHeader(),
		NewRecord: func(turn int) *prober.Record {
			if turn == 1 {
				return first
			}
			return &prober.Record{Target: first.Target, Probe: first.Probe, Model: first.Model, RequestID: t.m.requestID("")}
		},
		Done: func(r *prober.Record, _ string) {
			if r.ErrorMessage != "" {
				r.ErrorMessage = t.ep.Redact(r.ErrorMessage)
			}
			p.finish(r)
		},
	}
	end := s.Run(ctx)
	level.Debug(p.logger).Log("msg", "session ended", "session_id", s.ID, "turns", end.Turns, "reason", end.Reason)
}
