package simulator

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// faultPlan is the faults drawn for one request.
type faultPlan struct {
	terminal                                    string // reset, 429, 500, 503, hang or ""
	stallBefore, stallMid, cut, malformed, drip bool
	errorEvent, brokenTool, wrongCount, empty   bool
	answer                                      answerPlan
	stallFor, dripEvery                         time.Duration
	names                                       []string
}

// drawFaults draws each fault independently from (seed, request number,
// fault index). The first terminal fault drawn (in the order connection
// reset, 429, 500, 503, hang) decides the request's fate; the others combine.
func (s *Simulator) drawFaults(reqNo uint64) faultPlan {
	f := s.faults.Load()
	fp := faultPlan{stallFor: f.StallDuration, dripEvery: f.SlowDripInterval}
	base := hash2(uint64(s.cfg.Seed)^0xfa017, reqNo)
	for i, p := range f.probabilities() {
		if p.name == faultSessionScatter || !(p.p > 0) || uniform(hash2(base, uint64(i))) >= p.p {
			continue
		}
		switch p.name {
		case faultReset, faultHTTP429, faultHTTP500, faultHTTP503, faultHang:
			if fp.terminal != "" {
				continue
			}
			fp.terminal = p.name
		case faultStallBefore:
			fp.stallBefore = true
		case faultStallMid:
			fp.stallMid = true
		case faultCut:
			fp.cut = true
		case faultMalformed:
			fp.malformed = true
		case faultSlowDrip:
			fp.drip = true
		case faultErrorEvent:
			fp.errorEvent = true
		case faultWrongAnswers:
			fp.answer.wrong = true
		case faultTruncate:
			fp.answer.truncate = true
		case faultNondeterministic:
			fp.answer.flip = true
		case faultBrokenTool:
			fp.brokenTool = true
		case faultWrongCount:
			fp.wrongCount = true
		case faultEmptyAnswer:
			fp.empty = true
		}
		fp.names = append(fp.names, p.name)
	}
	if f.TemplateBroken {
		fp.answer.template = true
		fp.names = append(fp.names, faultTemplateBroken)
	}
	return fp
}

// newSequence draws the request's output: with ignore_eos (or EOS
// probability 0) it runs to max_tokens; otherwise its natural length is
// min_tokens + Geometric(eos-probability), a pure function of the seed and
// the prompt, and it stops there (finish_reason stop, the EOS token counted
// but without text) unless max_tokens comes first (length).
func (s *Simulator) newSequence(g *genRequest) *sequence {
	seq := &sequence{
		prompt:     g.prompt,
		hashes:     promptBlockHashes(g.prompt, s.cfg.BlockSize, replicaSeed(g.replica)),
		maxTokens:  g.maxTokens,
		finishLen:  g.maxTokens,
		finishWhy:  finishLength,
		notify:     make(chan struct{}, 1),
		textSeed:   hashTokens(hash2(uint64(s.cfg.Seed), 0x7e47), g.prompt),
		structured: g.structured,
		reasoning:  s.reasoningLen(g),
		tool:       g.tool,
	}
	if g.tool != nil {
		seq.structured = g.tool.args
	}
	if !g.ignoreEOS && s.cfg.EOSProbability > 0 {
		// natural = min_tokens + eos <= max_tokens, compared without
		// overflow (parseGen guarantees 0 <= min_tokens <= max_tokens).
		eos := geometric(s.cfg.EOSProbability, uniform(hash2(seq.textSeed, 0xe05)))
		// A reasoning model stops only in its answer, after the thinking.
		floor := max(g.minTokens, seq.reasoning)
		if floor <= g.maxTokens && eos <= g.maxTokens-floor {
			seq.finishLen, seq.finishWhy = floor+eos, finishStop
		}
	}
	return seq
}

// outputText is the text of output tokens [from, to) of seq; the EOS token
// of a stopped sequence has no text.
func outputText(seq *sequence, from, to int) string {
	if seq.structured != nil {
		return structuredText(seq, from, to)
	}
	if seq.answer != nil {
		return strings.Join(seq.answer.pieces[min(from, len(seq.answer.pieces)):min(to, len(seq.answer.pieces))], "")
	}
	var b strings.Builder
	for i := from; i < to; i++ {
		if i == seq.finishLen-1 && seq.finishWhy == finishStop {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(vocabWord(int(hash2(seq.textSeed, uint64(i)+1) % VocabSize)))
	}
	return b.String()
}

// generate serves /v1/completions and /v1/chat/completions.
func (s *Simulator) generate(w http.ResponseWriter, r *http.Request, kind apiKind) {
	if s.light != nil {
		s.generateLight(w, r, kind)
		return
	}
	c, reqNo, replica := s.startCall(w, r)
	c.anthropic = kind == kindMessages && s.cfg.Engine != EngineLlamaCpp // llama.cpp: its OpenAI-style error object
	defer c.record()
	rid := c.tr.RequestID
	g, e := s.parseGen(w, r, kind)
	if e != nil {
		c.fail(e)
		return
	}
	g.replica = replica + 1
	c.tr.Stream = g.stream
	c.tr.PromptTokens = len(g.prompt)
	c.tr.Model, c.tr.Features = g.model, g.traceFeatures() // features.go
	fp := s.drawFaults(reqNo)
	c.tr.Faults = fp.names
	c.dripped, c.drip = fp.drip, fp.dripEvery
	switch fp.terminal {
	case faultReset:
		c.reset()
		return
	case faultHTTP429:
		w.Header().Set("Retry-After", "1")
		c.fail(&apiError{Status: http.StatusTooManyRequests, Type: "RateLimitError", Message: "simulated fault: too many requests"})
		return
	case faultHTTP500:
		c.fail(&apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "simulated fault: internal server error"})
		return
	case faultHTTP503:
		c.fail(&apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "simulated fault: service unavailable"})
		return
	}
	s.lookupImages(g.images) // images.go
	seq := s.newSequence(g)
	fp.answer.prefix = modelPrefix(s.cfg.ModelSeed)
	answerSequence(seq, g, fp.answer)
	if fp.brokenTool && seq.tool != nil {
		seq.structured = seq.structured[1:]
	}
	id := "cmpl-" + rid
	switch kind {
	case kindChat:
		id = "chatcmpl-" + rid
	case kindResponses:
		id = "resp_" + rid
	case kindMessages:
		id = "msg_" + rid
	}
	switch {
	case g.stream && kind == kindResponses:
		s.streamResponses(c, g, seq, fp, id)
		return
	case g.stream && kind == kindMessages:
		s.streamMessages(c, g, seq, fp, id) // messages.go
		return
	}
	if g.stream {
		s.stream(c, g, seq, fp, id)
	} else {
		s.complete(c, g, seq, fp, id)
	}
}

// complete serves a non-streaming request.
func (s *Simulator) complete(c *call, g *genRequest, seq *sequence, fp faultPlan, id string) {
	if fp.terminal == faultHang {
		c.hang()
		if c.ctx.Err() == nil {
			c.fail(errShuttingDown)
		}
		return
	}
	if fp.stallBefore && !c.sleep(fp.stallFor) {
		if c.ctx.Err() == nil {
			c.fail(errShuttingDown)
		}
		return
	}
	if fp.errorEvent {
		c.fail(&apiError{Status: http.StatusInternalServerError, Type: "InternalServerError",
			Message: "simulated fault: error during generation"})
		return
	}
	produced, reason := 0, finishStop
	if fp.empty {
		seq.tool = nil // nothing, not even a tool call
	} else {
		if err := s.eng.submit(seq); err != nil {
			c.fail(errShuttingDown)
			return
		}
		if !c.wait(seq) {
			return
		}
		produced, _, reason = seq.snapshot()
		if reason == finishAbort {
			c.fail(errShuttingDown)
			return
		}
		if fp.stallMid && !c.sleep(fp.stallFor) {
			return
		}
		reason = toolFinish(seq, reason)
	}
	if g.kind == kindResponses {
		s.completeResponses(c, g, seq, produced, reason, id)
		return
	}
	if g.kind == kindMessages {
		s.completeMessages(c, g, seq, produced, reason, id) // messages.go
		return
	}
	created := time.Now().Unix()
	reasoning, text := parts(seq, 0, produced)
	// vLLM answers with model_dump(): every field, unset ones as null.
	use := usage{PromptTokens: len(g.prompt), CompletionTokens: produced, TotalTokens: len(g.prompt) + produced,
		PromptTokensDetails: jsonNull, CompletionTokensDetails: completionDetails(g, seq, produced)}
	if s.cfg.Engine == EngineLlamaCpp || s.cfg.EnablePromptTokensDetails {
		use.PromptTokensDetails = cachedDetails(seq.cachedPrompt())
	}
	var timings map[string]any
	if s.cfg.Engine == EngineLlamaCpp {
		// llama-server's timings (its figures of time are left out here).
		cached := seq.cachedPrompt()
		timings = map[string]any{"cache_n": cached, "prompt_n": len(g.prompt) - cached, "predicted_n": produced}
		specTimings(timings, produced, s.cfg.SpecDraftTokens, s.cfg.SpecAcceptance, &c.tr)
	}
	var resp any
	if g.kind == kindChat {
		var calls []any
		if seq.tool != nil {
			calls = []any{map[string]any{"id": "chatcmpl-tool-" + id, "type": "function",
				"function": map[string]any{"name": seq.tool.name, "arguments": text}}}
			text = ""
		}
		msg := chatMessageOut{Role: "assistant", Content: text, ToolCalls: append([]any{}, calls...)}
		if s.cfg.ReasoningField == ReasoningField {
			msg.Reasoning = nullIfEmpty(reasoning)
		} else {
			msg.ReasoningContent = nullIfEmpty(reasoning)
		}
		resp = chatResponse{ID: id, Object: "chat.completion", Created: created, Model: g.model,
			Choices: []chatChoice{{Message: msg, FinishReason: reason, Logprobs: logprobsOf(g, seq, 0, produced, 0)}},
			Usage:   use, Timings: timings, Metrics: s.serverTiming(g, seq, &c.tr)}
	} else {
		resp = completionResponse{ID: id, Object: "text_completion", Created: created, Model: g.model,
			Choices: []completionChoice{{Text: text, FinishReason: &reason, Logprobs: logprobsOf(g, seq, 0, produced, 0)}}, Usage: use, Timings: timings,
			Metrics: s.serverTiming(g, seq, &c.tr)}
	}
	body, err := json.Marshal(resp)
	if err != nil {
		c.fail(&apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()})
		return
	}
	c.answer(body, produced, reason, fp)
}

// endCut records the end of a cut stream (every API's): the sequence's own
// finish reason when the client saw its last token; otherwise aborted,
// and the sequence aborted when the engine still runs it (one that has
// finished unseen is left alone: the client never saw the end).
func (s *Simulator) endCut(c *call, seq *sequence, finished bool, reason string) {
	if finished {
		c.tr.FinishReason = toolFinish(seq, reason)
		return
	}
	if _, done, _ := seq.snapshot(); !done {
		s.eng.abort(seq)
	}
	c.tr.FinishReason = finishAbort
}

// stream serves a streaming request as vLLM's OpenAI server does.
func (s *Simulator) stream(c *call, g *genRequest, seq *sequence, fp faultPlan, id string) {
	if !c.openStream(fp.terminal == faultHang) {
		return
	}
	if fp.stallBefore && !c.sleep(fp.stallFor) {
		return
	}
	if fp.empty {
		s.streamEmpty(c, g, id)
		return
	}
	if err := s.eng.submit(seq); err != nil {
		return
	}
	w := s.newWire(g, id, time.Now().Unix())
	w.seq, w.tr = seq, &c.tr
	abort := func() {
		s.eng.abort(seq)
		c.tr.FinishReason = finishAbort
	}
	sent, roleSent, midDone := 0, false, false
	half := max(1, seq.finishLen/2)
	for {
		produced, finished, reason, ok := c.progress(seq, sent)
		if !ok {
			return
		}
		if g.kind == kindChat && !roleSent {
			// vLLM sends the role with empty content on the first engine
			// output (llama.cpp with null content; Ollama sends none).
			roleSent = true
			if b := w.role(); b != nil {
				if err := c.event(b, true); err != nil {
					abort()
					return
				}
			}
		}
		if fp.cut && produced > half {
			// A cut stream delivers exactly half of the tokens, however many
			// the engine produced while the client was not reading.
			produced, finished = half, false
		}
		var finish *string
		if finished && !w.separateFinish() {
			reason = toolFinish(seq, reason)
			finish = &reason
		}
		reasoning, text := parts(seq, sent, produced)
		w.reasoning = reasoning
		w.toolStart = seq.tool != nil && sent <= seq.reasoning
		w.lp = logprobsOf(g, seq, sent, produced, w.offset)
		w.offset += len(text)
		if start := w.toolStartChunk(text, produced); start != nil { // wire.go: the tool's name alone first
			if err := c.event(start, true); err != nil {
				abort()
				return
			}
		}
		b := w.token(text, finish, produced, sent == 0)
		if err := c.event(b, true); err != nil {
			abort()
			return
		}
		sent = produced
		c.tr.CompletionTokens = sent
		if !midDone && (sent >= half || finished) {
			midDone = true
			if fp.errorEvent {
				if err := c.event(w.errorEvent(), false); err == nil && !finished {
					abort()
				}
				c.tr.FinishReason = finishError
				return
			}
			if fp.malformed {
				bad := b[:len(b)/2]
				if err := c.event(bad, false); err != nil {
					abort()
					return
				}
			}
			if fp.cut {
				s.endCut(c, seq, finished, reason)
				return
			}
			if fp.stallMid && !c.sleep(fp.stallFor) {
				if !finished {
					abort()
				}
				return
			}
		}
		if finished {
			c.tr.FinishReason = toolFinish(seq, reason)
			break
		}
	}
	if w.separateFinish() {
		// llama.cpp, Ollama and SGLang's chat end with a chunk that has
		// no text and the finish_reason (llama.cpp: with usage and
		// timings on it unless a usage chunk follows; wire.go).
		if err := c.event(w.finish(c.tr.FinishReason, sent), true); err != nil {
			return
		}
	}
	if g.includeUsage && !w.usageOnFinish() {
		if err := c.event(w.usage(sent, s.serverTiming(g, seq, &c.tr)), false); err != nil {
			return
		}
	}
	if err := c.write([]byte("data: [DONE]\n\n")); err != nil {
		return
	}
	c.tr.DoneNS = time.Now().UnixNano()
}
