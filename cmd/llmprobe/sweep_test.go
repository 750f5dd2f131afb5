package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

func TestSweepBadFlags(t *testing.T) {
	wl := filepath.Join(t.TempDir(), "wl.yml")
	if err := os.WriteFile(wl, []byte("input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rate zero", []string{"--rates", "0"}, "llmprobe: error: --rates: rate must be > 0, got 0\n"},
		{"negative input length", []string{"--input-len=-5"}, "llmprobe: error: --input-len: must be >= 1, got -5\n"},
		{"negative prefix", []string{"--prefix-len=-1"}, "llmprobe: error: --prefix-len: must be >= 0, got -1\n"},
		{"bad goodput key", []string{"--goodput", "ttft:800", "foo:3"}, `llmprobe: error: --goodput: invalid goodput key "foo": must be one of ttft, tpot, e2el` + "\n"},
		{"goodput pair without the flag", []string{"ttft:800"}, `llmprobe: error: --goodput: unexpected argument "ttft:800" (KEY:VALUE pairs follow --goodput)` + "\n"},
		{"rates and concurrency", []string{"--rates", "1", "--concurrency", "2"}, "llmprobe: error: --concurrency: give --rates or --concurrency, not both"},
		{"burst without a count", []string{"--rates", "inf"}, "llmprobe: error: --num-prompts: --rates inf sends a step's requests at once: give --num-prompts\n"},
		{"unknown workload key", []string{"--workload", wl}, "llmprobe: error: --workload: " + wl + ": yaml: unmarshal errors:"},
		{"workload and lengths", []string{"--workload", wl, "--input-len", "4"}, "llmprobe: error: --workload: give --workload or --input-len/--output-len/--range-ratio, not both\n"},
		{"bad metadata", []string{"--metadata", "duration=3"}, `llmprobe: error: --metadata: key "duration" is reserved` + "\n"},
		{"bad target", []string{"--target", "localhost:8000"}, `llmprobe: error: --target: must be an http:// or https:// URL, got "localhost:8000"` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"sweep"}, tt.args...), &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			if got := stderr.String(); !strings.HasPrefix(got, tt.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting with %q", got, tt.want)
			}
		})
	}
}

func TestSweepCommand(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.StepBase = time.Millisecond
	url, _ := simtest.Start(t, cfg)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--target", url, "--rates", "20,40", "--num-prompts", "10", "--warmups", "1",
		"--input-len", "16", "--output-len", "4", "--goodput", "ttft:800", "tpot:50", "--out", out, "--name", "cli",
		"--metadata", "note=test", "--no-progress", "--log.level", "warn"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"knee:", "max goodput:", "run directory: "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-cli"))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v", dirs)
	}
	if probs, err := artifacts.Verify(dirs[0]); err != nil || len(probs) != 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
	help, _ := os.ReadFile(filepath.Join(dirs[0], artifacts.HelpFile))
	if !strings.Contains(string(help), "usage: llmprobe sweep") || !strings.Contains(string(help), "--goodput") {
		t.Errorf("help.txt is not the sweep help:\n%.300s", help)
	}
	cmd, _ := os.ReadFile(filepath.Join(dirs[0], artifacts.CommandFile))
	if !strings.HasPrefix(string(cmd), "llmprobe sweep --target ") {
		t.Errorf("command.txt = %q", cmd)
	}
	var m struct {
		Fingerprint struct {
			Load struct {
				Goodput map[string]float64 `json:"goodput_ms"`
			} `json:"load"`
		} `json:"fingerprint"`
	}
	mb, _ := os.ReadFile(filepath.Join(dirs[0], artifacts.ManifestFile))
	if err := json.Unmarshal(mb, &m); err != nil || m.Fingerprint.Load.Goodput["tpot"] != 50 || m.Fingerprint.Load.Goodput["ttft"] != 800 {
		t.Errorf("fingerprint goodput %v (err %v)", m.Fingerprint.Load.Goodput, err)
	}
}
