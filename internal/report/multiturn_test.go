package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

func TestMultiTurnSection(t *testing.T) {
	res := ladder()
	if a := string(Analysis(res)); strings.Contains(a, "Multi-turn") {
		t.Fatal("a single-turn sweep's analysis has a multi-turn section")
	}
	st := res.Steps[1]
	st.MultiTurn = &sweep.MultiTurnStats{
		Sessions: 40, Requests: 110, MeanTurns: 2.75, OfferedRequestRate: st.Level * 2.75, ContextTokensResent: 5120,
		EndReasons: map[string]int{"complete": 35, "context_limit": 3, "failed": 2, "canceled": 0},
		FirstTurn:  sweep.TurnStats{Requests: 40, Completed: 40, MeanPromptTokens: 80, TTFTMeanMS: 30, TTFTP50MS: 28, TTFTP99MS: 60},
		LaterTurns: sweep.TurnStats{Requests: 70, Completed: 68, MeanPromptTokens: 240, TTFTMeanMS: 12, TTFTP50MS: 11, TTFTP99MS: 25},
		ByTurn: []sweep.TurnStats{
			{Turn: 1, Requests: 40, Completed: 40, MeanPromptTokens: 80, TTFTMeanMS: 30, TTFTP50MS: 28, TTFTP99MS: 60},
			{Turn: 2, Requests: 40, Completed: 39, MeanPromptTokens: 170, TTFTMeanMS: 12, TTFTP50MS: 11, TTFTP99MS: 24},
			{Turn: 3, Requests: 30, Completed: 29, MeanPromptTokens: 330, TTFTMeanMS: 13, TTFTP50MS: 12, TTFTP99MS: 25},
		},
		Affinity: sweep.SessionAffinity{SameReplica: 45, OtherReplica: 15, Unknown: 10, Ratio: ptr(0.75), CacheReported: 68, CacheHits: 51},
	}
	a := string(Analysis(res))
	checkText(t, "analysis", a, a, []string{
		"## Multi-turn sessions\n\n",
		"a step's rate is in **sessions/s**: the requests per second it offered are sessions/s × mean turns",
		"| step | sessions/s | sessions | mean turns | requests/s offered | complete | context_limit | failed | canceled | turn-1 TTFT p50 |",
		"| 1 | 2 | 40 | 2.75 | 5.5 | 35 | 3 | 2 | 0 | 28 | 60* | 11 | 25* | 5120 |",
		"### TTFT by turn (ms)",
		"| 1 | 3 | 30 | 29 | 330 | 13 | 12 | 25* |",
		"### Session affinity",
		"| 1 | 45 | 15 | 10 | 75% | 68 | 51 | not-recorded |",
	}, nil)
	if i, j := strings.Index(a, "## Steps"), strings.Index(a, "## Multi-turn sessions"); !(i >= 0 && j > i) {
		t.Errorf("multi-turn section at %d, steps at %d: want it after the steps", j, i)
	}
	out := tableText(t, res)
	checkText(t, "table", out, out, []string{
		"multi-turn: rate = sessions/s, each turn a request (requests/s offered = sessions/s x mean turns)",
		"step 1: 40 sessions, 2.75 turns each, 5.5 req/s offered; TTFT p50 turn 1 28 ms, later turns 11 ms",
	}, nil)
}

func ptr(v float64) *float64 { return &v }
