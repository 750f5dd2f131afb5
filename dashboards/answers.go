package dashboards

import "fmt"

// answerSection is the "Answer checks" row of the SLO overview: the pass
// ratio of probes with answer_checks (rules/llmprobe.answers.yml), the
// checks that fail, and the judged replies by result (docs/quality.md).
func answerSection() section {
	return section{title: "Answer checks (are the replies right?)", panels: []*Panel{
		stat("Answer pass ratio (30m)", "Share of the judged answer-check replies that passed over 30 minutes "+
			"(target_probe:llmprobe_answer_checks_pass:ratio30m; errors are not judged). LLMProbeAnswerRegression "+
			"fires below 90 % with at least 20 judged replies. Only probes with answer_checks show here.", "percentunit", 6,
			steps("red", 0.9, "green"),
			instant(fmt.Sprintf(`target_probe:llmprobe_answer_checks_pass:ratio30m{%s}`, sel), tp)),
		timeseries("Answer pass ratio", "Pass ratio of the judged replies over 30 minutes and 6 hours; dashed: the "+
			"alert's 90 %. A broken chat template, a mismatched tokenizer or the wrong model behind the served name "+
			"drops it at once; one flaky check costs about 5 %.", "percentunit", 18,
			q(fmt.Sprintf(`target_probe:llmprobe_answer_checks_pass:ratio30m{%s}`, sel), "30m "+tp),
			q(fmt.Sprintf(`target_probe:llmprobe_answer_checks_pass:ratio6h{%s}`, sel), "6h "+tp),
			q(fmt.Sprintf(`target_probe:llmprobe_answer_checks_pass:ratio30m{%s} * 0 + 0.9`, sel), "alert "+tp),
		).ratio().dashed("C", "red"),
		timeseries("Checks that fail (30m)", "Pass ratio over 30 minutes of each check that did not always pass "+
			"(target_probe_check:llmprobe_answer_checks_pass:ratio30m < 1); the landing page shows each check's last reply.",
			"percentunit", 12,
			q(fmt.Sprintf(`target_probe_check:llmprobe_answer_checks_pass:ratio30m{%s} < 1`, sel), "{{check}} "+tp),
		).ratio(),
		timeseries("Answer checks by result", "Checks judged per second by result: pass, fail, error (the request "+
			"failed; see the errors by class).", "reqps", 12,
			q(fmt.Sprintf(`sum by (cluster, target, probe, result) (rate(llmprobe_answer_checks_total{%s}[$__rate_interval]))`, sel), "{{result}} "+tp),
		).minZero(),
	}}
}
