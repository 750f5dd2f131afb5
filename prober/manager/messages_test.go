package manager_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestDaemonProbeMessages runs a daemon probe with api: messages (the
// Anthropic Messages API) against the simulator's reasoning persona, with
// tools and no_stream on a share of the requests: every request succeeds,
// streamed ones with TTFT, reasoning and usage tokens, tool requests with
// one tool call; the TTFT histogram counts the streamed requests.
func TestDaemonProbeMessages(t *testing.T) {
	sim := fastSim()
	sim.ReasoningTokens = 4
	base, _ := simtest.Start(t, sim)
	reg, evs := runFor(t, oneProbe(t, "sim", base, "messages", "msgs", 32, 16, `{kind: no_stream, share: 0.3}`,
		`{kind: tools, share: 0.3, tools: [{name: get_weather, parameters: {type: object, required: [city], properties: {city: {type: string}}}}]}`), 40)
	good := succeeded(t, evs)
	ok, streamed, tools := len(good), 0, 0
	for _, r := range good {
		if slices.Contains(r.Features, workload.FeatureTools) {
			tools++
			if r.ToolCalls != 1 || r.FinishReason != "tool_calls" {
				t.Errorf("record %s: tool calls %d, finish %q", r.RequestID, r.ToolCalls, r.FinishReason)
			}
		}
		if r.PromptTokens <= 0 || r.CompletionTokens <= 0 || r.TokensCounted {
			t.Errorf("record %s: prompt %d, completion %d (counted %v)", r.RequestID, r.PromptTokens, r.CompletionTokens, r.TokensCounted)
		}
		if !r.NoStream {
			streamed++
			if r.TTFT <= 0 || r.TTFR <= 0 || r.ReasoningTokens <= 0 || r.E2E < r.TTFT {
				t.Errorf("record %s: TTFT %v, TTFR %v, reasoning %d", r.RequestID, r.TTFT, r.TTFR, r.ReasoningTokens)
			}
		}
	}
	if ok == 0 || streamed == 0 || streamed == ok || tools == 0 {
		t.Errorf("%d ok, %d streamed, %d with tools", ok, streamed, tools)
	}
	lbl := map[string]string{"target": "sim", "probe": "msgs"}
	if got := counter(t, reg, "llmprobe_time_to_first_token_seconds", lbl); int(got) != streamed {
		t.Errorf("TTFT histogram count %v, streamed successful records %d", got, streamed)
	}
}

// TestAnswerChecksMessages runs answer checks over the Messages API, a
// check with chat messages (a system prompt) among them: the replies are
// judged as chat's.
func TestAnswerChecksMessages(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	m, _, obs := startAnswerChecks(t, base, "api: messages", checkAdd,
		`{"id":"sys","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is 3 + 4? Answer with the number only."}],"number":7}`,
		checkWrong)
	m.Stop()
	res, recs, _ := obs.snapshot()
	byID := checkAddAndWrong(t, res)
	if r := byID["sys"]; r.Outcome != answer.Pass || r.Reply != "7" {
		t.Errorf("sys: %+v", r)
	}
	for _, r := range recs {
		if !r.OK() || r.TTFT <= 0 {
			t.Errorf("record %+v", r)
		}
	}
}

// TestDaemonProbeMessagesTGI: api: messages against the TGI persona
// (detected from its /metrics) fails every probe before any request with
// class http_4xx and a message naming TGI, instead of TGI's bare 404.
func TestDaemonProbeMessagesTGI(t *testing.T) {
	sim := fastSim()
	sim.Engine = simulator.EngineTGI
	base, _ := simtest.Start(t, sim)
	_, evs := runFor(t, oneProbe(t, "tgi", base, "messages", "msgs", 32, 8), 3)
	refused := 0
	for _, e := range evs {
		r := e.Record
		if r.Error == "canceled" {
			continue
		}
		refused++
		if r.Error != "http_4xx" || !strings.Contains(r.ErrorMessage, "TGI serves no Anthropic Messages API") || r.HTTPStatus != 0 {
			t.Errorf("record %s: %s (status %d): %s", r.RequestID, r.Error, r.HTTPStatus, r.ErrorMessage)
		}
	}
	if refused < 3 {
		t.Errorf("%d refused records, want at least 3", refused)
	}
}
