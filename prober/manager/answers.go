package manager

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// An answer-check probe (config answer_checks) sends its check set one
// check after another, every answer_checks.every from the start of one run
// to the start of the next (a run that overruns skips the slots it
// covered). Each check is a request like a probe's (same endpoint, client,
// measurement, SLO verdict, Observe under the probe's label); its judged
// Result goes to the AnswerObservers, with the reply and the reason passed
// through the target's Redactor (a server may echo a secret).

// newAnswerRunner builds the runner of an answer-check probe: no workload,
// no prompts built ahead.
func newAnswerRunner(t *targetRunner, pc config.ProbeConfig, key string) (*probeRunner, error) {
	if pc.AnswerChecks.CheckSet() == nil {
		return nil, fmt.Errorf("probe %q: %w", pc.Name, errNoSet)
	}
	return &probeRunner{
		t:      t,
		cfg:    pc,
		key:    key,
		logger: log.With(t.logger, "probe", pc.Name),
		done:   make(chan struct{}),
	}, nil
}

// startAnswers starts the loop of an answer-check probe.
func (p *probeRunner) startAnswers(ctx context.Context) {
	a := p.cfg.AnswerChecks
	set := a.CheckSet()
	tname, pname := p.t.cfg.Name, p.cfg.Name
	s := p.t.slo.Load()
	// The exported rate is one run per every, not the checks' mean
	// request rate: the checks come in a burst per run, and
	// LLMProbeProbeNotRunning (silent for 20 mean intervals at this rate)
	// must not fire in the pause between two runs.
	rate := 1 / a.Every.Seconds()
	ids := make([]string, len(set.Items))
	for i, it := range set.Items {
		ids[i] = it.ID
	}
	p.t.m.obs.ProbeStarted(tname, pname, ProbeSettings{Rate: rate, SLO: s.SLO, GoodputObjective: s.Objective, Start: time.Now(),
		AnswerChecks: ids})
	level.Info(p.logger).Log("msg", "answer checks", "set", set.Name, "checks", len(set.Items), "every", a.Every)
	go func() {
		defer close(p.done)
		next := time.Now()
		for {
			for _, it := range set.Items {
				if ctx.Err() != nil {
					return
				}
				p.check(ctx, it)
			}
			next = next.Add(a.Every)
			if now := time.Now(); !next.After(now) {
				next = next.Add(a.Every * (now.Sub(next)/a.Every + 1)) // overran: the next slot ahead
			}
			t := time.NewTimer(time.Until(next))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// check sends one check, records it like a probe request and hands its
// Result to the AnswerObservers. A check canceled by a stop or reload is
// not judged (it says nothing about the answers).
func (p *probeRunner) check(ctx context.Context, it *answer.Item) {
	defer func() {
		if v := recover(); v != nil {
			p.logPanic(v, debug.Stack())
		}
	}()
	t := p.t
	obs := t.m.obs
	tname, pname := t.cfg.Name, p.cfg.Name
	now := time.Now()
	obs.SetLastArrival(tname, pname, now)
	rec := &prober.Record{Target: tname, Probe: pname, RequestID: t.m.requestID(""), Scheduled: now}
	obs.InFlight(tname, pname, 1)
	defer obs.InFlight(tname, pname, -1)

	var res answer.Result
	req, ok := p.sendCheck(ctx, it, rec)
	if !ok {
		res = answer.Result{Check: it.ID, Kind: it.Kind, Outcome: answer.Error, RequestID: rec.RequestID, Time: rec.WallStart,
			Reason: t.ep.Redact(string(rec.Error) + ": " + rec.ErrorMessage)}
	} else {
		res = answer.Evaluate(it, req, rec, t.ep.Redact)
	}
	if rec.Error == prober.ClassCanceled || ctx.Err() != nil {
		return
	}
	if res.Outcome != answer.Pass {
		level.Debug(p.logger).Log("msg", "answer check did not pass", "check", it.ID, "outcome", res.Outcome, "reason", res.Reason)
	}
	obs.AnswerChecked(tname, pname, res)
}

// sendCheck sends the check; ok false when it failed before sending (rec
// is then finished as failed).
func (p *probeRunner) sendCheck(ctx context.Context, it *answer.Item, rec *prober.Record) (*client.Request, bool) {
	t := p.t
	c, _, ok := p.client(ctx, rec)
	if !ok {
		return nil, false
	}
	req, err := it.Request(t.cfg.API, rec.RequestID, answer.RequestOptions{})
	if err != nil { // a messages check on a completions target: refused at load
		p.fail(ctx, rec, prober.ClassInvalidResponse, fmt.Sprintf("check %s: %v", it.ID, err))
		return nil, false
	}
	c.Do(ctx, req, rec)
	p.finish(rec)
	return &req, true
}

// probeWorkloadString is what the status page says a probe sends.
func probeWorkloadString(pc config.ProbeConfig, w workload.Spec) string {
	if a := pc.AnswerChecks; a != nil {
		n := 0
		if s := a.CheckSet(); s != nil {
			n = len(s.Items)
		}
		return fmt.Sprintf("answer checks %s (%d) every %v", a.Set, n, a.Every)
	}
	return workloadString(w)
}

// answerStatus gives an answer-check probe's status its checks' mean
// request rate and says they come one run at a time.
func answerStatus(st *ProbeStatus, pc config.ProbeConfig) {
	a := pc.AnswerChecks
	if a == nil || a.CheckSet() == nil || a.Every <= 0 {
		return
	}
	st.Rate = float64(len(a.CheckSet().Items)) / a.Every.Seconds()
	st.Arrival = "in runs"
}

// errNoSet is the start failure of an answer-check probe whose set was not
// loaded (a config that did not go through Load or AddAnswerChecks).
var errNoSet = errors.New("answer_checks: the check set was not loaded")
