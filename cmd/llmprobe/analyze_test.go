package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/report"
)

const compareTestdata = "../../prober/compare/testdata/"

func runAnalyzeArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), append([]string{"analyze"}, args...), &o, &e)
	return code, o.String(), e.String()
}

// analyzeWants runs `llmprobe analyze args...`: it must exit wantCode and
// its output hold every string of want.
func analyzeWants(t *testing.T, wantCode int, want []string, args ...string) {
	t.Helper()
	code, out, errs := runAnalyzeArgs(t, args...)
	if code != wantCode {
		t.Errorf("exit code %d, want %d; stderr %q", code, wantCode, errs)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestAnalyzeTeachingExample is the methodology's §11 example: it must read
// the four facts and warn that the file is not a native result schema.
func TestAnalyzeTeachingExample(t *testing.T) {
	// Exit 1: an SLO failed.
	analyzeWants(t, 1, []string{
		"warning: not a native result schema",
		"error rate     2.00 %",
		"goodput ratio  83.78 %",
		"TTFT p99 910 > 800 FAIL",
		"TPOT p99 67 > 50 FAIL",
		"outcome: fail",
	}, compareTestdata+"teaching-example.json")
	code, out, _ := runAnalyzeArgs(t, "--format", "markdown", compareTestdata+"teaching-example.json")
	if code != 1 || !strings.Contains(out, "| rate=4 | 100 | 2 | 2.00 % | 83.78 % | TTFT p99 910 > 800 FAIL; TPOT p99 67 > 50 FAIL |") ||
		!strings.Contains(out, "> **Warning:** not a native result schema") {
		t.Errorf("markdown (exit %d):\n%s", code, out)
	}
}

func TestAnalyzeVLLM(t *testing.T) {
	t.Run("detailed", func(t *testing.T) {
		analyzeWants(t, 0, []string{"(vllm-bench-serve)", "SLO: ttft:800 tpot:50 (from --goodput)", "error rate     1.00 %",
			"goodput ratio  100.00 % (198 of 198 completed requests met the SLO (per-request samples))", "TTFT p99 178.5 <= 800 PASS",
			"TPOT p99 32.6 <= 50 PASS", "outcome: pass"}, "--goodput", "ttft:800", "tpot:50", compareTestdata+"vllm-serve-detailed.json")
	})
	t.Run("old goodput key", func(t *testing.T) {
		code, out, _ := runAnalyzeArgs(t, "--format", "json", "--goodput", "ttft:500", compareTestdata+"vllm-serve-old-goodput-key.json")
		var doc report.AnalyzeOutput
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		c := doc.Inputs[0]
		if code != 1 || c.Outcome != "fail" || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `"request_goodput:"`) {
			t.Errorf("exit %d outcome %s warnings %q", code, c.Outcome, c.Warnings)
		}
		st := c.Steps[0]
		if st.GoodputRatio == nil || *st.GoodputRatio < 0.899 || *st.GoodputRatio > 0.9 || st.SLO[0].ValueMS != 612 {
			t.Errorf("step %+v", st)
		}
	})
	t.Run("two files", func(t *testing.T) {
		analyzeWants(t, 3, []string{"verdict: inconclusive", "fingerprint failed: model differs", "per-request output lengths not recorded",
			"evidence still missing:", "at least 2 rounds per side"}, "--goodput", "ttft:800", "tpot:50",
			compareTestdata+"vllm-serve-old-goodput-key.json", compareTestdata+"vllm-serve-detailed.json")
	})
	t.Run("directory of files", func(t *testing.T) {
		dir := t.TempDir()
		for _, n := range []string{"a-qps8.json", "b-qps4.json"} {
			src := "vllm-serve-old-goodput-key.json"
			if n == "b-qps4.json" {
				src = "vllm-serve-detailed.json"
			}
			b, err := os.ReadFile(compareTestdata + src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, _ := runAnalyzeArgs(t, dir)
		if code != 0 || !strings.Contains(out, "rate=8: 400 requests") || !strings.Contains(out, "rate=4: 200 requests") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	notResult := filepath.Join(dir, "config.json")
	if err := os.WriteFile(notResult, []byte(`{"model": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	code, out, errs := runAnalyzeArgs(t, notResult, text, missing, compareTestdata+"teaching-example.json")
	if code != 2 || out != "" {
		t.Errorf("exit code %d, stdout %q; want 2 and nothing", code, out)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	want := []string{
		"llmprobe: error: " + notResult + ": not a result file: no completed or request_throughput key",
		"llmprobe: error: " + text + ": not a result file: not a JSON object",
		"llmprobe: error: " + missing + ": no such file or directory",
	}
	if len(lines) != len(want) {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), errs)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i+1, lines[i], w)
		}
	}
	if code, _, errs := runAnalyzeArgs(t, "--goodput", "foo:1", notResult); code != 2 || !strings.Contains(errs, "--goodput: invalid goodput key") {
		t.Errorf("bad --goodput: exit %d %q", code, errs)
	}
}
