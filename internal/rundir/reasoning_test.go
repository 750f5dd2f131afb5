package rundir

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestRunReasoningChat sweeps the simulator's reasoning persona
// (`simulate --reasoning-tokens 64`) with chat: every record has 64
// reasoning tokens from the usage, its answer TTFT is above its TTFT by
// the thinking time, the step's reasoning figures reach result.json and
// analysis.md, and the ttfa SLO decides goodput: a threshold below the
// thinking time makes no request good although TTFT holds, a generous one
// makes every request good.
func TestRunReasoningChat(t *testing.T) {
	sc := simtest.Fast()
	sc.ReasoningTokens = 64
	url, _ := simtest.Start(t, sc)
	for _, tt := range []struct {
		name     string
		ttfa     time.Duration
		wantGood bool
	}{
		{name: "ttfa below the thinking time", ttfa: 20 * time.Millisecond},
		{name: "ttfa generous", ttfa: 30 * time.Second, wantGood: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, url)
			cfg.API = "chat"
			cfg.Rates, cfg.RatesText = []float64{40}, "40"
			cfg.Workload = workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(80)}
			cfg.SLO = slo.SLO{TTFT: 30 * time.Second, TTFA: tt.ttfa}
			res := mustRun(t, cfg, testOptions(t))
			verifyClean(t, res.Dir)
			st := res.Result.Steps[0].Stats
			if st.Completed != 20 || st.Failed != 0 {
				t.Fatalf("completed %d, failed %d", st.Completed, st.Failed)
			}
			if want := map[bool]int{true: 20, false: 0}[tt.wantGood]; st.Good != want {
				t.Errorf("good %d, want %d (ttfa %v, answer TTFT p50 %v ms, TTFT p50 %v ms)", st.Good, want, tt.ttfa, st.TTFA.P50, st.TTFT.P50)
			}
			r := st.Reasoning
			if r == nil || r.Requests != 20 || r.ReasoningTokens != 20*64 || r.AnswerTokens != 20*16 || r.CountedRequests != 0 ||
				r.ThinkingTime.N != 20 || r.ThinkingTime.P50 <= 0 {
				t.Fatalf("reasoning stats %+v", r)
			}
			n := 0
			err := artifacts.ReadRecords(filepath.Join(res.Dir, "records.jsonl"), func(l artifacts.RecordLine, _ []byte) error {
				n++
				rec := l.Record
				if rec.ReasoningTokens != 64 || rec.ReasoningTokensCounted || rec.AnswerTokens() != 16 {
					t.Errorf("%s: reasoning tokens %d (counted %v), answer tokens %d", rec.RequestID, rec.ReasoningTokens,
						rec.ReasoningTokensCounted, rec.AnswerTokens())
				}
				// TTFT is the role chunk or the first reasoning token; the
				// answer comes the thinking time after the first reasoning token.
				// (A busy machine may deliver the last reasoning and the first
				// answer tokens in one event: a thinking time of 0 is right then;
				// the step's median above is positive.)
				if rec.TTFR < rec.TTFT || rec.ThinkingTime < 0 || rec.TTFTText != rec.TTFR+rec.ThinkingTime ||
					rec.TTFTText-rec.TTFT < rec.ThinkingTime {
					t.Errorf("%s: TTFT %v, TTFR %v, thinking %v, answer TTFT %v", rec.RequestID, rec.TTFT, rec.TTFR, rec.ThinkingTime, rec.TTFTText)
				}
				return nil
			})
			if err != nil || n != 20 {
				t.Fatalf("records: %d, %v", n, err)
			}
			b := mustRead(t, filepath.Join(res.Dir, "analysis.md"))
			for _, want := range []string{"### Reasoning and tool calls", "answer TTFT <= "} {
				if !strings.Contains(string(b), want) {
					t.Errorf("analysis.md lacks %q", want)
				}
			}
		})
	}
}

// TestRunResponses sweeps the Responses API (`sweep --api responses`)
// against the simulator: the steps complete with tokens from the usage of
// response.completed, in result.json and analysis.md.
func TestRunResponses(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.API = "responses"
	res, back := runResult(t, cfg)
	if len(back.Steps) != 2 {
		t.Fatalf("%d steps in result.json", len(back.Steps))
	}
	for _, st := range back.Steps {
		s := st.Stats
		if s.Completed != 20 || s.Failed != 0 || s.TotalOutputTokens != 20*4 || s.TTFT.N != 20 || s.FinishReasons["length"] != 20 {
			t.Errorf("step %d: completed %d, failed %d, output tokens %d, TTFT n %d, finish %v", st.Index, s.Completed, s.Failed,
				s.TotalOutputTokens, s.TTFT.N, s.FinishReasons)
		}
	}
	err := artifacts.ReadRecords(filepath.Join(res.Dir, "records.jsonl"), func(l artifacts.RecordLine, _ []byte) error {
		if l.TokensCounted || l.CompletionTokens != 4 || l.PromptTokens <= 0 || l.Done <= 0 {
			t.Errorf("%s: completion %d (counted %v), prompt %d, done %v", l.RequestID, l.CompletionTokens, l.TokensCounted, l.PromptTokens, l.Done)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	md := string(mustRead(t, filepath.Join(res.Dir, "analysis.md")))
	if !strings.Contains(md, "(API responses)") {
		t.Errorf("analysis.md does not name the API:\n%s", md[:min(len(md), 600)])
	}
}

// runResult runs cfg with testOptions, checks the run directory is clean
// (verifyClean) and decodes its result.json.
func runResult(t *testing.T, cfg sweep.Config) (*Outcome, *sweep.Result) {
	t.Helper()
	res := mustRun(t, cfg, testOptions(t))
	verifyClean(t, res.Dir)
	back, err := sweep.DecodeResult(bytes.NewReader(mustRead(t, filepath.Join(res.Dir, artifacts.ResultFile))))
	if err != nil {
		t.Fatal(err)
	}
	return res, back
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
