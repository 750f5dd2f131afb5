package rundir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/prober/compare"
)

// compareProcedure parses compare's flags from args (the baseline given,
// and the candidate unless args give it) and returns CompareFlags.Procedure's
// answer.
func compareProcedure(t *testing.T, args ...string) (*compare.Procedure, error) {
	t.Helper()
	app := kingpin.New("t", "")
	f := &CompareFlags{}
	AddCompareFlags(app.Command("compare", ""), f)
	base := []string{"compare", "--out", t.TempDir(), "--baseline", "http://a:8000"}
	if !slices.Contains(args, "--candidate") {
		base = append(base, "--candidate", "http://b:8000")
	}
	if _, err := app.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	return f.Procedure(log.NewNopLogger())
}

// TestCompareFlagsRefused: each of compare's own checks, and a side's own
// setting, refuses with an error naming its flag (spelled by
// FlagErrorText); once both sides are built, the Procedure comes back
// with the error so that its secrets can redact it.
func TestCompareFlagsRefused(t *testing.T) {
	messagesSet := filepath.Join(t.TempDir(), "set.jsonl")
	if err := os.WriteFile(messagesSet, []byte(`{"id":"greet","messages":[{"role":"user","content":"Say hi"}],"max_tokens":4,"contains":"hi"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("sk-compare-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		want     string
		withProc bool
	}{
		{"metrics-url", []string{"--rates", "1", "--metrics-url", "http://a:8000/metrics"}, "--metrics-url: give --baseline-metrics-url", false},
		{"bootstrap-iters", []string{"--rates", "1", "--bootstrap-iters", "99"}, "--bootstrap-iters: must be >= 100, got 99", false},
		{"empty candidate", []string{"--rates", "1", "--candidate", ""}, "--candidate: must not be empty", false},
		{"bad candidate url", []string{"--rates", "1", "--candidate", "b:8000"}, "--candidate: must be an http:// or https:// URL", false},
		{"side price", []string{"--rates", "1", "--baseline-cost-per-hour=-1"}, "--baseline-cost-per-hour: ", false},
		{"shared gpu source", []string{"--rates", "1", "--gpu-metrics-url", "http://dcgm:9400/metrics"},
			"--gpu-metrics-url: each side has its own GPUs: give --baseline-gpu-metrics-url and --candidate-gpu-metrics-url", false},
		{"shared gpu selector", []string{"--rates", "1", "--gpu-selector", `pod="a"`},
			"--gpu-selector: each side has its own GPUs: give --baseline-gpu-selector and --candidate-gpu-selector", false},
		{"side gpu source", []string{"--rates", "1", "--candidate-gpu-metrics-url", "dcgm:9400"},
			"--candidate-gpu-metrics-url: must be an http:// or https:// URL", false},
		{"side gpu selector", []string{"--rates", "1", "--baseline-gpu-selector", `pod=`}, "--baseline-gpu-selector: ", false},
		{"side gpu selector alone", []string{"--rates", "1", "--baseline-gpu-selector", `pod="a"`},
			"--baseline-gpu-selector: needs --baseline-gpu-metrics-url", false},
		{"energy without sources", []string{"--rates", "1", "--baseline-gpu-metrics-url", "http://dcgm-a:9400/metrics", "--max-regression", "energy=10%"},
			"--max-regression: energy needs the GPU energy of both sides", true},
		{"shared price", []string{"--rates", "1", "--cost-per-hour=-1"}, "--cost-per-hour: ", false},
		{"side http config", []string{"--rates", "1", "--candidate-http-config-file", filepath.Join(t.TempDir(), "none.yml")},
			"--candidate-http-config-file: ", false},
		{"cost without prices", []string{"--rates", "1", "--api-key-file", key, "--max-regression", "cost=5%"},
			"--max-regression: cost needs the price per hour of both sides", true},
		{"one price", []string{"--rates", "1", "--baseline-cost-per-hour", "2", "--max-regression", "cost=5%"},
			"--max-regression: cost needs the price per hour of both sides", true},
		{"bad thresholds", []string{"--rates", "1", "--max-regression", "colour=5%"}, "--max-regression: ", true},
		{"answer-low-margin", []string{"--rates", "1", "--answer-low-margin", "0"}, "--answer-low-margin: must be > 0 and at most 5 nats", true},
		{"answer-max-drop", []string{"--rates", "1", "--answer-max-drop", "1"}, "--answer-max-drop: must be a fraction", true},
		{"answer-repeats", []string{"--rates", "1", "--answer-repeats", "21"}, "--answer-repeats: must be 1 to 20, got 21", true},
		{"budget", []string{"--rates", "1", "--budget", "soon"},
			`--budget: want off, a duration (20m), a count of requests per side (2000) or both (20m,2000), got "soon"`, true},
		// --answer-checks is a sweep setting: refused while each side's
		// config is built (applyAnswerChecks, Config.Validate).
		{"answer-checks file", []string{"--rates", "1", "--answer-checks", filepath.Join(t.TempDir(), "none.jsonl")}, "--answer-checks: ", false},
		{"answer-checks messages on completions", []string{"--rates", "1", "--answer-checks", messagesSet},
			"--answer-checks: check greet: messages need a chat target (api: chat or messages), this one is completions", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := compareProcedure(t, tt.args...)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if got := FlagErrorText(err); !strings.HasPrefix(got, tt.want) {
				t.Errorf("error %q, want it to start with %q", got, tt.want)
			}
			if (p != nil) != tt.withProc {
				t.Errorf("procedure %v with the error, want one: %v", p != nil, tt.withProc)
			}
			if p != nil && tt.name == "cost without prices" && !strings.Contains(strings.Join(append(p.Baseline.Secrets(), p.Candidate.Secrets()...), " "), "sk-compare-secret") {
				t.Errorf("the procedure's sides lack the API key to redact")
			}
		})
	}
}

// TestCompareFlagsProcedure: each side gets the shared flags with its own
// over them (model, price), a round of its own; goodput is dropped from the
// default thresholds without an SLO, and kept with one.
func TestCompareFlagsProcedure(t *testing.T) {
	p, err := compareProcedure(t, "--rates", "2,4", "--model", "m", "--candidate-model", "m2", "--cost-per-hour", "3",
		"--candidate-cost-per-hour", "4", "--rounds", "4", "--order", "random", "--seed", "7", "--bootstrap-iters", "200")
	if err != nil {
		t.Fatal(err)
	}
	b, c := p.Baseline, p.Candidate
	if b.Target != "http://a:8000" || c.Target != "http://b:8000" || b.Model != "m" || c.Model != "m2" {
		t.Errorf("targets %q %q, models %q %q", b.Target, c.Target, b.Model, c.Model)
	}
	if b.CostPerHour != 3 || c.CostPerHour != 4 {
		t.Errorf("prices %v %v, want 3 (shared) and 4 (the candidate's own)", b.CostPerHour, c.CostPerHour)
	}
	if b.GPUMetricsURL != "" || c.GPUMetricsURL != "" {
		t.Errorf("GPU sources %q %q without the flags", b.GPUMetricsURL, c.GPUMetricsURL)
	}
	p, err = compareProcedure(t, "--rates", "2", "--baseline-gpu-metrics-url", "http://dcgm-a:9400/metrics", "--candidate-gpu-metrics-url",
		"http://dcgm-b:9400/metrics", "--candidate-gpu-selector", `pod="vllm-b-0"`, "--max-regression", "energy=10%")
	if err != nil {
		t.Fatal(err)
	}
	if b, c := p.Baseline, p.Candidate; b.GPUMetricsURL != "http://dcgm-a:9400/metrics" || b.GPUSelector != "" ||
		c.GPUMetricsURL != "http://dcgm-b:9400/metrics" || c.GPUSelector != `pod="vllm-b-0"` || !compare.HasFigure(p.Thresholds, compare.FigureEnergy) {
		t.Errorf("GPU sources: baseline %q %q, candidate %q %q, thresholds %v", b.GPUMetricsURL, b.GPUSelector, c.GPUMetricsURL, c.GPUSelector, p.Thresholds)
	}
	p, err = compareProcedure(t, "--rates", "2,4", "--model", "m", "--candidate-model", "m2", "--cost-per-hour", "3",
		"--candidate-cost-per-hour", "4", "--rounds", "4", "--order", "random", "--seed", "7", "--bootstrap-iters", "200")
	if err != nil {
		t.Fatal(err)
	}
	if p.Budget != (compare.Budget{Time: 20 * time.Minute, Requests: 5000}) {
		t.Errorf("budget %+v, want the default 20m,5000", p.Budget)
	}
	if p, err := compareProcedure(t, "--rates", "2", "--budget", "off"); err != nil || !p.Budget.IsZero() {
		t.Errorf("--budget off: %+v, %v", p, err)
	}
	if p.Rounds != 4 || p.Order != compare.OrderRandom || p.Seed != 7 || p.Iters != 200 || p.MaxRegression != compare.DefaultThresholds {
		t.Errorf("rounds %d order %q seed %d iters %d max-regression %q", p.Rounds, p.Order, p.Seed, p.Iters, p.MaxRegression)
	}
	if compare.HasFigure(p.Thresholds, compare.FigureGoodput) {
		t.Errorf("no SLO: goodput still compared (%v)", p.Thresholds)
	}
	p, err = compareProcedure(t, "--rates", "2", "--goodput", "ttft:800")
	if err != nil {
		t.Fatal(err)
	}
	if !compare.HasFigure(p.Thresholds, compare.FigureGoodput) {
		t.Errorf("with --goodput: goodput not compared (%v)", p.Thresholds)
	}
}

// TestCompareFlagsAnswerChecks: --answer-checks loads the set into the
// procedure with its settings; without it there is no quality section.
func TestCompareFlagsAnswerChecks(t *testing.T) {
	p, err := compareProcedure(t, "--rates", "1", "--answer-checks", "builtin", "--answer-low-margin", "0.2", "--answer-repeats", "2")
	if err != nil {
		t.Fatal(err)
	}
	if p.AnswerChecks == nil || p.AnswerChecks.Name != "builtin" || p.LowMargin != 0.2 || p.AnswerRepeats != 2 ||
		p.QualityTolerance != compare.DefaultQualityTolerance {
		t.Errorf("procedure %+v", p)
	}
	// Compare sends the set itself after the rounds: no side's sweep
	// (a round) carries it.
	if p.Baseline.AnswerChecks != nil || p.Candidate.AnswerChecks != nil {
		t.Errorf("a side's sweep config keeps the check set: baseline %v, candidate %v", p.Baseline.AnswerChecks, p.Candidate.AnswerChecks)
	}
	if p, err := compareProcedure(t, "--rates", "1"); err != nil || p.AnswerChecks != nil {
		t.Errorf("without --answer-checks: %v, %v", p.AnswerChecks, err)
	}
}
