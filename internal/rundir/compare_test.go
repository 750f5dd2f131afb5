package rundir

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// testProcedure compares base and cand in two rounds (one per side) of the
// first level of testConfig, writing under out.
func testProcedure(t *testing.T, base, cand, out string) *compare.Procedure {
	t.Helper()
	side := func(target string) sweep.Config {
		cfg := testConfig(t, target)
		cfg.Rates, cfg.RatesText, cfg.OutDir, cfg.Name = cfg.Rates[:1], "20", out, "cmp"
		return cfg
	}
	th, err := compare.ParseThresholds("tpot_p50=50%,throughput=20%")
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	return &compare.Procedure{Baseline: side(base), Candidate: side(cand), Order: compare.OrderABBA, Rounds: 2, Seed: 3,
		Thresholds: th, MaxRegression: "tpot_p50=50%,throughput=20%", Vary: []string{compare.FieldEndpoint}, Iters: 200,
		Decision: "ship it?", Logger: o.Logger, Args: []string{"llmprobe", "compare"}}
}

// TestRunCompare writes a compare run directory that verifies, whose
// result.json lists both rounds (each a sweep run directory) and whose
// manifest holds the settings; Analyze re-derives the same verdict from it.
// A target that cannot be prepared creates nothing; an out dir that cannot
// be created is an *OutDirError.
func TestRunCompare(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	cand, _ := simtest.Start(t, simtest.Fast())
	out := t.TempDir()
	res, err := RunCompare(context.Background(), testProcedure(t, base, cand, out), CompareOptions{Help: "usage: llmprobe compare\n"})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := artifacts.Verify(res.Dir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Errorf("verify: %v %v", err, v.Problems)
	}
	cr := res.Result
	// A busy host (or -race) can flag a round's client; compare then
	// reruns it once and keeps the first attempt, discarded: accepted with
	// that evidence. The rounds that count are one per side.
	kept := keptRounds(t, cr.Rounds)
	if !cr.Complete || len(kept) != 2 || kept[0].Side != compare.SideBaseline || kept[1].Side != compare.SideCandidate ||
		cr.Decision != "ship it?" || cr.Result == nil {
		t.Fatalf("result %+v", cr)
	}
	for _, r := range cr.Rounds {
		if _, err := os.Stat(filepath.Join(res.Dir, r.Dir, artifacts.RecordsFile)); err != nil || r.Seed != 3 {
			t.Errorf("round %d: seed %d, %v", r.Round, r.Seed, err)
		}
	}
	m, err := artifacts.ReadManifest(res.Dir)
	if err != nil || len(m.Fingerprint.Steps) != len(cr.Rounds) || m.Fingerprint.Metadata["compare.rounds"] != "2" ||
		m.Fingerprint.Metadata["compare.max_regression"] != "tpot_p50=50%,throughput=20%" {
		t.Errorf("manifest %+v (%v)", m.Fingerprint, err)
	}
	a, err := Analyze([]string{res.Dir}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Comparison == nil || a.Comparison.Outcome != cr.Verdict || a.ExitCode() != cr.ExitCode || a.Decision != "ship it?" {
		t.Errorf("analyze: %+v, want the verdict %s", a.Comparison, cr.Verdict)
	}

	empty := t.TempDir()
	if res, err := RunCompare(context.Background(), testProcedure(t, "http://127.0.0.1:1", cand, empty), CompareOptions{}); res != nil ||
		err == nil || !strings.HasPrefix(err.Error(), "baseline: ") {
		t.Errorf("unreachable baseline: %v, %v", res, err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("unreachable baseline: the out dir holds %d entries", len(entries))
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var od *OutDirError
	if res, err := RunCompare(context.Background(), testProcedure(t, base, cand, file), CompareOptions{}); res != nil || !errors.As(err, &od) {
		t.Errorf("out dir a file: %v, %v", res, err)
	}
}

// TestAnalyzeCompareDirNoSLO: analyze of a compare run directory gives
// exactly compare's verdict when the comparison had no SLO (issue 22 V2:
// result.json's max_regression holds the default goodput=5% that compare
// dropped without an SLO, and analyze re-applied it: inconclusive where
// compare said fail). The candidate decodes five times slower, so compare
// fails it on the TPOT p99.
func TestAnalyzeCompareDirNoSLO(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	slow := simtest.Fast()
	slow.StepBase = 5 * time.Millisecond
	cand, _ := simtest.Start(t, slow)
	p := testProcedure(t, base, cand, t.TempDir())
	th, err := compare.ParseThresholds(compare.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	// As compare's flags build it without --goodput and --max-regression.
	p.Thresholds, p.MaxRegression, p.Rounds = compare.DropGoodput(th), compare.DefaultThresholds, 4
	for _, cfg := range []*sweep.Config{&p.Baseline, &p.Candidate} {
		cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{50}, "50", 50
		// This test is about the verdict analyze re-derives, not the
		// client: a busy test machine must not flag a round (the process's
		// CPU includes both simulators).
		cfg.Validity.MaxSendLag, cfg.Validity.MaxClientCPU = time.Second, 64
	}
	var res *CompareOutcome
	for attempt := 1; ; attempt++ {
		res, err = RunCompare(context.Background(), p, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Result.Verdict == compare.OutcomeFail || !noisyOnly(res.Result.Result.Reasons) {
			break
		}
		// Too noisy to decide on this machine, and it said so.
		analyzeGivesCompareVerdict(t, res)
		if attempt == 2 {
			t.Skipf("twice inconclusive from noisy figures on this machine: %v", res.Result.Result.Reasons)
		}
		t.Logf("attempt %d inconclusive from noisy figures; again: %v", attempt, res.Result.Result.Reasons)
	}
	if res.Result.Verdict != compare.OutcomeFail {
		t.Fatalf("compare: %s, want fail: %v", res.Result.Verdict, res.Result.Result.Reasons)
	}
	a := analyzeGivesCompareVerdict(t, res)
	if a.ExitCode() != compare.ExitFail {
		t.Errorf("analyze exit code %d, want %d", a.ExitCode(), compare.ExitFail)
	}
}

// TestRunCompareRerunsFlaggedRound: a round whose client is flagged
// (here every candidate round: a send-lag limit of 1 ns) is rerun once
// into a directory of its own; the first attempt is listed, discarded, and
// its files are kept; the rerun, flagged again, makes the verdict
// inconclusive through the client rule. analyze of the directory skips the
// discarded round and gives exactly compare's verdict.
func TestRunCompareRerunsFlaggedRound(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	cand, _ := simtest.Start(t, simtest.Fast())
	p := testProcedure(t, base, cand, t.TempDir())
	p.Candidate.Validity.MaxSendLag = time.Nanosecond
	res, err := RunCompare(context.Background(), p, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr := res.Result
	// The candidate's round is always flagged. On a busy host (or under
	// -race) the baseline's, which runs first, may be flagged too: it is
	// then the round rerun (a comparison of 2 rounds allows one rerun in
	// all), accepted with that evidence (keptRounds), and the candidate's
	// stays flagged.
	keptRounds(t, cr.Rounds)
	want := []string{compare.SideBaseline, compare.SideCandidate, compare.SideCandidate}
	if cr.Rounds[0].Discarded != "" {
		want = []string{compare.SideBaseline, compare.SideBaseline, compare.SideCandidate}
	}
	if len(cr.Rounds) != 3 || cr.Rounds[0].Side != want[0] || cr.Rounds[1].Side != want[1] || cr.Rounds[2].Side != want[2] {
		t.Fatalf("rounds %+v, want sides %v", cr.Rounds, want)
	}
	first, again := cr.Rounds[1], cr.Rounds[2]
	if want[1] == compare.SideBaseline {
		first, again = cr.Rounds[0], cr.Rounds[1]
		if f := cr.Rounds[2]; f.Discarded != "" || f.Attempt != 0 {
			t.Errorf("the candidate's round %+v: want it kept, flagged, with no rerun left", f)
		}
	}
	if first.Discarded == "" || again.Attempt != 2 || !strings.HasSuffix(again.Dir, fmt.Sprintf("-r%d-%s-rerun", again.Round, again.Side)) {
		t.Fatalf("rounds %+v", cr.Rounds)
	}
	if again.PromptNonce == first.PromptNonce || again.PromptNonce == 0 {
		t.Errorf("the rerun's prompt nonce %d: want one of its own (the discarded attempt's was %d)", again.PromptNonce, first.PromptNonce)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, first.Dir, artifacts.RecordsFile)); err != nil {
		t.Errorf("the discarded round's records: %v", err)
	}
	if cr.Verdict != compare.OutcomeInconclusive || !strings.Contains(strings.Join(cr.Result.Reasons, "\n"), "still flagged after the reruns allowed") {
		t.Errorf("verdict %s: %v", cr.Verdict, cr.Result.Reasons)
	}
	if v, err := artifacts.Verify(res.Dir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Errorf("verify: %v %v", err, v.Problems)
	}
	analyzeGivesCompareVerdict(t, res)
}

// keptRounds returns the rounds whose evidence counts, and fails the test
// unless every other one was discarded because its client was flagged (the
// only reason compare reruns a round), with a rerun of its own after it.
func keptRounds(t *testing.T, rounds []compare.Round) []compare.Round {
	t.Helper()
	var kept []compare.Round
	for i, r := range rounds {
		if r.Discarded == "" {
			kept = append(kept, r)
			continue
		}
		if !strings.HasPrefix(r.Discarded, "client flagged, rerun: ") || !strings.Contains(r.Discarded, "client-") {
			t.Errorf("round %d (%s) discarded for %q, want its client's flags", r.Round, r.Side, r.Discarded)
		}
		if i+1 >= len(rounds) || rounds[i+1].Round != r.Round || rounds[i+1].Side != r.Side || rounds[i+1].Attempt != 2 {
			t.Errorf("round %d (%s) discarded without its rerun after it: %+v", r.Round, r.Side, rounds)
		}
		t.Logf("round %d (%s) rerun on this host: %s", r.Round, r.Side, r.Discarded)
	}
	return kept
}

// analyzeGivesCompareVerdict runs analyze on res's directory and checks that
// its verdict is exactly compare's (the same JSON); it returns analyze's output.
func analyzeGivesCompareVerdict(t *testing.T, res *CompareOutcome) *report.AnalyzeOutput {
	t.Helper()
	a, err := Analyze([]string{res.Dir}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(res.Result.Result)
	got, _ := json.Marshal(a.Comparison)
	if string(got) != string(want) {
		t.Errorf("analyze's verdict differs from compare's:\nanalyze %s\ncompare %s", got, want)
	}
	return a
}

// cancelAt cancels a comparison when round `at` starts its sweep.
type cancelAt struct {
	sweep.NopObserver
	cancel context.CancelFunc
}

func (c cancelAt) SweepStarted(sweep.SweepInfo) { c.cancel() }

// TestAnalyzeInterruptedCompare: a comparison interrupted in its third
// round is inconclusive, naming the round; analyze of its directory, which
// re-derives the verdict from the rounds it lists, says the same rather
// than judging the rounds that ran.
func TestAnalyzeInterruptedCompare(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	cand, _ := simtest.Start(t, simtest.Fast())
	p := testProcedure(t, base, cand, t.TempDir())
	p.Rounds = 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.Observer = func(r compare.Round, _ int) sweep.Observer {
		if r.Round == 3 {
			return cancelAt{cancel: cancel}
		}
		return nil
	}
	res, _ := RunCompare(ctx, p, CompareOptions{})
	if res == nil || res.Result.Complete || res.Result.Verdict != compare.OutcomeInconclusive ||
		!strings.HasPrefix(res.Result.Result.Reasons[0], "interrupted during round 3") {
		t.Fatalf("compare: %+v", res)
	}
	analyzeGivesCompareVerdict(t, res)
}

// TestAnalyzeRefusesEditedResult is issue 22's risk "analyze trusts an
// edited result.json": a run directory whose result.json was edited (9.2e18
// requests) is refused, naming the file, instead of analyzed; the same
// result.json without a manifest beside it is analyzed and marked
// unverified.
func TestAnalyzeRefusesEditedResult(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts, cfg.Warmups = []float64{40}, "40", 4, 0
	out := mustRun(t, cfg, testOptions(t))
	a, err := Analyze([]string{out.Dir}, AnalyzeOptions{})
	if err != nil || len(a.Unverified) != 0 {
		t.Fatalf("analyze of an intact run: %+v, %v", a, err)
	}
	p := filepath.Join(out.Dir, artifacts.ResultFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`"completed": ?\d+`).ReplaceAll(b, []byte(`"completed": 9200000000000000000`))
	if bytes.Equal(edited, b) {
		t.Fatal("result.json has no completed figure to edit")
	}
	if err := os.WriteFile(p, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{out.Dir, p} {
		a, err := Analyze([]string{in}, AnalyzeOptions{})
		if a != nil || err == nil || !strings.Contains(err.Error(), "does not match its manifest.json") ||
			!strings.Contains(err.Error(), "changed: "+artifacts.ResultFile) || !strings.HasPrefix(err.Error(), in+": ") {
			t.Errorf("analyze %s of an edited result.json: %+v, %v", in, a, err)
		}
	}
	alone := filepath.Join(t.TempDir(), artifacts.ResultFile)
	if err := os.WriteFile(alone, b, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err = Analyze([]string{alone}, AnalyzeOptions{})
	if err != nil || !strings.Contains(a.Unverified[alone], "no manifest.json") {
		t.Errorf("analyze of a result.json without a manifest: %+v, %v", a, err)
	}
}

// noisyOnly reports whether every reason of an inconclusive verdict is a
// figure left undecided by an interval too wide for its limit.
func noisyOnly(reasons []string) bool {
	for _, r := range reasons {
		if !strings.Contains(r, " undecided: ") {
			return false
		}
	}
	return len(reasons) > 0
}
