package web

import (
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// The landing page shows the last result of every answer check (probes
// with answer_checks): the Window keeps it, one per (target, probe,
// check), with the reply as the manager handed it (through the target's
// Redactor), cut to maxShownReply bytes.

var _ manager.AnswerObserver = (*Window)(nil)

// maxShownReply bounds the reply the landing page shows of a check.
const maxShownReply = 200

// answerKey names one check of one probe.
type answerKey struct{ probe, check string }

// answerStore keeps the last result of each check, per target.
type answerStore struct {
	mu   sync.Mutex
	last map[string]map[answerKey]answer.Result // target -> check -> result
}

// AnswerRow is one check's last result as the landing page shows it.
type AnswerRow struct {
	Probe, Check string
	Kind         answer.Kind
	Outcome      answer.Outcome
	Time         time.Time
	// Reply is the reply, at most maxShownReply bytes; Cut says it was
	// longer.
	Reply  string
	Cut    bool
	Reason string
}

// AnswerChecked keeps r as the last result of its check.
func (w *Window) AnswerChecked(target, probe string, r answer.Result) {
	r.Logprobs = nil // the page shows none; do not retain the caller's slice
	a := &w.answers
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[string]map[answerKey]answer.Result{}
	}
	m := a.last[target]
	if m == nil {
		m = map[answerKey]answer.Result{}
		a.last[target] = m
	}
	m[answerKey{probe, r.Check}] = r
}

// Answers returns the last result of every check of target's probes, by
// probe then check.
func (w *Window) Answers(target string) []AnswerRow {
	a := &w.answers
	a.mu.Lock()
	defer a.mu.Unlock()
	var rows []AnswerRow
	for k, r := range a.last[target] {
		reply, cut := r.Reply, r.ReplyTruncated
		if len(reply) > maxShownReply {
			reply, cut = reply[:maxShownReply], true
			for len(reply) > 0 && !utf8.ValidString(reply) {
				reply = reply[:len(reply)-1]
			}
		}
		rows = append(rows, AnswerRow{Probe: k.probe, Check: k.check, Kind: r.Kind, Outcome: r.Outcome, Time: r.Time,
			Reply: reply, Cut: cut, Reason: r.Reason})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Probe != rows[j].Probe {
			return rows[i].Probe < rows[j].Probe
		}
		return rows[i].Check < rows[j].Check
	})
	return rows
}

// deleteAnswers forgets the checks of a removed probe ("" : of every probe
// of the target).
func (w *Window) deleteAnswers(target, probe string) {
	a := &w.answers
	a.mu.Lock()
	defer a.mu.Unlock()
	if probe == "" {
		delete(a.last, target)
		return
	}
	for k := range a.last[target] {
		if k.probe == probe {
			delete(a.last[target], k)
		}
	}
}
