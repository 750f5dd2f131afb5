package probemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// Answer-check metric family names (probes with answer_checks).
const (
	NameAnswerChecks   = "llmprobe_answer_checks_total"
	NameAnswerLastPass = "llmprobe_answer_check_last_pass_timestamp_seconds"
)

var _ manager.AnswerObserver = (*Metrics)(nil)

// AnswerResults lists the values of the result label of
// llmprobe_answer_checks_total (answer.Outcomes), which ProbeStarted
// pre-creates for every check of an answer-check probe.
var AnswerResults = answer.Outcomes

// answerVecs are the answer-check metrics.
type answerVecs struct {
	checks   *prometheus.CounterVec
	lastPass *prometheus.GaugeVec
}

func newAnswerVecs() answerVecs {
	return answerVecs{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameAnswerChecks,
			Help: "Answer checks judged, by check and result: pass (the reply met its expectation), fail (it did not), " +
				"error (no reply to judge: the request failed, see llmprobe_requests_total)."},
			[]string{"target", "probe", "check", "result"}),
		lastPass: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameAnswerLastPass,
			Help: "Unix time at which the check's request that last passed was sent; absent until a check passes."},
			[]string{"target", "probe", "check"}),
	}
}

// initAnswerChecks creates the series of every result of every check with
// value zero, so that increase() sees a check's first failure.
func (m *Metrics) initAnswerChecks(target, probe string, checks []string) {
	for _, c := range checks {
		for _, r := range AnswerResults {
			m.answers.checks.WithLabelValues(target, probe, c, string(r))
		}
	}
}

// AnswerChecked counts one check's result and, on a pass, sets its last
// pass time (the time its request was sent).
func (m *Metrics) AnswerChecked(target, probe string, r answer.Result) {
	m.answers.checks.WithLabelValues(target, probe, r.Check, string(r.Outcome)).Inc()
	if r.Outcome == answer.Pass && !r.Time.IsZero() {
		m.answers.lastPass.WithLabelValues(target, probe, r.Check).Set(float64(r.Time.UnixNano()) / 1e9)
	}
}
