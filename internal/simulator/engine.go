package simulator

import (
	"errors"
	"sync"
	"time"
)

// errEngineStopped is returned by submit after the engine was stopped.
var errEngineStopped = errors.New("simulator engine is stopped")

// maxCatchUp bounds how late a step may start and still be scheduled from
// the previous step's deadline instead of from now. Within it, timer
// oversleep, GC pauses and CPU starvation of the host are paid back (the
// missed steps run back to back) so the engine keeps model time; beyond it
// the backlog is dropped and counted in llmprobe_simulator_engine_lag_seconds_total.
const maxCatchUp = 100 * time.Millisecond

type seqState int

const (
	stateInbox seqState = iota
	stateWaiting
	stateRunning
	stateDone
)

// sequence is one request inside the engine.
type sequence struct {
	// Set before submit, read-only afterwards.
	prompt    []int
	hashes    []uint64 // chain hashes of the prompt's full blocks
	maxTokens int      // the request's effective max_tokens (vllm:request_params_max_tokens)
	finishLen int      // output tokens at which the request finishes
	finishWhy string   // finishStop or finishLength at finishLen
	notify    chan struct{}
	textSeed  uint64 // seeds the generated text and the EOS draw
	// structured is the JSON a response_format asks for (nil: none); the
	// output text is spread over it (structuredText).
	structured []byte
	// answer is the answer to a recognised prompt (answers.go; nil: none):
	// its pieces are the output tokens' text.
	answer *answer
	// reasoning is the number of output tokens that are reasoning, before
	// the answer (reasoning.go); tool is the tool the answer calls (nil:
	// a text answer), whose arguments are structured.
	reasoning int
	tool      *simTool
	arrival   time.Time // set by submit

	// Owned by the engine goroutine.
	state       seqState
	abortReq    bool
	numComputed int
	outputs     int
	blocks      []*kvBlock
	registered  int // prompt blocks whose hash was offered to the cache
	cached      int // prompt tokens found cached at admission (guarded by mu: the usage reports it)
	scheduledAt time.Time
	firstAt     time.Time
	lastAt      time.Time

	// Shared with the handler, guarded by mu.
	mu       sync.Mutex
	produced int
	finished bool
	reason   string
}

func (s *sequence) numTokens() int { return len(s.prompt) + s.outputs }

// prefillTokens is how many of the next n tokens to compute are prefill
// tokens: all of them while no output exists, otherwise those before the
// newest output token (a recompute after preemption); a plain decode has none.
func (s *sequence) prefillTokens(n int) int {
	if s.outputs == 0 {
		return n
	}
	return max(0, min(s.numComputed+n, s.numTokens()-1)-s.numComputed)
}

// snapshot returns the tokens produced so far and whether (and why) the
// sequence finished.
func (s *sequence) snapshot() (produced int, finished bool, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.produced, s.finished, s.reason
}

func (s *sequence) publish(produced int, finished bool, reason string) {
	s.mu.Lock()
	s.produced, s.finished, s.reason = produced, finished, reason
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// engine is the continuous-batching model: one goroutine steps it in real
// time. submit and abort are safe for concurrent use; everything else is
// owned by the engine goroutine.
type engine struct {
	cfg Config
	m   *metrics
	kv  *kvCache
	pc  *promptCache // nil unless Config.PromptCache
	// power integrates the GPU power model (power.go).
	power *powerMeter

	mu      sync.Mutex
	inbox   []*sequence
	aborts  []*sequence
	stopped bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	waiting []*sequence // FCFS; preempted sequences go back to the front
	running []*sequence // in admission order; the newest is preempted first
}

func newEngine(cfg Config, m *metrics) *engine {
	var pc *promptCache
	if cfg.PromptCache {
		pc = newPromptCache(cfg.PromptCacheTokens)
	}
	e := &engine{
		pc:   pc,
		cfg:  cfg,
		m:    m,
		kv:   newKVCache(cfg.NumGPUBlocks, cfg.BlockSize, cfg.EnablePrefixCaching),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	e.power = newPowerMeter(cfg.Power, time.Now())
	go e.run()
	return e
}

// submit queues s; it never blocks on the engine.
func (e *engine) submit(s *sequence) error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return errEngineStopped
	}
	s.arrival = time.Now()
	e.inbox = append(e.inbox, s)
	e.mu.Unlock()
	e.poke()
	return nil
}

// abort asks the engine to drop s (finished_reason abort) and free its blocks.
func (e *engine) abort(s *sequence) {
	e.mu.Lock()
	if !e.stopped {
		e.aborts = append(e.aborts, s)
	}
	e.mu.Unlock()
	e.poke()
}

func (e *engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// close stops the loop, aborts every sequence and waits for the goroutine.
func (e *engine) close() {
	e.mu.Lock()
	if !e.stopped {
		e.stopped = true
		close(e.stop)
	}
	e.mu.Unlock()
	<-e.done
}

func (e *engine) run() {
	defer close(e.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var prevDeadline time.Time
	for {
		e.intake()
		plan, prefillTokens := e.schedule()
		e.updateGauges()
		e.power.set(time.Now(), len(e.running), stepTokens(plan))
		if len(plan) == 0 {
			prevDeadline = time.Time{}
			select {
			case <-e.wake:
				continue
			case <-e.stop:
				e.shutdown()
				return
			}
		}
		dur := e.cfg.StepBase +
			time.Duration(prefillTokens)*e.cfg.StepPerPrefillToken +
			time.Duration(len(plan))*e.cfg.StepPerSeq
		start := time.Now()
		if !prevDeadline.IsZero() {
			if lag := start.Sub(prevDeadline); lag < maxCatchUp {
				start = prevDeadline
			} else {
				e.m.engineLag.Add(lag.Seconds())
			}
		}
		e.m.engineSteps.Inc()
		e.m.engineStepSeconds.Add(dur.Seconds())
		e.m.engineCalls.Inc()
		e.m.prefillComputed.Add(float64(prefillTokens))
		deadline := start.Add(dur)
		if d := time.Until(deadline); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-e.stop:
				timer.Stop()
				e.shutdown()
				return
			}
		}
		prevDeadline = deadline
		e.finishStep(plan, time.Now())
	}
}

// intake moves new sequences to the waiting queue and applies aborts.
func (e *engine) intake() {
	e.mu.Lock()
	inbox, aborts := e.inbox, e.aborts
	e.inbox, e.aborts = nil, nil
	e.mu.Unlock()
	for _, s := range aborts {
		s.abortReq = true
	}
	for _, s := range inbox {
		if s.abortReq {
			e.finish(s, finishAbort, time.Now())
			continue
		}
		s.state = stateWaiting
		e.waiting = append(e.waiting, s)
	}
	if len(aborts) == 0 {
		return
	}
	now := time.Now()
	keep := e.waiting[:0]
	for _, s := range e.waiting {
		if s.abortReq {
			e.finish(s, finishAbort, now)
		} else {
			keep = append(keep, s)
		}
	}
	clear(e.waiting[len(keep):])
	e.waiting = keep
	keepR := e.running[:0]
	for _, s := range e.running {
		if s.abortReq {
			e.kv.free(s)
			e.finish(s, finishAbort, now)
		} else {
			keepR = append(keepR, s)
		}
	}
	clear(e.running[len(keepR):])
	e.running = keepR
}

// planned is one sequence's share of a step.
type planned struct {
	seq    *sequence
	tokens int
}

// schedule builds the next step as vLLM V1's scheduler does: running
// sequences first (decodes and continuing chunked prefills, in admission
// order, preempting the newest running sequence when KV blocks run out), then
// waiting sequences FCFS while there is a free slot, token budget and KV
// room, unless this step preempted.
func (e *engine) schedule() (plan []planned, prefillTokens int) {
	budget := e.cfg.MaxNumBatchedTokens
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		n := min(s.numTokens()-s.numComputed, budget)
		scheduled := true
		for !e.kv.grow(s, s.numComputed+n) {
			victim := e.running[len(e.running)-1]
			e.preempt(victim)
			preempted = true
			if victim == s {
				scheduled = false
				break
			}
		}
		if !scheduled {
			break
		}
		plan = append(plan, planned{s, n})
		prefillTokens += s.prefillTokens(n)
		budget -= n
	}
	for !preempted && len(e.waiting) > 0 && len(e.running) < e.cfg.MaxNumSeqs && budget > 0 {
		s := e.waiting[0]
		hits := e.kv.lookup(s)
		cached := len(hits) * e.kv.blockSize
		if e.pc != nil {
			cached = max(cached, e.pc.lookup(s.prompt))
		}
		n := min(s.numTokens()-cached, budget)
		if !e.kv.admit(s, hits, cached+n) {
			break
		}
		if e.kv.prefix || e.pc != nil {
			e.m.prefixQueries.Add(float64(s.numTokens()))
			e.m.prefixHits.Add(float64(cached))
		}
		s.setCached(cached)
		s.numComputed = cached
		s.registered = len(hits)
		e.waiting[0] = nil
		e.waiting = e.waiting[1:]
		s.state = stateRunning
		e.running = append(e.running, s)
		if s.scheduledAt.IsZero() {
			s.scheduledAt = time.Now()
		}
		plan = append(plan, planned{s, n})
		prefillTokens += s.prefillTokens(n)
		budget -= n
	}
	return plan, prefillTokens
}

// preempt moves the newest running sequence s back to the front of the
// waiting queue and frees its blocks; it is recomputed when rescheduled.
func (e *engine) preempt(s *sequence) {
	e.running[len(e.running)-1] = nil
	e.running = e.running[:len(e.running)-1]
	e.kv.free(s)
	s.numComputed = 0
	s.registered = 0
	s.state = stateWaiting
	e.waiting = append([]*sequence{s}, e.waiting...)
	e.m.preemptions.Inc()
}

// finishStep applies a step's results at its end: computed tokens advance,
// full prompt blocks enter the prefix cache, and every sequence whose tokens
// are all computed samples one output token.
func (e *engine) finishStep(plan []planned, now time.Time) {
	iterPrompt, iterGen := 0, 0
	anyDone := false
	for _, p := range plan {
		s := p.seq
		s.numComputed += p.tokens
		e.kv.register(s)
		if s.numComputed < s.numTokens() {
			continue // chunked prefill in progress
		}
		s.outputs++
		iterGen++
		// Counted before finish wakes the handler, in the same step as
		// the finished-request counter below: a scrape never sees a
		// request finished without its tokens.
		e.m.generationTokens.Inc()
		if s.firstAt.IsZero() {
			s.firstAt = now
			e.m.ttft.Observe(now.Sub(s.arrival).Seconds())
			e.m.promptTokens.Add(float64(len(s.prompt)))
			cached := s.cachedPrompt()
			e.m.promptCached.Add(float64(cached))
			e.m.promptCacheHit.Add(float64(cached))
			e.m.promptComputed.Add(float64(len(s.prompt) - cached))
			iterPrompt += len(s.prompt)
		} else {
			e.m.itl.Observe(now.Sub(s.lastAt).Seconds())
		}
		s.lastAt = now
		// As vLLM's check_stop: the drawn end (EOS or max_tokens), else the
		// context length. parseGen keeps prompt + max_tokens within
		// max-model-len, so the second is an invariant that never lets a
		// sequence grow past the context (and the KV cache) whatever a
		// request slipped through.
		why := ""
		switch {
		case s.outputs >= s.finishLen:
			why = s.finishWhy
		case s.numTokens() >= e.cfg.MaxModelLen:
			why = finishLength
		}
		if why != "" {
			e.kv.free(s)
			e.finish(s, why, now)
			anyDone = true
			continue
		}
		s.publish(s.outputs, false, "")
	}
	if iterPrompt+iterGen > 0 {
		e.m.iteration.Observe(float64(iterPrompt + iterGen))
	}
	if anyDone {
		keep := e.running[:0]
		for _, s := range e.running {
			if s.state == stateRunning {
				keep = append(keep, s)
			}
		}
		clear(e.running[len(keep):])
		e.running = keep
	}
	e.updateGauges()
}

// finish marks s done (its blocks must already be free), records the
// per-request metrics as vLLM's IterationStats does and wakes the handler.
func (e *engine) finish(s *sequence, reason string, now time.Time) {
	s.state = stateDone
	e.m.success.WithLabelValues(reason).Inc()
	if reason != finishAbort {
		if e.pc != nil {
			e.pc.insert(s.prompt)
		}
		e.m.finished.Inc()
		n := s.outputs
		e.m.e2e.Observe(now.Sub(s.arrival).Seconds())
		e.m.queue.Observe(s.scheduledAt.Sub(s.arrival).Seconds())
		e.m.prefill.Observe(s.firstAt.Sub(s.scheduledAt).Seconds())
		e.m.inference.Observe(s.lastAt.Sub(s.scheduledAt).Seconds())
		decode := s.lastAt.Sub(s.firstAt).Seconds()
		e.m.decode.Observe(decode)
		tpot := 0.0
		if n > 1 {
			tpot = decode / float64(n-1)
		}
		e.m.tpot.Observe(tpot)
		e.m.requestPrompt.Observe(float64(len(s.prompt)))
		e.m.requestGeneration.Observe(float64(n))
		if e.m.prefillKV != nil {
			e.m.prefillKV.Observe(float64(len(s.prompt) - s.cachedPrompt()))
		}
		if s.maxTokens > 0 { // vLLM skips a max_tokens of None/0
			e.m.paramsMaxTokens.Observe(float64(s.maxTokens))
		}
		// n is always 1, so the largest generation of the request's
		// choices is its own (vLLM's ParentRequest.observe_finished_request).
		e.m.maxNumGeneration.Observe(float64(n))
		e.m.paramsN.Observe(1)
		if k := e.cfg.SpecDraftTokens; k > 0 {
			// Before publish: a scrape after the answer sees its drafts.
			drafted, accepted := specDraft(n, k, e.cfg.SpecAcceptance)
			e.m.specDrafted.Add(float64(drafted))
			e.m.specAccepted.Add(float64(accepted))
			e.m.specSteps.Add(float64(drafted / k))
		}
	}
	s.publish(s.outputs, true, reason)
}

// shutdown aborts everything still queued or running.
func (e *engine) shutdown() {
	e.mu.Lock()
	inbox := e.inbox
	e.inbox, e.aborts = nil, nil
	e.mu.Unlock()
	now := time.Now()
	for _, s := range e.running {
		e.kv.free(s)
		e.finish(s, finishAbort, now)
	}
	for _, s := range append(e.waiting, inbox...) {
		e.finish(s, finishAbort, now)
	}
	e.running, e.waiting = nil, nil
	e.updateGauges()
}

func (e *engine) updateGauges() {
	e.m.running.Set(float64(len(e.running)))
	e.mu.Lock()
	inbox := len(e.inbox)
	e.mu.Unlock()
	e.m.waiting.Set(float64(len(e.waiting) + inbox))
	e.m.waitingCapacity.Set(float64(len(e.waiting) + inbox))
	e.m.kvUsage.Set(e.kv.usage())
}
