package manager

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/schedule"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// preparedItem is a workload item built with tokenizer tok.
type preparedItem struct {
	item workload.Item
	tok  workload.Tokenizer
}

// prefetch is how many prompts a probe keeps built ahead.
const prefetch = 8

// probeRunner runs one probe's open-loop schedule.
type probeRunner struct {
	t      *targetRunner
	cfg    config.ProbeConfig
	key    string // cfg.RestartKey()
	logger log.Logger
	gen    itemSource // the workload's Generator, or its DatasetSource
	// features is the probe's request-feature plan (nil: none).
	features *workload.RequestPlan

	// ready holds prompts built ahead of their arrivals, so that building
	// one (a /tokenize round trip for a new length) is never on the path
	// between an arrival's scheduled time and its send.
	ready   chan preparedItem
	filling atomic.Bool
	fillWG  sync.WaitGroup

	cancel context.CancelCauseFunc
	done   chan struct{}

	sent, good, failed, skipped atomic.Uint64

	ringMu   sync.Mutex
	recent   []Result
	failures []Result

	// sessions draws the later turns of a multi-turn workload (nil:
	// single requests); see multiturn.go.
	sessions *workload.Sessions
	// noPrefetch builds no prompts ahead (ProbeOnce: once.go).
	noPrefetch bool
}

// newProbeRunner builds the probe's generators. The config was validated at
// load (arrival parameters included).
func newProbeRunner(t *targetRunner, pc config.ProbeConfig, key string) (*probeRunner, error) {
	if pc.AnswerChecks != nil {
		return newAnswerRunner(t, pc, key) // answers.go
	}
	nonce := probeNonce(pc)
	gen, err := newItemSource(pc, nonce)
	if err != nil {
		return nil, fmt.Errorf("probe %q: workload: %w", pc.Name, err)
	}
	features, err := workload.NewRequestPlan(pc.Workload.Request)
	if err != nil {
		return nil, fmt.Errorf("probe %q: workload.request: %w", pc.Name, err)
	}
	features.SetNonce(nonce)
	p := &probeRunner{
		features: features,
		t:        t,
		cfg:      pc,
		key:      key,
		logger:   log.With(t.logger, "probe", pc.Name),
		gen:      gen,
		ready:    make(chan preparedItem, prefetch),
		done:     make(chan struct{}),
	}
	if pc.Workload.MultiTurn != nil {
		if p.sessions, err = workload.NewSessions(pc.Workload, pc.Seed); err != nil {
			return nil, fmt.Errorf("probe %q: workload: %w", pc.Name, err)
		}
		p.sessions.SetPromptNonce(nonce)
	}
	if pc.Workload.Dataset == nil {
		level.Info(p.logger).Log("msg", "probe prompt texts", "seed", pc.Seed, "prompt_nonce", nonce,
			"fixed", pc.PromptNonce != 0)
	}
	return p, nil
}

// probeNonce is the prompt nonce of a probe starting now: its config's
// prompt_nonce, else a fresh one (so that a restarted daemon does not send
// the prompts its previous start left in the server's prompt cache).
func probeNonce(pc config.ProbeConfig) uint64 {
	if pc.PromptNonce != 0 {
		return pc.PromptNonce
	}
	return rand.Uint64N(config.MaxPromptNonce) + 1
}

func (p *probeRunner) start(parent context.Context) {
	ctx, cancel := context.WithCancelCause(parent)
	p.cancel = cancel
	if p.cfg.AnswerChecks != nil {
		p.startAnswers(ctx) // answers.go
		return
	}
	tname, pname := p.t.cfg.Name, p.cfg.Name
	obs := p.t.m.obs
	s := p.t.slo.Load()
	obs.ProbeStarted(tname, pname, ProbeSettings{Rate: p.cfg.Rate, SLO: s.SLO, GoodputObjective: s.Objective, Start: time.Now()})
	proc, err := arrival.New(p.cfg.Arrival, p.cfg.Rate, p.cfg.Burstiness, p.cfg.Seed)
	if err != nil { // cannot happen: validated at config load
		level.Error(p.logger).Log("msg", "cannot start probe", "err", err)
		close(p.done)
		return
	}
	sched, err := schedule.New(schedule.Config{
		Mode:           schedule.Open,
		Process:        proc,
		MaxConcurrency: p.cfg.MaxConcurrency,
		OnFull:         schedule.Skip,
		OnSkip: func(at time.Time) {
			obs.SetLastArrival(tname, pname, at)
			p.skipped.Add(1)
			obs.Skipped(tname, pname, SkipMaxConcurrency)
		},
		OnPanic: func(_ time.Time, v any, stack []byte) { p.logPanic(v, stack) },
	}, p.fire)
	if err != nil {
		level.Error(p.logger).Log("msg", "cannot start probe", "err", err)
		close(p.done)
		return
	}
	go func() {
		defer close(p.done)
		_, _ = sched.Run(ctx)
	}()
}

// logPanic logs a recovered panic of a probe request. The panic value and
// the stack go through the endpoint's Redact: a value that quotes the API
// key (a panicking error built from a server's echo) must not log it.
func (p *probeRunner) logPanic(v any, stack []byte) {
	ep := p.t.ep
	level.Error(p.logger).Log("msg", "panic in probe request (recovered)",
		"panic", ep.Redact(fmt.Sprint(v)), "stack", ep.Redact(string(stack)))
}

func (p *probeRunner) stop(cause error) {
	if p.cancel != nil {
		p.cancel(cause)
	}
	<-p.done
	p.fillWG.Wait()
}

// nextItem returns a prompt built ahead when one is ready for tok, else
// builds one now; either way it starts refilling the buffer in the
// background.
func (p *probeRunner) nextItem(ctx context.Context, tok workload.Tokenizer) (workload.Item, error) {
	defer p.refill(ctx, tok)
	for {
		select {
		case pi := <-p.ready:
			if pi.tok == tok {
				return pi.item, nil
			}
			continue // built with another tokenizer (the model changed)
		default:
		}
		return p.gen.Next(ctx, tok)
	}
}

func (p *probeRunner) refill(ctx context.Context, tok workload.Tokenizer) {
	if p.noPrefetch || len(p.ready) == cap(p.ready) || ctx.Err() != nil || !p.filling.CompareAndSwap(false, true) {
		return
	}
	p.fillWG.Go(func() {
		defer p.filling.Store(false)
		for len(p.ready) < cap(p.ready) && ctx.Err() == nil {
			it, err := p.gen.Next(ctx, tok)
			if err != nil {
				return // the synchronous path reports it
			}
			select {
			case p.ready <- preparedItem{it, tok}:
			default:
				return
			}
		}
	})
}

// fire sends one request at its scheduled time and records the outcome.
func (p *probeRunner) fire(ctx context.Context, scheduled time.Time, queueWait time.Duration) {
	t := p.t
	obs := t.m.obs
	tname, pname := t.cfg.Name, p.cfg.Name
	obs.SetLastArrival(tname, pname, scheduled)
	rec := &prober.Record{
		Target:    tname,
		Probe:     pname,
		RequestID: t.m.requestID(""),
		Scheduled: scheduled,
		QueueWait: queueWait,
	}
	obs.InFlight(tname, pname, 1)
	defer obs.InFlight(tname, pname, -1)

	c, model, ok := p.client(ctx, rec)
	if !ok {
		return
	}
	sz, err := t.ep.PromptSizing(ctx, model)
	if err != nil {
		p.failErr(ctx, rec, err)
		return
	}
	item, err := p.nextItem(ctx, sz.Tokenizer)
	if err != nil {
		p.fail(ctx, rec, prober.ClassInvalidResponse, "building the prompt: "+err.Error())
		return
	}
	limit := t.maxModelLen()
	if limit == 0 {
		limit = sz.MaxModelLen() // /v1/models did not say; /tokenize did
	}
	if limit > 0 && item.PromptTokens+item.OutputTokens > limit {
		// The workload drew a request the model cannot take: the probe's
		// doing, not the server's, so it is skipped, not failed.
		p.skipped.Add(1)
		obs.Skipped(tname, pname, SkipTooLong)
		level.Debug(p.logger).Log("msg", "arrival skipped: prompt + output exceed max_model_len",
			"prompt_tokens", item.PromptTokens, "output_tokens", item.OutputTokens, "max_model_len", limit)
		return
	}
	draw := p.features.Draw(p.cfg.Seed, item.Index)
	if nl := t.adapterNotListed(draw); nl != nil { // lora.go
		p.failUnlisted(ctx, rec, draw, nl)
		return
	}
	if p.sessions != nil {
		p.runSession(ctx, rec, c, sz.Tokenizer, item, limit)
		return
	}
	req := endpoint.NewRequest(t.cfg.API, rec.RequestID, item, p.cfg.Workload.IgnoreEOSOrDefault())
	endpoint.WithBatch(&req, t.cfg.API, t.cfg.BatchSize)
	endpoint.WithFeatures(&req, draw)
	req.Header = t.sloHeader()
	c.Do(ctx, req, rec)
	p.finish(rec)
}

// sloHeader returns the SLO headers of the target's workload requests
// (slo_headers: true; endpoint.SLOHeaders of its current SLO), nil when
// it sends none.
func (t *targetRunner) sloHeader() http.Header {
	if !t.cfg.SLOHeaders {
		return nil
	}
	return endpoint.SLOHeaders(t.slo.Load().SLO)
}

// fail finishes a record that failed before its request could be sent.
// client returns the client of the target's model; ok false when rec
// was finished as failed (no model, or an API the detected engine does not
// serve, engine.Unserved: the options were validated at load).
func (p *probeRunner) client(ctx context.Context, rec *prober.Record) (c *client.Client, model string, ok bool) {
	model, eerr := p.t.model(ctx)
	if eerr != nil {
		p.fail(ctx, rec, eerr.Class, eerr.Msg)
		return nil, "", false
	}
	rec.Model = model
	c, err := p.t.ep.Client(model)
	if err != nil {
		p.failErr(ctx, rec, err)
		return nil, "", false
	}
	return c, model, true
}

// failErr finishes rec as failed with err's class (an endpoint.Error's,
// else invalid_response).
func (p *probeRunner) failErr(ctx context.Context, rec *prober.Record, err error) {
	class := prober.ClassInvalidResponse
	var ee *endpoint.Error
	if errors.As(err, &ee) {
		class = ee.Class
	}
	p.fail(ctx, rec, class, err.Error())
}

func (p *probeRunner) fail(ctx context.Context, rec *prober.Record, class prober.ErrorClass, msg string) {
	now := time.Now()
	rec.Sent, rec.WallStart = now, now
	rec.SendLag = now.Sub(rec.Scheduled)
	rec.Error, rec.ErrorMessage = class, p.t.ep.Redact(msg)
	rec.NotSent = true
	if ctx.Err() != nil {
		rec.Error = prober.ClassCanceled
	}
	p.finish(rec)
}

func (p *probeRunner) finish(rec *prober.Record) {
	v := p.t.slo.Load().SLO.Verdict(rec)
	p.sent.Add(1)
	if v.Good {
		p.good.Add(1)
	}
	if !rec.OK() {
		p.failed.Add(1)
		if rec.Error != prober.ClassCanceled {
			level.Debug(p.logger).Log("msg", "request failed", "request_id", rec.RequestID, "class", rec.Error, "err", rec.ErrorMessage)
		}
	}
	res := Result{
		Time: rec.WallStart, RequestID: rec.RequestID, TraceID: rec.TraceID, Outcome: rec.Outcome(), Good: v.Good,
		HTTPStatus: rec.HTTPStatus, TTFT: rec.TTFT, E2E: rec.E2E, OutputTokens: rec.CompletionTokens,
		SendLag: rec.SendLag, Message: rec.ErrorMessage, Backend: rec.Backend,
	}
	res.TPOT, _ = rec.TPOT()
	n := p.t.m.opts.Recent
	p.ringMu.Lock()
	p.recent = pushFront(p.recent, res, n)
	if !rec.OK() {
		p.failures = pushFront(p.failures, res, n)
	}
	p.ringMu.Unlock()
	// Last, so that an observer that has seen a record finds it in Status.
	p.t.m.obs.Observe(rec, v)
}

func pushFront(s []Result, r Result, n int) []Result {
	if len(s) < n {
		s = append(s, Result{})
	}
	copy(s[1:], s[:len(s)-1])
	s[0] = r
	return s
}

func (p *probeRunner) status() ProbeStatus {
	w := p.cfg.Workload
	st := ProbeStatus{
		Name: p.cfg.Name, Rate: p.cfg.Rate, Arrival: p.cfg.Arrival,
		Workload: probeWorkloadString(p.cfg, w), // answers.go
		Sent:     p.sent.Load(), Good: p.good.Load(), Failed: p.failed.Load(), Skipped: p.skipped.Load(),
	}
	answerStatus(&st, p.cfg) // answers.go
	p.ringMu.Lock()
	st.Recent = append([]Result(nil), p.recent...)
	st.Failures = append([]Result(nil), p.failures...)
	p.ringMu.Unlock()
	return st
}

func lengthString(l workload.LengthSpec) string {
	switch l.Dist {
	case workload.DistFixed:
		return fmt.Sprintf("%d", l.Value)
	case workload.DistUniform:
		if l.Value > 0 {
			return fmt.Sprintf("uniform %d±%.0f%%", l.Value, l.RangeRatio*100)
		}
		return fmt.Sprintf("uniform [%d,%d]", l.Min, l.Max)
	case workload.DistLognormal:
		return fmt.Sprintf("lognormal median %.0f σ %.2f", l.Median, l.Sigma)
	case workload.DistChoice:
		return fmt.Sprintf("choice of %d", len(l.Choices))
	}
	return l.Dist
}
