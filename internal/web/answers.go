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

// answerStore keeps the last result of each check, per target, and the
// judged results (pass, fail) of each probe over the last answerWindow, for
// LLMProbeAnswerRegression's condition (families.go).
type answerStore struct {
	mu     sync.Mutex
	last   map[string]map[answerKey]answer.Result // target -> check -> result
	judged map[string]map[string][]judgedAnswer   // target -> probe -> results, oldest first
}

// judgedAnswer is one judged reply: when it was counted and whether it
// passed.
type judgedAnswer struct {
	at   time.Time
	pass bool
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
	if r.Outcome != answer.Pass && r.Outcome != answer.Fail {
		return // an error is no evidence about the answers, as in the rules
	}
	now := w.now()
	if a.judged == nil {
		a.judged = map[string]map[string][]judgedAnswer{}
	}
	if a.judged[target] == nil {
		a.judged[target] = map[string][]judgedAnswer{}
	}
	js := a.judged[target][probe]
	cut := now.Add(-answerWindow)
	i := 0
	for i < len(js) && js[i].at.Before(cut) {
		i++
	}
	a.judged[target][probe] = append(js[i:], judgedAnswer{at: now, pass: r.Outcome == answer.Pass})
}

// judgedSince returns each probe of target with its judged and passed
// replies since cut.
func (w *Window) judgedSince(target string, cut time.Time) map[string][2]int {
	a := &w.answers
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][2]int{}
	for probe, js := range a.judged[target] {
		var n [2]int
		for _, j := range js {
			if j.at.Before(cut) {
				continue
			}
			n[0]++
			if j.pass {
				n[1]++
			}
		}
		if n[0] > 0 {
			out[probe] = n
		}
	}
	return out
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
		delete(a.judged, target)
		return
	}
	delete(a.judged[target], probe)
	for k := range a.last[target] {
		if k.probe == probe {
			delete(a.last[target], k)
		}
	}
}
