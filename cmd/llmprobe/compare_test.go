package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// compareSim is a fast simulator: 4 ms engine steps.
func compareSim(t *testing.T, mod func(*simulator.Config)) string {
	t.Helper()
	cfg := simulator.DefaultConfig()
	cfg.StepBase = 4 * time.Millisecond
	cfg.EOSProbability = 0
	if mod != nil {
		mod(&cfg)
	}
	url, _ := simtest.Start(t, cfg)
	return url
}

// compareArgs are the flags of a short comparison: 4 rounds of 50 requests
// at 50 req/s, 8 output tokens. The send-lag limit is loose and the CPU
// check off (the simulators share the test's process, and the test may run
// on a busy machine). The compared figures are TPOT p99 and goodput: the
// TTFT p99 of a 4 ms-step simulator on a shared test machine measures the
// machine's scheduling hiccups, not the server (prober/compare's tests
// cover the TTFT figure). --budget off: one look of 4 rounds, the fixed
// design these cases check (internal/rundir's TestRunCompareSequential
// covers the looks). Extra flags replace these defaults.
func compareArgs(out string, extra ...string) []string {
	defaults := [][]string{{"--rates", "50"}, {"--num-prompts", "50"}, {"--max-regression", "tpot_p99=10%,goodput=5%"}, {"--input-len", "16"}, {"--output-len", "8"},
		{"--warmups", "1"}, {"--goodput", "ttft:2000", "tpot:500"}, {"--max-client-cpu", "64"}, {"--idle-timeout", "10s"},
		{"--metrics-interval", "200ms"}, {"--bootstrap-iters", "500"}, {"--max-send-lag", "250ms", "--max-sched-latency", "250ms"},
		{"--out", out}, {"--no-progress"}, {"--log.level", "warn"}, {"--budget", "off"}}
	args := []string{"compare"}
	for _, d := range defaults {
		if !slices.Contains(extra, d[0]) {
			args = append(args, d...)
		}
	}
	return append(args, extra...)
}

func TestCompareSimulators(t *testing.T) {
	testutil.Slow(t)
	tests := []struct {
		name      string
		candidate func(*simulator.Config)
		extra     []string
		code      int
		want      []string
	}{
		// Identical servers pass. The figure is the TPOT median: the p99
		// of 100 samples of a 4 ms decode is, under -race beside other
		// packages' tests, the machine's worst scheduling stalls (a CI run
		// saw +17 %, interval +1 … +31 %, between two identical
		// simulators). "slower decode" checks that a TPOT p99 regression
		// fails.
		{name: "identical", code: 0, want: []string{"verdict: pass", "every rule holds", "tpot_p50"},
			extra: []string{"--max-regression", "tpot_p50=10%,goodput=5%", "--decision", "ship chat-v2 if TPOT p99 holds", "--rollback-if", "goodput drops 5 %"}},
		{name: "slower decode", candidate: func(c *simulator.Config) { c.StepBase = 12 * time.Millisecond }, code: 1,
			want: []string{"verdict: fail", "tpot_p99 @ rate=50: regressed:", "beyond the 10 % limit"}},
		{name: "other model", candidate: func(c *simulator.Config) { c.Model = "other-model" },
			extra: []string{"--baseline-model", "llmprobe-sim", "--candidate-model", "other-model"}, code: 3,
			want: []string{"verdict: inconclusive", "model differs (baseline llmprobe-sim, candidate other-model)", "--vary endpoint,model,model_root)"}},
		{name: "starved client", extra: []string{"--max-send-lag", "1ns"}, code: 3,
			want: []string{"verdict: inconclusive", "client not saturated failed: client saturated in baseline round 1"}},
		{name: "dearer candidate", extra: []string{"--max-regression", "tpot_p99=10%,cost=5%", "--cost-per-hour", "2", "--candidate-cost-per-hour", "2.4"},
			code: 1, want: []string{"verdict: fail", "cost @ rate=50: regressed:", "USD/M tok, +", "beyond the 5 % limit"}},
		{name: "wrong answers", candidate: func(c *simulator.Config) { c.Faults.WrongAnswers = 1 }, code: 1,
			extra: []string{"--max-regression", "tpot_p50=400%", "--answer-checks", "builtin", "--answer-repeats", "1"},
			want:  []string{"verdict: fail", "quality: regressed", "quality (builtin):", `failing add-small: baseline "42", candidate "43"`}},
		{name: "too few samples", extra: []string{"--num-prompts", "20"}, code: 3,
			want: []string{"verdict: inconclusive", "tpot_p99 rests on 40 baseline and 40 candidate samples, p99 needs 100 per side: 60 more requests per side"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, cand := compareSim(t, nil), compareSim(t, tt.candidate)
			var out string
			var stdout, stderr bytes.Buffer
			var code int
			for attempt := 1; ; attempt++ {
				out = t.TempDir()
				stdout.Reset()
				stderr.Reset()
				args := compareArgs(out, append([]string{"--baseline", base, "--candidate", cand}, tt.extra...)...)
				code = run(context.Background(), args, &stdout, &stderr)
				if code == tt.code || !compareNoisy(code, stdout.String()) {
					break
				}
				// Too noisy to decide, and it said so: the machine's
				// scheduling stalls outweighed the simulator's steps.
				if attempt == 2 {
					t.Skipf("twice inconclusive from noisy figures on this machine (want exit %d):\n%s", tt.code, stdout.String())
				}
				t.Logf("attempt %d inconclusive from noisy figures; running the case again:\n%s", attempt, stdout.String())
			}
			if code != tt.code && compareStarved(t, code, stdout.String(), compareDir(t, out)) {
				return // a starved client, with its evidence: what this case compares needs the rate kept
			}
			if code != tt.code {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			dir := compareDir(t, out)
			checkCompareDir(t, dir, code)
			// analyze re-derives the same verdict from the run directory.
			stdout.Reset()
			if got := run(context.Background(), []string{"analyze", dir}, &stdout, &stderr); got != code {
				t.Errorf("analyze %s: exit code %d, want %d:\n%s", dir, got, code, stdout.String())
			}
			if tt.name == "identical" {
				// The decision opens the compare's analysis.md and every
				// round's, and is in the manifest.
				md, _ := os.ReadFile(filepath.Join(dir, artifacts.AnalysisFile))
				r1, _ := filepath.Glob(filepath.Join(dir, "*-r1-baseline", artifacts.AnalysisFile))
				rmd, _ := os.ReadFile(r1[0])
				q := "## Decision and SLO\n\n- Question: ship chat-v2 if TPOT p99 holds\n- SLO: `ttft:2000 tpot:500`"
				rb := "## Rollback condition\n\nRoll back if: goodput drops 5 %\n"
				for _, w := range []string{q, rb, "- Answer: **pass** under SLO ttft:2000 tpot:500"} {
					if !strings.Contains(string(md), w) {
						t.Errorf("analysis.md lacks %q:\n%s", w, md)
					}
				}
				if !strings.Contains(string(rmd), q) || !strings.Contains(string(rmd), rb) {
					t.Errorf("round 1 analysis.md lacks %q or %q:\n%s", q, rb, rmd)
				}
				if m, err := artifacts.ReadManifest(dir); err != nil || m.Fingerprint.Metadata["decision"] != "ship chat-v2 if TPOT p99 holds" ||
					m.Fingerprint.Metadata["rollback_if"] != "goodput drops 5 %" || m.Fingerprint.Metadata["compare.order"] != "abba" {
					t.Errorf("manifest metadata %v (%v)", m.Fingerprint.Metadata, err)
				}
				// One round alone: a sweep run directory, checked against its
				// own SLO; and its vLLM-form step file.
				rounds, _ := filepath.Glob(filepath.Join(dir, "*-r1-baseline"))
				stdout.Reset()
				got := run(context.Background(), []string{"analyze", rounds[0]}, &stdout, &stderr)
				for _, w := range []string{"(llmprobe)", "SLO: ttft:2000 tpot:500 (from the run's --goodput)",
					"rate=50: 50 requests, 50 completed, 0 failed", "goodput ratio  100.00 %", "TPOT p99", "outcome: pass"} {
					if !strings.Contains(stdout.String(), w) {
						t.Errorf("analyze %s lacks %q:\n%s", rounds[0], w, stdout.String())
					}
				}
				if got != 0 {
					t.Errorf("analyze %s: exit code %d", rounds[0], got)
				}
				stdout.Reset()
				// The vLLM-form files record no SLO: checked against none.
				if got := run(context.Background(), []string{"analyze", filepath.Join(rounds[0], "vllm")}, &stdout, &stderr); got != 0 ||
					!strings.Contains(stdout.String(), "(vllm-bench-serve)") || !strings.Contains(stdout.String(), "rate=50: 50 requests, 50 completed") {
					t.Errorf("analyze vllm/: exit %d:\n%s", got, stdout.String())
				}
			}
		})
	}
}

// compareDir is the one compare run directory under out.
func compareDir(t *testing.T, out string) string {
	t.Helper()
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Fatalf("out dir: %v, %d entries", err, len(entries))
	}
	return filepath.Join(out, entries[0].Name())
}

// checkCompareDir checks a finished compare run directory: manifest hashes
// hold, result.json states the verdict and lists 4 rounds in A/B/B/A order,
// each a sweep run directory, and analysis.md opens with the decision.
func checkCompareDir(t *testing.T, dir string, code int) {
	t.Helper()
	v, err := artifacts.Verify(dir, artifacts.VerifyOptions{})
	if err != nil || len(v.Problems) != 0 {
		t.Errorf("verify %s: %v %v", dir, err, v.Problems)
	}
	b, err := os.ReadFile(filepath.Join(dir, artifacts.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var cr compare.Result
	if err := json.Unmarshal(b, &cr); err != nil {
		t.Fatal(err)
	}
	// A round whose client was flagged is listed twice: its discarded first
	// attempt, then its rerun (issue 22 V1).
	var counted []compare.Round
	for _, r := range cr.Rounds {
		if r.Discarded == "" {
			counted = append(counted, r)
		}
	}
	if cr.ExitCode != code || !cr.Complete || len(counted) != 4 {
		t.Fatalf("result.json: exit %d complete %v rounds %d counted of %d", cr.ExitCode, cr.Complete, len(counted), len(cr.Rounds))
	}
	for i, want := range []string{compare.SideBaseline, compare.SideCandidate, compare.SideCandidate, compare.SideBaseline} {
		r := counted[i]
		if r.Side != want || r.Seed != int64(i/2) {
			t.Errorf("round %d: side %s seed %d, want %s seed %d", i+1, r.Side, r.Seed, want, i/2)
		}
		if _, err := os.Stat(filepath.Join(dir, r.Dir, artifacts.RecordsFile)); err != nil {
			t.Errorf("round %d: %v", i+1, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, artifacts.AnalysisFile))
	if err != nil || !strings.Contains(string(md), "## Decision and SLO") || !strings.Contains(string(md), "## Conclusion (this environment and workload only)\n\n**"+cr.Verdict+"** ") {
		t.Errorf("analysis.md: %v\n%s", err, md)
	}
	last := -1
	for _, s := range report.Sections {
		i := strings.Index(string(md), "\n## "+s+"\n")
		if i < 0 || i < last {
			t.Errorf("analysis.md: section %q at %d, after %d", s, i, last)
		}
		last = i
	}
}

func TestCompareBadFlags(t *testing.T) {
	url := "http://127.0.0.1:1"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no rates", []string{"--baseline", url, "--candidate", url}, "llmprobe: error: --rates: give one rate or a short ladder"},
		{"auto rates", []string{"--baseline", url, "--candidate", url, "--rates", "auto"}, "llmprobe: error: --rates: auto is not offered by compare"},
		{"odd rounds", []string{"--baseline", url, "--candidate", url, "--rates", "1", "--rounds", "3"}, "llmprobe: error: --rounds: must be even and >= 2"},
		{"bad order", []string{"--baseline", url, "--candidate", url, "--rates", "1", "--order", "abab"}, `llmprobe: error: --order: must be abba or random, got "abab"`},
		{"single target", []string{"--baseline", url, "--candidate", url, "--rates", "1", "--target", url}, "llmprobe: error: --target: compare has no single target"},
		{"goodput without slo", []string{"--baseline", url, "--candidate", url, "--rates", "1", "--max-regression", "goodput=5%"},
			"llmprobe: error: --max-regression: goodput needs an SLO"},
		{"bad vary", []string{"--baseline", url, "--candidate", url, "--rates", "1", "--vary", "colour"}, `llmprobe: error: --vary: unknown fingerprint field "colour"`},
		{"bad baseline", []string{"--baseline", "localhost:8000", "--candidate", url, "--rates", "1"}, `llmprobe: error: --baseline: must be an http:// or https:// URL`},
		{"unreachable", []string{"--baseline", url, "--candidate", url, "--rates", "1"}, "llmprobe: error: baseline: "},
		{"decision twice", []string{"--baseline", url, "--candidate", url, "--rates", "1", "--decision", "x", "--metadata", "decision=y"},
			"llmprobe: error: --decision: also given as --metadata decision=..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append(append([]string{"compare"}, tt.args...), "--out", out, "--log.level", "error"), &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			if got := stderr.String(); !strings.HasPrefix(got, tt.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting with %q", got, tt.want)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("out dir holds %d entries", len(entries))
			}
		})
	}
}
