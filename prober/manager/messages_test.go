package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
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
	path := filepath.Join(t.TempDir(), "llmprobe.yml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    api: messages
    probes:
      - name: msgs
        rate: 40
        workload:
          input_tokens: {dist: fixed, value: 32}
          output_tokens: {dist: fixed, value: 16}
          request:
            features:
              - {kind: no_stream, share: 0.3}
              - {kind: tools, share: 0.3, tools: [{name: get_weather, parameters: {type: object, required: [city], properties: {city: {type: string}}}}]}
`, base)), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	col := newCollector()
	m := newManager(reg, col)
	if err := m.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	col.waitFor(t, 30*time.Second, "40 records", func(evs []event) bool { return len(evs) >= 40 })
	m.Stop()
	ok, streamed, tools := 0, 0, 0
	for _, e := range col.snapshot() {
		r := e.Record
		if !r.OK() {
			if r.Error != "canceled" {
				t.Errorf("record %s failed: %s: %s", r.RequestID, r.Error, r.ErrorMessage)
			}
			continue
		}
		ok++
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
	set := filepath.Join(t.TempDir(), "set.jsonl")
	if err := os.WriteFile(set, []byte(
		`{"id":"add","prompt":"What is 2 + 2? Answer with the number only.","number":4}`+"\n"+
			`{"id":"sys","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is 3 + 4? Answer with the number only."}],"number":7}`+"\n"+
			`{"id":"wrong","prompt":"What is 2 + 3? Answer with the number only.","number":6}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parse(t, fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    api: messages
    probes:
      - name: answers
        answer_checks: {set: %s, every: 10m}
`, base, set))
	obs := &answerCollector{}
	reg := prometheus.NewRegistry()
	m := manager.New(manager.Options{Observers: []manager.Observer{probemetrics.New(reg), obs}})
	if err := m.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "three checks judged", func() bool {
		res, _, _ := obs.snapshot()
		return len(res) == 3
	})
	m.Stop()
	res, recs, _ := obs.snapshot()
	byID := map[string]answer.Result{}
	for _, r := range res {
		byID[r.Check] = r
	}
	if r := byID["add"]; r.Outcome != answer.Pass || r.Reply != "4" || r.FinishReason != "stop" {
		t.Errorf("add: %+v", r)
	}
	if r := byID["sys"]; r.Outcome != answer.Pass || r.Reply != "7" {
		t.Errorf("sys: %+v", r)
	}
	if r := byID["wrong"]; r.Outcome != answer.Fail || !strings.Contains(r.Reason, `reply "5" is not 6`) {
		t.Errorf("wrong: %+v", r)
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
	path := filepath.Join(t.TempDir(), "llmprobe.yml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
targets:
  - name: tgi
    base_url: %s
    api: messages
    probes:
      - name: msgs
        rate: 40
        workload:
          input_tokens: {dist: fixed, value: 32}
          output_tokens: {dist: fixed, value: 8}
`, base)), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	m := newManager(prometheus.NewRegistry(), col)
	if err := m.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	col.waitFor(t, 30*time.Second, "3 records", func(evs []event) bool { return len(evs) >= 3 })
	m.Stop()
	refused := 0
	for _, e := range col.snapshot() {
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
