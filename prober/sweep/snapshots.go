package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// The idle proof before each step and the /metrics snapshots around it.

// idlePollInterval is how often the idle wait reads /metrics.
const idlePollInterval = 200 * time.Millisecond

// settleTimeout bounds how long the after snapshot waits for the server's
// finished-request counter to count the step's completed requests, and
// settlePollInterval is how often it re-reads /metrics meanwhile.
const (
	settleTimeout      = 2 * time.Second
	settlePollInterval = 25 * time.Millisecond
)

// snapshot scrapes /metrics, hands it to the sink as the given phase and
// returns it (nil when not recorded).
func (r *runner) snapshot(ctx context.Context, st *Step, phase string) *scrape.Snapshot {
	return r.settledSnapshot(ctx, st, phase, nil, 0)
}

// settledSnapshot is snapshot for the after phase: a server hands a
// request's last token to the client before it records the iteration's
// counters (vLLM's output handler queues the outputs, then logs the
// iteration stats), so a scrape taken the instant the last stream ends
// can miss the last requests' tokens. When before is given and the engine
// has a finished-request counter, it re-reads /metrics every
// settlePollInterval until that counter grew by at least completed, for
// at most settleTimeout; the last scrape is the one recorded.
func (r *runner) settledSnapshot(ctx context.Context, st *Step, phase string, before *scrape.Snapshot, completed int) *scrape.Snapshot {
	meta := Snapshot{Step: st.Index, Label: st.Label, Phase: phase, Time: time.Now()}
	if !r.metricsOK {
		meta.NotRecorded = r.metricsReason
		_ = r.sink.Snapshot(meta)
		return nil
	}
	meta.Source = redact.Text(r.metricsURL)
	snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
	if err == nil && before != nil && completed > 0 {
		deadline := time.Now().Add(settleTimeout)
		for {
			v := r.eng.Delta(before, snap, engine.FinishedRequests)
			if !v.Known || v.Value >= float64(completed) || !time.Now().Before(deadline) {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(settlePollInterval):
			}
			if ctx.Err() != nil {
				break
			}
			next, err2 := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
			if err2 != nil {
				break
			}
			snap = next
		}
	}
	if err != nil {
		meta.NotRecorded = r.redact(err.Error())
		_ = r.sink.Snapshot(meta)
		return nil
	}
	meta.Time, meta.Body = snap.Time, r.redactBody(snap.Raw)
	_ = r.sink.Snapshot(meta)
	return snap
}

// waitIdle polls /metrics until the engine's running + waiting requests
// (engine.Engine.Idle) read 0 or the idle timeout passes.
func (r *runner) waitIdle(ctx context.Context, logger log.Logger) IdleProof {
	p := IdleProof{Status: IdleNotRecorded}
	switch {
	case r.cfg.Background():
		p.Reason = backgroundIdleReason
		return p
	case !r.metricsOK:
		p.Reason = "the server's /metrics could not be read: " + r.metricsReason
		return p
	case !r.idleKnown:
		p.Reason = r.idleReason
		return p
	}
	start := time.Now()
	deadline := start.Add(r.cfg.IdleTimeout)
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	logged := false
	for {
		snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
		now := time.Now()
		p.Waited = now.Sub(start).Seconds()
		if err == nil {
			p.At = snap.Time.UTC()
			p.Running = r.eng.Read(snap, engine.Running).Value
			p.Waiting = r.eng.Read(snap, engine.Waiting).Value
			idle, known := r.eng.Idle(snap)
			switch {
			case !known:
				p.Status, p.Reason = IdleNotRecorded, r.noIdleGauges()
				return p
			case idle:
				p.Status, p.Reason = IdleProven, ""
				return p
			}
			p.Status, p.Reason = IdleNotIdle, fmt.Sprintf("running %g, waiting %g", p.Running, p.Waiting)
		} else if p.Status != IdleNotIdle {
			p.Status, p.Reason = IdleNotRecorded, r.redact(err.Error())
		}
		if ctx.Err() != nil || !now.Before(deadline) {
			if p.Status == IdleNotIdle {
				level.Warn(logger).Log("msg", "server not idle before the step", "running", p.Running, "waiting", p.Waiting, "waited", time.Duration(p.Waited*float64(time.Second)))
			}
			return p
		}
		if !logged && now.Sub(start) > 2*time.Second {
			level.Info(logger).Log("msg", "waiting for the server to be idle", "running", p.Running, "waiting", p.Waiting)
			logged = true
		}
		t.Reset(min(idlePollInterval, time.Until(deadline)))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}
