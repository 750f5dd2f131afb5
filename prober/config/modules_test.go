package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/client"
)

const modulesYAML = `
global:
  timeout: 40s
targets:
  - name: vllm
    base_url: http://vllm:8000/
modules:
  chat_short:
    api: chat
    ttft_timeout: 5s
    attribution_headers: [x-served-by]
    workload:
      input_tokens: {dist: fixed, value: 32}
  strict:
    slo: {ttft: 2s}
probe_allowed_targets:
  - http://10.0.0.5:8000
  - https://gw.example.com/llm
`

func TestModules(t *testing.T) {
	c, err := Parse([]byte(modulesYAML), "m.yml")
	if err != nil {
		t.Fatal(err)
	}
	chat, ok := c.Module("chat_short")
	if !ok {
		t.Fatal("module chat_short missing")
	}
	tc, err := chat.Target("http://10.0.0.5:8000/")
	if err != nil {
		t.Fatal(err)
	}
	p := tc.Probes[0]
	if tc.BaseURL != "http://10.0.0.5:8000" || tc.API != client.APIChat || tc.Timeout != 40*time.Second ||
		tc.TTFTTimeout != 5*time.Second || tc.MetricsURL() != "" || len(tc.AttributionHeaders) != 1 {
		t.Errorf("chat_short target %+v", tc)
	}
	if p.Workload.InputTokens.Value != 32 || p.Workload.OutputTokens.Value != DefaultProbeConfig.Workload.OutputTokens.Value || p.Seed == 0 {
		t.Errorf("chat_short probe workload %+v seed %d", p.Workload, p.Seed)
	}
	def, ok := c.Module("")
	if !ok {
		t.Fatal("the built-in default module is missing")
	}
	dt, err := def.Target("http://vllm:8000")
	if err != nil || dt.API != client.APICompletions || dt.Timeout != 40*time.Second || dt.Probes[0].Workload.InputTokens.Value != 64 {
		t.Errorf("default module target %+v, %v", dt, err)
	}
	if _, ok := c.Module("nope"); ok {
		t.Error("unknown module found")
	}
	for _, bad := range []struct{ url, want string }{
		{"ftp://x", `target "ftp://x": scheme must be http or https, got "ftp"`},
		{"http://x/v1", `target "http://x/v1": must be the server root, without /v1`},
		{"http://u:p@x", `target "http://u:p@x": must not contain credentials (user:password@); use api_key_file or api_key_env`},
		{"http://" + strings.Repeat("a", MaxProbeTargetLen), "target is longer than 2048 bytes"},
	} {
		if _, err := def.Target(bad.url); err == nil || err.Error() != bad.want {
			t.Errorf("Target(%.40q) = %v, want %q", bad.url, err, bad.want)
		}
	}
	// The file parses back to the same modules.
	again, err := Parse([]byte(c.String()), "again.yml")
	if err != nil {
		t.Fatalf("String does not parse back: %v\n%s", err, c.String())
	}
	m2, _ := again.Module("chat_short")
	if m2.target.RestartKey() != chat.target.RestartKey() {
		t.Errorf("module changed in the round trip:\n%s", c.String())
	}
}

func TestProbeAllowed(t *testing.T) {
	c, err := Parse([]byte(modulesYAML), "m.yml")
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]bool{
		"http://10.0.0.5:8000":               true,
		"http://10.0.0.5:8000/":              true,
		"http://10.0.0.5:8000/sub":           true,
		"https://10.0.0.5:8000":              false, // another scheme
		"http://10.0.0.5:8001":               false,
		"http://10.0.0.5":                    false,
		"https://gw.example.com/llm":         true,
		"https://GW.example.com/llm/a":       true,
		"https://gw.example.com/llmx":        false, // not a whole segment
		"https://gw.example.com.evil.io/llm": false,
		"http://vllm:8000":                   false, // configured, but the list replaces that default
		"http://u:p@10.0.0.5:8000":           false,
	} {
		if got := c.ProbeAllowed(target); got != want {
			t.Errorf("ProbeAllowed(%q) = %v, want %v", target, got, want)
		}
	}
	// Without the list, only the configured targets.
	c.ProbeAllowedTargets = nil
	for target, want := range map[string]bool{"http://vllm:8000": true, "http://vllm:8000/": true,
		"http://vllm:8000/x": false, "http://10.0.0.5:8000": false} {
		if got := c.ProbeAllowed(target); got != want {
			t.Errorf("no list: ProbeAllowed(%q) = %v, want %v", target, got, want)
		}
	}
	c.ProbeAllowedTargets = []string{"https://"}
	if !c.ProbeAllowed("https://anything:1") || c.ProbeAllowed("http://anything:1") {
		t.Error(`"https://" must allow any https target and no http one`)
	}
}

func TestModuleErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"rate in a module", "modules:\n  m:\n    rate: 1\n", "f.yml:3: modules.m.rate: unknown key"},
		{"bad api", "modules:\n  m:\n    api: images\n", `f.yml:3: modules.m.api: must be completions, chat, responses, embeddings, rerank or messages, got "images"`},
		{"bad workload", "modules:\n  m:\n    workload:\n      input_tokens: {dist: normal}\n",
			`f.yml:4: modules.m.workload.input_tokens: unknown dist "normal" (one of fixed, uniform, lognormal, choice)`},
		{"bad header", "modules:\n  m:\n    attribution_headers: [\"x y\"]\n",
			`f.yml:3: modules.m.attribution_headers: header name "x y": character ' ' is not allowed in a header name`},
		{"bad name", "modules:\n  \"a b\": {}\n", `f.yml:2: modules.a b: module name: must match [a-zA-Z0-9_.:-]+, got "a b"`},
		{"empty module", "modules:\n  m:\n", "f.yml:2: modules.m: empty module: write {} for a module with every key at its default"},
		{"bad allowed", "modules: {m: {}}\nprobe_allowed_targets: [vllm:8000]\n",
			`f.yml:2: probe_allowed_targets[0]: "vllm:8000": scheme must be http or https, got "vllm" (write a URL prefix such as http://vllm:8000, or http:// to allow any host)`},
		{"follow redirects", "modules:\n  m:\n    http_config: {follow_redirects: true}\n", "f.yml:3: modules.m.http_config.follow_redirects: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "f.yml")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error\n got: %v\nwant: %s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not an *Error", err)
			}
		})
	}
}
