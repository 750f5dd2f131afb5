package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// multiTurn reports whether any step ran multi-turn sessions.
func multiTurn(res *sweep.Result) bool {
	for _, st := range res.Steps {
		if st.MultiTurn != nil {
			return true
		}
	}
	return false
}

// writeMultiTurn writes the "Multi-turn sessions" section: per step, the
// sessions and how they ended, the requests per second they offered, and
// TTFT of turn 1 against later turns (the prefix-cache effect), then TTFT
// by turn. Nothing for a single-turn sweep.
func writeMultiTurn(b *bytes.Buffer, res *sweep.Result) {
	if !multiTurn(res) {
		return
	}
	b.WriteString("### Multi-turn sessions\n\n")
	b.WriteString("Each arrival started a chat session whose turn k sent the whole conversation so far (the server's actual " +
		"replies included), so a step's rate is in **sessions/s**: the requests per second it offered are sessions/s × mean turns. " +
		"Every turn is a request of the step's figures above; a later turn is scheduled at the previous turn's completion plus " +
		"the think time, and its send lag is measured from then.\n\n")
	b.WriteString("| step | sessions/s | sessions | mean turns | requests/s offered | " + strings.Join(workload.SessionEndReasons, " | ") +
		" | turn-1 TTFT p50 | turn-1 TTFT p99 | later TTFT p50 | later TTFT p99 | context tokens resent |\n")
	b.WriteString("|---|--:|--:|--:|--:|" + strings.Repeat("--:|", len(workload.SessionEndReasons)) + "--:|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		m := st.MultiTurn
		if m == nil {
			continue
		}
		offered := "-"
		if m.OfferedRequestRate > 0 {
			offered = num(m.OfferedRequestRate)
		}
		var ends []string
		for _, r := range workload.SessionEndReasons {
			ends = append(ends, fmt.Sprint(m.EndReasons[r]))
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %d |\n", stepName(st), num(st.Level), m.Sessions,
			num(m.MeanTurns), offered, strings.Join(ends, " | "), turnP50(m.FirstTurn), turnP99(m.FirstTurn),
			turnP50(m.LaterTurns), turnP99(m.LaterTurns), m.ContextTokensResent)
	}
	b.WriteString("\nTTFT in ms of the successful turns; a p99 marked * rests on fewer than 100 samples. A session ends complete, " +
		"at the context limit (its next turn would not fit the model's max_model_len or the workload's max_context_tokens: not an error), " +
		"failed (a turn failed; its later turns were not sent) or canceled (the step ended first). Context tokens resent is the " +
		"earlier turns' prompt and reply tokens that later turns sent again: the server's prefix cache may hit them by design, and the " +
		"unintended-prefix-cache check allows them.\n\n")
	b.WriteString("#### TTFT by turn (ms)\n\n| step | turn | requests | ok | mean prompt tokens | TTFT mean | TTFT p50 | TTFT p99 |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		if st.MultiTurn == nil {
			continue
		}
		for _, t := range st.MultiTurn.ByTurn {
			fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %s | %s | %s |\n", stepName(st), t.Turn, t.Requests, t.Completed,
				num(t.MeanPromptTokens), turnMean(t), turnP50(t), turnP99(t))
		}
	}
	b.WriteString("\n")
	writeAffinity(b, res)
}

// writeAffinity writes the "Session affinity" table: per step, where the
// later turns were answered (the previous turn's replica or another) and
// what they found cached.
func writeAffinity(b *bytes.Buffer, res *sweep.Result) {
	b.WriteString("#### Session affinity\n\n| step | same replica | other replica | unknown | affinity | cache reported | cache hits | cache-hit share |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|\n")
	ratio := func(r *float64) string {
		if r == nil {
			return "not-recorded"
		}
		return pct(*r)
	}
	for _, st := range res.Steps {
		a := st.MultiTurn
		if a == nil {
			continue
		}
		f := a.Affinity
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %d | %d | %s |\n", stepName(st), f.SameReplica, f.OtherReplica, f.Unknown,
			ratio(f.Ratio), f.CacheReported, f.CacheHits, ratio(f.CacheHitRatio))
	}
	b.WriteString("\nLater turns (turn 2 and up) by whether the replica that answered (the --attribution-header's value) is the one " +
		"that answered the session's previous turn; unknown when either was not named. Affinity is same / (same + other): 1 behind " +
		"a router that keeps sessions (each turn sent its session's id in X-Session-ID), about 1/n behind one that spreads them over n " +
		"replicas. The cache-hit share counts the later turns whose usage reported cached prompt tokens and found at least one; " +
		"not-recorded without --attribution-header, or when the server reports no cached tokens.\n\n")
}

// turnMS is one of a turn group's TTFT figures in ms: "-" without a
// completed turn; turnP99 marks an unreliable p99 with "*".
func turnMS(t sweep.TurnStats, ms float64) string {
	if t.Completed == 0 {
		return "-"
	}
	return num(ms)
}

func turnMean(t sweep.TurnStats) string { return turnMS(t, t.TTFTMeanMS) }

func turnP50(t sweep.TurnStats) string { return turnMS(t, t.TTFTP50MS) }

func turnP99(t sweep.TurnStats) string {
	if t.Completed > 0 && !t.P99Reliable {
		return num(t.TTFTP99MS) + "*"
	}
	return turnMS(t, t.TTFTP99MS)
}

// multiTurnLines are the table's lines for a multi-turn sweep: the rate is
// in sessions/s, and per step the requests/s offered and TTFT of turn 1
// against later turns.
func multiTurnLines(res *sweep.Result) []string {
	if !multiTurn(res) {
		return nil
	}
	lines := []string{"multi-turn: rate = sessions/s, each turn a request (requests/s offered = sessions/s x mean turns)"}
	for _, st := range res.Steps {
		m := st.MultiTurn
		if m == nil {
			continue
		}
		offered := ""
		if m.OfferedRequestRate > 0 {
			offered = fmt.Sprintf(", %s req/s offered", num(m.OfferedRequestRate))
		}
		lines = append(lines, fmt.Sprintf("step %s: %d sessions, %s turns each%s; TTFT p50 turn 1 %s ms, later turns %s ms",
			stepName(st), m.Sessions, num(m.MeanTurns), offered, turnP50(m.FirstTurn), turnP50(m.LaterTurns)))
	}
	return lines
}
