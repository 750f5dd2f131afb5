package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

func TestServeTargetSLOAndName(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./llmprobe.yml here
	url, _ := simtest.Start(t, simulator.DefaultConfig())
	// vLLM's unquoted form: the second pair is a positional argument.
	base, logs, stop := startServe(t, "--target", url, "--target.name", "sim-a", "--api", "chat", "--slo", "ttft:800", "tpot:50")
	// A request that streamed content: the content TTFT is observed too.
	observed := regexp.MustCompile(`(?m)^llmprobe_time_to_first_content_seconds_count\{probe="default",target="sim-a"\} [1-9]`)
	var body string
	testutil.Eventually(t, "a content TTFT observation of target sim-a", func() bool {
		_, body = get(t, base+"/metrics")
		return observed.MatchString(body)
	})
	for _, want := range []string{
		`llmprobe_slo_threshold_seconds{probe="default",slo="ttft",target="sim-a"} 0.8`,
		`llmprobe_slo_threshold_seconds{probe="default",slo="tpot",target="sim-a"} 0.05`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `llmprobe_slo_threshold_seconds{probe="default",slo="e2el",target="sim-a"}`) {
		t.Error("an e2el threshold is exported although --slo sets none")
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d; log:\n%s", code, logs.String())
	}
}

func TestServeTargetFlagErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad pair", []string{"serve", "--target", "http://127.0.0.1:1", "--slo", "ttft=800"},
			`llmprobe: error: --slo: invalid goodput "ttft=800": want KEY:VALUE with KEY one of ttft, tpot, e2el, ttfa and VALUE in ms`},
		{"unknown key", []string{"serve", "--target", "http://127.0.0.1:1", "--slo", "ttft:800", "itl:5"},
			`llmprobe: error: --slo: invalid goodput key "itl": must be one of ttft, tpot, e2el, ttfa`},
		{"above the timeout", []string{"serve", "--target", "http://127.0.0.1:1", "--slo", "e2el:600000"},
			`llmprobe: error: --slo: e2el must be <= the request timeout (2m0s), got 10m0s`},
		{"bad name", []string{"serve", "--target", "http://127.0.0.1:1", "--target.name", "a/b"},
			`llmprobe: error: --target.name: name: must match [a-zA-Z0-9_.:-]+, got "a/b"`},
		{"slo without target", []string{"serve", "--slo", "ttft:800"},
			`llmprobe: error: --slo applies to --target only (a config file sets slo: and name: per target)`},
		{"name without target", []string{"serve", "--config.file", "x.yml", "--target.name", "a"},
			`llmprobe: error: --target.name applies to --target only (a config file sets slo: and name: per target)`},
		{"answer checks without target", []string{"serve", "--answer-checks", "builtin"},
			`llmprobe: error: --answer-checks applies to --target only (a config file sets answer_checks: per probe, docs/quality.md)`},
		{"answer checks file missing", []string{"serve", "--target", "http://127.0.0.1:1", "--answer-checks", "nope.jsonl"},
			`llmprobe: error: --answer-checks: open nope.jsonl: no such file or directory`},
		{"pairs without --slo", []string{"serve", "--target", "http://127.0.0.1:1", "ttft:800"},
			`llmprobe: error: unexpected argument "ttft:800": serve takes no arguments (KEY:VALUE pairs follow --slo; commands are listed by --help)`},
		{"stray argument without target", []string{"bogus"},
			`llmprobe: error: unexpected argument "bogus": serve takes no arguments (KEY:VALUE pairs follow --slo; commands are listed by --help)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), tc.args, &out, &errb); code != 2 {
				t.Errorf("exit %d, want 2; stderr %s", code, errb.String())
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n") // log lines may come first
			if got := lines[len(lines)-1]; got != tc.want {
				t.Errorf("stderr\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
