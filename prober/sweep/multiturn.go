package sweep

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Multi-turn chat sessions in a sweep (workload.MultiTurn): a step's
// arrivals start sessions, so its level is in sessions/s (requests/s
// offered = sessions/s × mean turns), --num-prompts counts sessions, and the
// step ends when its sessions have ended. Every turn is a measured request
// of the step (its StepRecord.Index numbers the step's requests in send
// order); the step's Stats cover every turn, and Step.MultiTurn adds the
// sessions' end reasons and TTFT by turn (turn 1 against later turns: the
// prefix-cache effect).

// MultiTurnStats is what a multi-turn step's sessions did: result.json's
// "multi_turn" of a step.
type MultiTurnStats struct {
	// Sessions is the number of sessions started; Requests the number of
	// turns they delivered (sent, or failed before sending) and MeanTurns
	// Requests / Sessions.
	Sessions  int     `json:"sessions"`
	Requests  int     `json:"requests"`
	MeanTurns float64 `json:"mean_turns"`
	// OfferedRequestRate is the step's level (sessions/s) × MeanTurns: the
	// requests per second the sessions offered (0 for a closed loop or a
	// burst).
	OfferedRequestRate float64 `json:"offered_request_rate"`
	// EndReasons counts the sessions by how they ended
	// (workload.SessionEndReasons: complete, context_limit, failed,
	// canceled).
	EndReasons map[string]int `json:"end_reasons"`
	// ContextTokensResent sums, over the later turns sent, the previous
	// turn's prompt and completion tokens: the context each later turn
	// resends, which the server's prefix cache may hit by design (the
	// unintended-reuse check allows it).
	ContextTokensResent int64 `json:"context_tokens_resent"`
	// FirstTurn and LaterTurns summarize turn 1 and turns 2 and up;
	// ByTurn each turn number that was sent, in order.
	FirstTurn  TurnStats   `json:"first_turn"`
	LaterTurns TurnStats   `json:"later_turns"`
	ByTurn     []TurnStats `json:"by_turn"`
	// Affinity is where the later turns were answered and what they found
	// cached (docs/measurement.md, "Session affinity").
	Affinity SessionAffinity `json:"session_affinity"`
}

// SessionAffinity is how a step's later turns (turn N > 1) were routed:
// whether the replica that answered each (Record.Backend, from the
// target's attribution headers) is the one that answered turn N-1
// (Record.SessionReplica), and how many found prompt tokens cached
// (usage.prompt_tokens_details.cached_tokens > 0).
type SessionAffinity struct {
	// SameReplica, OtherReplica and Unknown count the later turns sent by
	// Record.SessionReplica.
	SameReplica  int `json:"same_replica"`
	OtherReplica int `json:"other_replica"`
	Unknown      int `json:"unknown"`
	// Ratio is SameReplica / (SameReplica + OtherReplica): the share of
	// later turns served where the previous turn was; null when no later
	// turn's replica was known (no attribution_headers, or none answered).
	Ratio *float64 `json:"ratio"`
	// CacheReported counts the later turns that succeeded with a usage
	// reporting cached prompt tokens, CacheHits those of them with at
	// least one; CacheHitRatio is CacheHits / CacheReported, null when the
	// server reported none (vLLM without --enable-prompt-tokens-details).
	CacheReported int      `json:"cache_reported"`
	CacheHits     int      `json:"cache_hits"`
	CacheHitRatio *float64 `json:"cache_hit_ratio"`
}

// add counts one later turn's record.
func (a *SessionAffinity) add(rec *prober.Record) {
	switch rec.SessionReplica {
	case prober.SessionSameReplica:
		a.SameReplica++
	case prober.SessionOtherReplica:
		a.OtherReplica++
	case prober.SessionReplicaUnknown:
		a.Unknown++
	}
	if rec.Turn > 1 && rec.OK() && rec.CachedTokensReported {
		a.CacheReported++
		if rec.CacheHit() {
			a.CacheHits++
		}
	}
}

// ratios fills Ratio and CacheHitRatio from the counts.
func (a *SessionAffinity) ratios() {
	a.Ratio, a.CacheHitRatio = nil, nil
	if n := a.SameReplica + a.OtherReplica; n > 0 {
		r := float64(a.SameReplica) / float64(n)
		a.Ratio = &r
	}
	if a.CacheReported > 0 {
		r := float64(a.CacheHits) / float64(a.CacheReported)
		a.CacheHitRatio = &r
	}
}

// TurnStats are the requests of one turn number (or a group of them):
// their count, successes, mean prompt tokens (server-reported, else
// intended) and the TTFT of the successful ones in milliseconds.
type TurnStats struct {
	// Turn is the turn number (1-based); 0 for FirstTurn and LaterTurns.
	Turn             int     `json:"turn,omitempty"`
	Requests         int     `json:"requests"`
	Completed        int     `json:"completed"`
	MeanPromptTokens float64 `json:"mean_prompt_tokens"`
	TTFTMeanMS       float64 `json:"ttft_mean_ms"`
	TTFTP50MS        float64 `json:"ttft_p50_ms"`
	TTFTP99MS        float64 `json:"ttft_p99_ms"`
	// P99Reliable is false with fewer than 100 successful requests (the
	// p99 is then close to the maximum).
	P99Reliable bool `json:"p99_reliable"`
}

// stepSessions collects a multi-turn step's sessions.
type stepSessions struct {
	next atomic.Int64 // the step's next request index

	mu       sync.Mutex
	sessions int
	reasons  map[string]int
	resent   int64
	turns    []turnSamples // by turn - 1
	affinity SessionAffinity
}

type turnSamples struct {
	requests, completed int
	prompt              int64
	ttft                []float64
}

func newStepSessions() *stepSessions {
	reasons := map[string]int{}
	for _, r := range workload.SessionEndReasons {
		reasons[r] = 0
	}
	return &stepSessions{reasons: reasons}
}

// runSession runs session i of step st (its first item it, or the error
// building it) and delivers each turn like a single request.
func (r *runner) runSession(ctx context.Context, st *Step, acc *StatsAccumulator, ss *stepSessions, i int64,
	scheduled time.Time, queueWait time.Duration, it promptItem, itemErr error) {
	sid := fmt.Sprintf("llmprobe-%s-%d-s%d", r.runID, st.Index, i)
	var idx int64
	newRecord := func(turn int) *prober.Record {
		idx = ss.next.Add(1) - 1
		return &prober.Record{
			Target: r.fp.Target.URL, Probe: st.Label, Model: r.model,
			RequestID: fmt.Sprintf("%s-t%d", sid, turn),
		}
	}
	ss.started()
	if itemErr != nil {
		rec := newRecord(1)
		now := time.Now()
		rec.Scheduled, rec.QueueWait, rec.SessionID, rec.Turn = scheduled, queueWait, sid, 1
		rec.Sent, rec.WallStart, rec.SendLag = now, now, now.Sub(scheduled)
		rec.Error, rec.ErrorMessage = prober.ClassCanceled, "building the prompt: "+itemErr.Error()
		ss.add(rec, 0)
		r.deliver(st, acc, idx, rec, "")
		ss.ended(workload.SessionCanceled)
		return
	}
	if r.opts.rewritePrompt != nil {
		it = r.opts.rewritePrompt(it)
	}
	maxLen, _ := r.maxModelLen()
	prev := int64(0) // the previous turn's prompt + completion tokens
	s := endpoint.Session{
		ID: sid, Client: r.client, Sessions: r.prompts.sessions, Index: it.Index,
		Tokenizer: r.prompts.tok, First: it, Scheduled: scheduled, QueueWait: queueWait,
		IgnoreEOS: r.cfg.Workload.IgnoreEOSOrDefault(), MaxModelLen: maxLen, NewRecord: newRecord,
		Features: r.features.Draw(uint64(r.cfg.shardSeed()), it.Index), Header: r.sloHeader(),
		Done: func(rec *prober.Record, prompt string) {
			resent := int64(0)
			if rec.Turn > 1 && !rec.NotSent {
				resent = prev
			}
			prompt0 := rec.PromptTokens
			if prompt0 <= 0 {
				prompt0 = rec.InputTokens
			}
			prev = int64(prompt0 + rec.CompletionTokens)
			ss.add(rec, resent)
			r.deliver(st, acc, idx, rec, prompt)
		},
	}
	end := s.Run(ctx)
	ss.ended(end.Reason)
}

func (ss *stepSessions) started() {
	ss.mu.Lock()
	ss.sessions++
	ss.mu.Unlock()
}

func (ss *stepSessions) ended(reason string) {
	ss.mu.Lock()
	ss.reasons[reason]++
	ss.mu.Unlock()
}

// add counts one turn's record (before deliver hands it on).
func (ss *stepSessions) add(rec *prober.Record, resent int64) {
	k := max(rec.Turn, 1)
	in := rec.PromptTokens
	if in <= 0 {
		in = rec.InputTokens
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for len(ss.turns) < k {
		ss.turns = append(ss.turns, turnSamples{})
	}
	t := &ss.turns[k-1]
	t.requests++
	t.prompt += int64(in)
	ss.affinity.add(rec)
	if rec.OK() {
		t.completed++
		t.ttft = append(t.ttft, ms(rec.TTFT))
	}
	ss.resent += resent
}

// stats summarizes the step's sessions; level is the step's rate
// (sessions/s; 0 or +Inf: no offered rate).
func (ss *stepSessions) stats(level float64, mode string) *MultiTurnStats {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := &MultiTurnStats{Sessions: ss.sessions, EndReasons: maps.Clone(ss.reasons), ContextTokensResent: ss.resent,
		Affinity: ss.affinity}
	out.Affinity.ratios()
	var later turnSamples
	for k, t := range ss.turns {
		out.Requests += t.requests
		out.ByTurn = append(out.ByTurn, turnStats(k+1, t))
		if k > 0 {
			later.requests += t.requests
			later.completed += t.completed
			later.prompt += t.prompt
			later.ttft = append(later.ttft, t.ttft...)
		}
	}
	if len(ss.turns) > 0 {
		out.FirstTurn = turnStats(0, ss.turns[0])
	}
	out.LaterTurns = turnStats(0, later)
	if out.Sessions > 0 {
		out.MeanTurns = float64(out.Requests) / float64(out.Sessions)
		if (mode == ModeOpen || mode == ModeBoth) && level > 0 {
			out.OfferedRequestRate = level * out.MeanTurns
		}
	}
	return out
}

func turnStats(turn int, t turnSamples) TurnStats {
	s := TurnStats{Turn: turn, Requests: t.requests, Completed: t.completed, P99Reliable: !stats.P99Unreliable(len(t.ttft))}
	if t.requests > 0 {
		s.MeanPromptTokens = float64(t.prompt) / float64(t.requests)
	}
	if len(t.ttft) > 0 {
		sum := stats.Summarize(t.ttft)
		s.TTFTMeanMS, s.TTFTP50MS, s.TTFTP99MS = sum.Mean, sum.P50, sum.P99
	}
	return s
}

// validateMultiTurn checks a multi-turn workload against the rest of the
// config: chat API only, and a step's sessions × turns within
// MaxStepRequests.
func (c *Config) validateMultiTurn() error {
	mt := c.Workload.MultiTurn
	if mt == nil {
		return nil
	}
	if !c.api().Conversations {
		return fieldErr("API", "the workload's multi_turn sessions need {API} %s (a conversation is a list of chat messages), got %q",
			client.NamesWith(client.WithConversations, "or"), c.API)
	}
	if c.NumPrompts > 0 {
		if hi := maxTurns(mt); c.NumPrompts*hi > MaxStepRequests {
			return fieldErr("NumPrompts", "%d sessions of up to %d turns may send more than %d requests per step", c.NumPrompts, hi, MaxStepRequests)
		}
	}
	return nil
}

// checkSessions refuses a step whose n sessions could send more than
// MaxStepRequests requests.
func (r *runner) checkSessions(st *Step, n int) error {
	mt := r.cfg.Workload.MultiTurn
	if mt == nil || n <= 0 {
		return nil
	}
	if hi := maxTurns(mt); int64(n)*int64(hi) > MaxStepRequests {
		return fmt.Errorf("step %s: %d sessions of up to %d turns may send more than %d requests: shorten --duration", st.Label, n, hi, MaxStepRequests)
	}
	return nil
}

// maxTurns is the most turns a session of mt can draw.
func maxTurns(mt *workload.MultiTurn) int {
	s, err := workload.NewLengthSampler(mt.Turns.LengthSpec)
	if err != nil {
		return workload.MaxTurns
	}
	_, hi := s.Range()
	return hi
}

// resent is ContextTokensResent (0 for a single-turn step).
func (m *MultiTurnStats) resent() int64 {
	if m == nil {
		return 0
	}
	return m.ContextTokensResent
}
