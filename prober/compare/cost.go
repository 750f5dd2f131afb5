package compare

import (
	"fmt"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// stepCost is the cost per million good output tokens of st at price USD
// per hour under s (the zero SLO: every success is good), with the good
// output tokens per second it rests on and how they were obtained:
//
//   - per-request samples (output tokens of the requests that met s, over
//     the step's duration): exact;
//   - llmprobe's recorded good_output_throughput, when the run counted it
//     under s: exact;
//   - without an SLO, output_throughput: exact (every success is good);
//   - output_throughput × request_goodput / request_throughput: an
//     approximation that gives the good requests the mean output length
//     of all successful ones (vllm bench serve files record no good tokens);
//   - output_throughput alone under an SLO the file cannot recount: a lower
//     bound of the cost, SLO misses not counted.
//
// cost is nil when it cannot be computed (no price, no duration, no good
// token); note says why or how.
func stepCost(st *Step, s slo.SLO, price float64) (cost, goodTokensPerS *float64, note string) {
	if !(price > 0) {
		return nil, nil, ""
	}
	var g float64
	switch {
	case st.Requests != nil && st.Duration > 0 && !missingTokens(st.Requests):
		sum := 0
		for _, q := range st.Requests {
			if q.Good(s) {
				sum += q.OutputTokens
			}
		}
		g = float64(sum) / st.Duration
		note = fmt.Sprintf("%d good output tokens over %s s (per-request samples)", sum, Num(st.Duration))
	case st.GoodOutputThroughput != nil && st.GoodputSLOKnown && st.GoodputSLO == s:
		g = *st.GoodOutputThroughput
		note = "good_output_throughput as the run recorded it"
	case st.OutputThroughput != nil && s.IsZero():
		g = *st.OutputThroughput
		note = "output_throughput (no SLO: every successful request is good)"
	case st.OutputThroughput != nil && st.Goodput != nil && st.Throughput > 0 && (!st.GoodputSLOKnown || st.GoodputSLO == s):
		g = *st.OutputThroughput * *st.Goodput / st.Throughput
		note = fmt.Sprintf("approximated: output_throughput %s × request_goodput %s / request_throughput %s "+
			"(good requests assumed to have the mean output length; no per-request output tokens recorded)",
			Num(*st.OutputThroughput), Num(*st.Goodput), Num(st.Throughput))
		if !st.GoodputSLOKnown {
			note += ", under the run's own --goodput (the file does not record which)"
		}
	case st.OutputThroughput != nil:
		g = *st.OutputThroughput
		note = fmt.Sprintf("a lower bound: output_throughput %s counts every successful request's tokens, "+
			"SLO misses included (the file records no goodput under this SLO and no per-request samples)", Num(g))
	default:
		return nil, nil, "the input has neither output_throughput nor per-request output tokens"
	}
	c, ok := sweep.CostPerMillion(price, g)
	if !ok {
		return nil, &g, "no good output token: the cost is not finite (" + note + ")"
	}
	return &c, &g, note
}

// missingTokens reports whether a successful request lacks its output
// tokens.
func missingTokens(rs []Request) bool {
	for _, q := range rs {
		if q.OK && q.OutputTokens < 0 {
			return true
		}
	}
	return false
}
