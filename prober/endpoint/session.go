package endpoint

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/schedule"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Session is one multi-turn chat session (workload.MultiTurn) as the
// daemon's probes and sweeps both run it, every turn carrying ID in the
// workload's session header (MultiTurn.SessionHeaderName, none when it is
// off) so that a session-aware router can keep it on one replica. Turn k
// sends the conversation so far, [u1, a1, ..., uk], where a_i is the reply the server streamed for
// turn i (collected with client.Request.Collect); turn k+1 is scheduled at
// turn k's completion plus the think time, with its own Record.Scheduled so
// that its send lag is measured as for every request. A failed turn ends the
// session; so does a turn whose context would exceed the context limit
// (workload.SessionContextLimit, not an error) and the end of ctx.
//
// Fill the fields and call Run once, from the goroutine the schedule gave
// the session's arrival; the turns are sent one after the other from it.
type Session struct {
	// ID is every turn's Record.SessionID.
	ID string
	// Client sends the turns (a chat client).
	Client *client.Client
	// Sessions draws the session's number of turns and its later user
	// messages; Index is the session's index there.
	Sessions *workload.Sessions
	Index    int64
	// Tokenizer sizes the later user messages (the endpoint's prompt
	// sizing for the model).
	Tokenizer workload.Tokenizer
	// First is turn 1's item, from the workload's Generator (it carries the
	// shared prefix).
	First workload.Item
	// Scheduled is turn 1's intended send time and QueueWait how long its
	// arrival waited for a concurrency slot.
	Scheduled time.Time
	QueueWait time.Duration
	// IgnoreEOS is sent with every turn.
	IgnoreEOS bool
	// Features are the session's request features (workload.RequestPlan
	// drawn once for the session, by its index): every turn carries them,
	// so a session keeps one model (LoRA adapter) and one set of sampling
	// parameters. The zero draw carries none.
	Features workload.RequestDraw
	// Header holds the headers sent with every turn besides the session
	// header (the SLO headers, SLOHeaders; nil: none). Run only reads it.
	Header http.Header
	// MaxModelLen is the model's context length (0: unknown); with the
	// workload's max_context_tokens it bounds the context
	// (workload.MultiTurn.ContextLimit).
	MaxModelLen int
	// NewRecord returns the Record of a turn with Target, Probe, Model and
	// RequestID filled; Run sets Scheduled, QueueWait, SessionID, Turn and,
	// from turn 2, SessionReplica (prober.SameReplica of the previous
	// turn's Backend and this one's).
	NewRecord func(turn int) *prober.Record
	// Done receives each turn's finished Record, in turn order, with the
	// turn's user message (to scrub its echo from error messages). The
	// session does not touch the Record afterwards.
	Done func(rec *prober.Record, prompt string)
}

// SessionEnd is how a session ended: the number of turns whose Record was
// delivered to Done and a workload.Session* reason.
type SessionEnd struct {
	Turns  int
	Reason string
}

// followUp is a later turn's user message built ahead.
type followUp struct {
	it  workload.Item
	err error
}

// Run sends the session's turns and returns how it ended.
func (s *Session) Run(ctx context.Context) SessionEnd {
	mt := s.Sessions.MultiTurn()
	turns := s.Sessions.Turns(s.Index)
	limit := mt.ContextLimit(s.MaxModelLen)
	// The next turn's message is built while this one is in flight, so that
	// building it (a /tokenize call for a new length) is never between its
	// scheduled time and its send.
	bctx, stop := context.WithCancel(ctx)
	var next chan followUp // the message being built, until taken
	defer func() {
		stop()
		if next != nil {
			<-next // the builder returns soon once bctx is done
		}
	}()
	build := func(turn int) chan followUp {
		ch := make(chan followUp, 1)
		go func() {
			it, err := s.Sessions.FollowUp(bctx, s.Tokenizer, s.Index, turn)
			ch <- followUp{it, err}
		}()
		return ch
	}
	header := s.Header
	if name := mt.SessionHeaderName(); name != "" {
		header = s.Header.Clone()
		if header == nil {
			header = http.Header{}
		}
		header.Set(name, s.ID)
	}
	var conv workload.Conversation
	prevBackend := ""
	item := s.First
	scheduled, queueWait := s.Scheduled, s.QueueWait
	for k := 1; ; k++ {
		if k > 1 {
			var f followUp
			select {
			case f = <-next:
				next = nil
			case <-ctx.Done():
				return SessionEnd{k - 1, workload.SessionCanceled}
			}
			if f.err != nil {
				rec := s.record(k, scheduled, 0)
				now := time.Now()
				rec.Sent, rec.WallStart, rec.SendLag, rec.NotSent = now, now, now.Sub(scheduled), true
				rec.Error, rec.ErrorMessage = prober.ClassInvalidResponse, "building the prompt: "+f.err.Error()
				reason := workload.SessionFailed
				if ctx.Err() != nil {
					rec.Error, reason = prober.ClassCanceled, workload.SessionCanceled
				}
				s.Done(rec, "")
				return SessionEnd{k, reason}
			}
			item = f.it
		}
		it, intended := conv.Ask(item)
		if limit > 0 && intended+it.OutputTokens > limit {
			return SessionEnd{k - 1, workload.SessionContextLimit}
		}
		if ctx.Err() != nil {
			return SessionEnd{k - 1, workload.SessionCanceled}
		}
		if k < turns {
			next = build(k + 1)
		}
		rec := s.record(k, scheduled, queueWait)
		req := NewRequest(client.APIChat, rec.RequestID, it, s.IgnoreEOS)
		WithFeatures(&req, s.Features)
		req.InputTokens = intended
		req.Header = header
		var reply bytes.Buffer
		if k < turns {
			req.Collect = &reply
		}
		s.Client.Do(ctx, req, rec)
		completed := time.Now()
		rec.SessionID, rec.Turn = s.ID, k // Do starts the Record afresh
		if k > 1 {
			rec.SessionReplica = prober.SameReplica(prevBackend, rec.Backend)
		}
		prevBackend = rec.Backend
		ok, prompt, completion := rec.OK(), rec.PromptTokens, rec.CompletionTokens
		if prompt <= 0 {
			prompt = intended
		}
		s.Done(rec, it.Prompt)
		switch {
		case !ok && ctx.Err() != nil:
			return SessionEnd{k, workload.SessionCanceled}
		case !ok:
			return SessionEnd{k, workload.SessionFailed}
		case k >= turns:
			return SessionEnd{k, workload.SessionComplete}
		}
		conv.Reply(reply.String(), prompt, completion)
		scheduled, queueWait = completed.Add(mt.ThinkTime), 0
		if mt.ThinkTime > 0 && !schedule.SleepUntil(ctx, scheduled) {
			return SessionEnd{k, workload.SessionCanceled}
		}
	}
}

// record returns turn's Record with the session's fields set.
func (s *Session) record(turn int, scheduled time.Time, queueWait time.Duration) *prober.Record {
	rec := s.NewRecord(turn)
	rec.Scheduled, rec.QueueWait = scheduled, queueWait
	rec.SessionID, rec.Turn = s.ID, turn
	return rec
}
