package probemetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmprobe/llmprobe/prober/answer"
)

// answerFixture adds the answer checks of the golden exposition: probe
// "answers" of target "sim" with checks add and copy; add passed twice and
// failed once, copy errored once.
func answerFixture(m *Metrics) {
	m.initAnswerChecks("sim", "answers", []string{"add", "copy"})
	for i, o := range []answer.Outcome{answer.Pass, answer.Fail, answer.Pass} {
		m.AnswerChecked("sim", "answers", answer.Result{Check: "add", Outcome: o, Time: time.Unix(1700000000+int64(i), 500_000_000)})
	}
	m.AnswerChecked("sim", "answers", answer.Result{Check: "copy", Outcome: answer.Error, Time: time.Unix(1700000100, 0)})
}

func TestAnswerChecks(t *testing.T) {
	reg, m := newMetrics()
	answerFixture(m)
	want := `
# HELP llmprobe_answer_check_last_pass_timestamp_seconds Unix time at which the check's request that last passed was sent; absent until a check passes.
# TYPE llmprobe_answer_check_last_pass_timestamp_seconds gauge
llmprobe_answer_check_last_pass_timestamp_seconds{check="add",probe="answers",target="sim"} 1.7000000025e+09
# HELP llmprobe_answer_checks_total Answer checks judged, by check and result: pass (the reply met its expectation), fail (it did not), error (no reply to judge: the request failed, see llmprobe_requests_total).
# TYPE llmprobe_answer_checks_total counter
llmprobe_answer_checks_total{check="add",probe="answers",result="error",target="sim"} 0
llmprobe_answer_checks_total{check="add",probe="answers",result="fail",target="sim"} 1
llmprobe_answer_checks_total{check="add",probe="answers",result="pass",target="sim"} 2
llmprobe_answer_checks_total{check="copy",probe="answers",result="error",target="sim"} 1
llmprobe_answer_checks_total{check="copy",probe="answers",result="fail",target="sim"} 0
llmprobe_answer_checks_total{check="copy",probe="answers",result="pass",target="sim"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameAnswerChecks, NameAnswerLastPass); err != nil {
		t.Error(err)
	}
	m.DeleteProbe("sim", "answers")
	if n := testutil.CollectAndCount(m, NameAnswerChecks, NameAnswerLastPass); n != 0 {
		t.Errorf("%d answer series after DeleteProbe", n)
	}
}
