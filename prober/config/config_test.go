package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

func mustLoad(t *testing.T, path string) *Config {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return c
}

// TestGoodExample is the file issue 3 requires to be valid as written.
func TestGoodExample(t *testing.T) {
	c := mustLoad(t, "testdata/good.yml")
	if len(c.Targets) != 1 {
		t.Fatalf("targets: got %d, want 1", len(c.Targets))
	}
	tg := c.Targets[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", tg.Name, "sim"},
		{"base_url", tg.BaseURL, "http://127.0.0.1:8000"},
		{"api", tg.API, client.APICompletions},
		{"model", tg.Model, ""},
		{"metrics url", tg.MetricsURL(), "http://127.0.0.1:8000/metrics"},
		{"api key", string(tg.APIKey()), ""},
		{"slo", tg.SLO, slo.SLO{TTFT: 800 * time.Millisecond, TPOT: 50 * time.Millisecond}},
		{"goodput_objective", tg.GoodputObjective, 0.99},
		{"timeout", tg.Timeout, 2 * time.Minute},
		{"ttft_timeout", tg.TTFTTimeout, 30 * time.Second},
		{"stall_timeout", tg.StallTimeout, 15 * time.Second},
		{"max_body_bytes", tg.MaxBodyBytes, ByteSize(64 << 20)},
		{"probes", len(tg.Probes), 1},
		{"probe name", tg.Probes[0].Name, "small"},
		{"rate", tg.Probes[0].Rate, 4.0},
		{"arrival", tg.Probes[0].Arrival, ArrivalPoisson},
		{"burstiness", tg.Probes[0].Burstiness, 1.0},
		{"max_concurrency", tg.Probes[0].MaxConcurrency, 8},
		{"input", tg.Probes[0].Workload.InputTokens, workload.Fixed(64)},
		{"output", tg.Probes[0].Workload.OutputTokens, workload.Fixed(16)},
		{"ignore_eos", tg.Probes[0].Workload.IgnoreEOSOrDefault(), true},
		{"seed", tg.Probes[0].Seed, DeriveSeed("sim", "small")},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if fmt.Sprint(ch.got) != fmt.Sprint(ch.want) {
				t.Errorf("got %v, want %v", ch.got, ch.want)
			}
		})
	}
}

func TestExampleFile(t *testing.T) {
	const path = "../../deploy/examples/llmprobe.yml"
	t.Setenv("VLLM_B_API_KEY", "sk-example-s3cr3t")
	c := mustLoad(t, path)
	if len(c.Targets) != 2 {
		t.Fatalf("targets: got %d, want 2", len(c.Targets))
	}
	a, b := c.Targets[0], c.Targets[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"a inherits global slo", a.SLO, c.Global.SLO},
		{"a metrics url", a.MetricsURL(), "http://127.0.0.1:8000/metrics"},
		{"a probes", len(a.Probes), 2},
		{"a gamma", a.Probes[1].Arrival, ArrivalGamma},
		{"a burstiness", a.Probes[1].Burstiness, 0.5},
		{"a default max_concurrency", a.Probes[1].MaxConcurrency, 4},
		{"a lognormal", a.Probes[1].Workload.InputTokens.Dist, workload.DistLognormal},
		{"a seed", a.Probes[1].Seed, uint64(42)},
		{"b api", b.API, client.APIChat},
		{"b key", string(b.APIKey()), "sk-example-s3cr3t"},
		{"b metrics disabled", b.MetricsURL(), ""},
		{"b slo replaces global", b.SLO, slo.SLO{TTFT: 500 * time.Millisecond, TPOT: 40 * time.Millisecond}},
		{"b timeouts", []time.Duration{b.Timeout, b.TTFTTimeout, b.StallTimeout}, []time.Duration{time.Minute, 10 * time.Second, 5 * time.Second}},
		{"b max_body_bytes", b.MaxBodyBytes, ByteSize(16 << 20)},
		{"b choice", len(b.Probes[0].Workload.InputTokens.Choices), 2},
		{"b constant", b.Probes[0].Arrival, ArrivalConstant},
		{"b ignore_eos", b.Probes[0].Workload.IgnoreEOSOrDefault(), false},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if fmt.Sprint(ch.got) != fmt.Sprint(ch.want) {
				t.Errorf("got %v, want %v", ch.got, ch.want)
			}
		})
	}
	if s := c.String(); strings.Contains(s, "s3cr3t") {
		t.Errorf("String() reveals the key:\n%s", s)
	}

	t.Run("key not set", func(t *testing.T) {
		os.Unsetenv("VLLM_B_API_KEY") // restored by t.Setenv's cleanup
		_, err := Load(path)
		want := path + ":55: targets[1].api_key_env: environment variable VLLM_B_API_KEY is not set"
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
}

// TestInvalid pins each testdata/invalid-<name>.yml to its exact error.
func TestInvalid(t *testing.T) {
	t.Setenv("LLMPROBE_TEST_KEY", "sk-env-s3cr3t")
	t.Setenv("LLMPROBE_TEST_UNSET_KEY", "") // restored afterwards
	os.Unsetenv("LLMPROBE_TEST_UNSET_KEY")
	tests := []struct {
		name string
		want string // after "testdata/invalid-<name>.yml"
	}{
		{"bad-api", `:4: targets[0].api: must be completions, chat, responses, embeddings, rerank or messages, got "images"`},
		{"multi-turn-completions", `:9: targets[0].probes[0].workload.multi_turn: needs the target's api: chat or messages (a session's context is a list of chat messages), the target has api: completions`},
		{"multi-turn-turns", `:10: targets[0].probes[0].workload.multi_turn.turns: can draw 100 turns, more than the 64 a session may have`},
		{"multi-turn-think-time", `:11: targets[0].probes[0].workload.multi_turn.think_time: must be between 0s and 10m0s, got -2s`},
		{"multi-turn-session-header", `:11: targets[0].probes[0].workload.multi_turn.session_header: "X Session" is not a header name (character ' ')`},
		{"multi-turn-session-header-own", `:9: targets[0].probes[0].workload.multi_turn.session_header: "Authorization" is a header llmprobe sets itself`},
		{"multi-turn-unknown-key", `:9: targets[0].probes[0].workload.multi_turn.max_context: unknown key`},
		{"bad-engine", `:4: targets[0].engine: must be one of auto, vllm, sglang, tgi, llamacpp, ollama, got "llama.cpp"`},
		{"max-body-bytes-over-cap", `:4: targets[0].max_body_bytes: must be <= 1GiB (each request in flight may hold that much), got 2GiB`},
		{"slo-ttfa-over-timeout", `:6: targets[0].slo.ttfa: must be <= timeout (1m0s), got 2m0s`},
		{"max-sweep-rate-over-cap", `:4: targets[0].max_sweep_rate: must be <= 1e+06 (the most arrivals per second an arrival process yields), got 1e+09`},
		{"sweep-goodput-over-cap", `:9: targets[0].sweeps[0].goodput.e2el: must be <= 24h0m0s (no request runs longer), got 48h0m0s`},
		{"bad-arrival", `:7: targets[0].probes[0].arrival: must be one of poisson, gamma, constant, got "uniform"`},
		{"bad-dist", `:8: targets[0].probes[0].workload.input_tokens: unknown dist "normal" (one of fixed, uniform, lognormal, choice)`},
		{"bad-duration", `:4: targets[0].timeout: want a duration such as 800ms, 30s or 2m, got "2 minutes"`},
		{"bad-probe-name", `:5: targets[0].probes[0].name: must match [a-zA-Z0-9_.:-]+, got "small/1"`},
		{"bad-size", `:4: targets[0].max_body_bytes: invalid size "64 megs": want an integer number of bytes or an integer with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 64MiB`},
		{"bad-slo", `:4: targets[0].slo.tpot: invalid duration "fast" (want e.g. 800ms or 1.5s)`},
		{"bad-target-name", `:2: targets[0].name: must match [a-zA-Z0-9_.:-]+, got "my target"`},
		{"label-reserved", `:5: targets[0].labels.target: label name "target" is reserved (one of target, probe, job, instance, le, quantile, outcome, reason, slo, sweep, run, step, model, engine, server_version, server_instance, max_model_len)`},
		{"label-name", `:5: targets[0].labels.canary-group: label name must match [a-zA-Z_][a-zA-Z0-9_]*, got "canary-group"`},
		{"label-empty", `:5: targets[0].labels.canary: must not be empty`},
		{"cost-per-hour", `:4: targets[0].cost_per_hour: must be >= 0 and at most 1e+06 USD per hour (0: no price), got -1`},
		{"trace-sample-ratio", `:4: targets[0].trace_sample_ratio: must be in (0, 1] (0 or left out: the daemon's --tracing.sample-ratio), got 1.5`},
		{"bad-url", `:3: targets[0].base_url: scheme must be http or https, got "ftp"`},
		{"both-keys", `:4: targets[0].api_key_file: set either api_key_file or api_key_env, not both`},
		{"burstiness-without-gamma", `:7: targets[0].probes[0].burstiness: 2 needs arrival gamma (arrival is poisson)`},
		{"burstiness-zero", `:8: targets[0].probes[0].burstiness: must be between 0.01 and 1000 (gaps with a coefficient of variation of 10 to 0.03), got 0`},
		{"choice-weight", `:8: targets[0].probes[0].workload.input_tokens: choices[1].weight must be > 0, got -0.1`},
		{"duplicate-key", `:4: targets[0].name: duplicate key (first defined at line 2)`},
		{"duplicate-probe", `:7: targets[0].probes[1].name: duplicate probe name "small" (also probes[0])`},
		{"duplicate-target", `:4: targets[1].name: duplicate target name "sim" (also targets[0])`},
		{"empty-api", `:4: targets[0].api: must be completions, chat, responses, embeddings, rerank or messages, got ""`},
		{"empty-entry", `:7: targets[0].probes[1]: empty list entry`},
		{"goodput-objective", `:4: targets[0].goodput_objective: must be > 0 and < 1 (e.g. 0.99 for 99 %), got 99`},
		{"global-goodput-objective", `:2: global.goodput_objective: must be > 0 and < 1 (e.g. 0.99 for 99 %), got 1`},
		{"empty-probes", `:4: targets[0].probes: at least one probe is required (leave probes out for the default probe)`},
		{"key-env-not-a-name", `:4: targets[0].api_key_env: must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself`},
		{"key-env-unset", `:4: targets[0].api_key_env: environment variable LLMPROBE_TEST_UNSET_KEY is not set`},
		{"key-file-bearer", `:4: targets[0].api_key_file: the key in testdata/bearer.key contains spaces or control characters (write the key alone, without "Bearer")`},
		{"key-file-empty", `:4: targets[0].api_key_file: testdata/empty.key is empty`},
		{"lognormal-without-max", `:8: targets[0].probes[0].workload.input_tokens: max is required for dist lognormal (an unbounded draw can exceed any context length; use the model's max_model_len)`},
		{"max-body-bytes-zero", `:4: targets[0].max_body_bytes: must be > 0, got 0`},
		{"max-concurrency-zero", `:7: targets[0].probes[0].max_concurrency: must be >= 1, got 0`},
		{"metrics-url", `:4: targets[0].metrics_url: invalid URL: first path segment in URL cannot contain colon`},
		{"gpu-selector", `:5: targets[0].gpu_selector: not a label selector: 1:6: parse error: unexpected "}" in label matching, expected string`},
		{"gpu-selector-without-url", `:4: targets[0].gpu_selector: needs gpu_metrics_url`},
		{"missing-key-file", `:4: targets[0].api_key_file: cannot read the key: stat testdata/does-not-exist.key: no such file or directory`},
		{"missing-name", `:2: targets[0].name: required`},
		{"missing-rate", `:5: targets[0].probes[0].rate: required: requests per second, > 0`},
		{"missing-url", `:2: targets[0].base_url: required`},
		{"negative-prefix", `:8: targets[0].probes[0].workload.prefix_tokens: must be >= 0, got -1`},
		{"negative-rate", `:8: targets[0].probes[1].rate: must be > 0, got -1`},
		{"negative-seed", `:7: targets[0].probes[0].seed: want a non-negative integer, got "-1"`},
		{"negative-stall-timeout", `:4: targets[0].stall_timeout: must be >= 0 (0 disables it), got -1s`},
		{"no-targets", `:3: targets: at least one target or discovery entry is required`},
		{"not-a-mapping", `:1: want a mapping, got a list`},
		{"rate-inf", `:6: targets[0].probes[0].rate: must be finite, got +Inf`},
		{"rate-string", `:6: targets[0].probes[0].rate: want a number, got "lots"`},
		{"rate-zero", `:6: targets[0].probes[0].rate: must be > 0, got 0`},
		{"slo-inherited-over-timeout", `:4: targets[0].slo.e2el: must be <= timeout (20s), got 30s (inherited from global.slo)`},
		{"slo-over-timeout", `:5: targets[0].slo.e2el: must be <= timeout (5s), got 10s`},
		{"slo-unknown", `:6: targets[0].slo.itl: unknown slo key "itl" (one of ttft, tpot, e2el, ttfa)`},
		// yaml reports syntax errors at the line before the enclosing block.
		{"syntax", `:1: did not find expected '-' indicator`},
		{"target-ttft-timeout", `:7: targets[0].ttft_timeout: must be <= timeout (5s), got 7s`},
		{"ttft-timeout", `:3: global.ttft_timeout: must be <= timeout (10s), got 30s`},
		{"two-documents", `:4: only one YAML document is allowed`},
		{"unknown-key", `:7: targets[0].probes[0].arival: unknown key (did you mean arrival?)`},
		{"unknown-workload-key", `:8: targets[0].probes[0].workload.input_tokens.vaule: unknown key (did you mean value?)`},
		{"url-credentials", `:3: targets[0].base_url: must not contain credentials (user:password@); use api_key_file or api_key_env`},
		{"url-query", `:3: targets[0].base_url: must not contain a query (?...)`},
		{"url-v1", `:3: targets[0].base_url: must be the server root, without /v1 (llmprobe adds /v1/completions or /v1/chat/completions)`},
		{"zero-timeout", `:4: targets[0].timeout: must be > 0, got 0s`},
		{"timeout-over-max", `:4: targets[0].timeout: must be at most 24h, got 25h0m0s`},
		{"rate-over-max-rate", `:6: targets[0].probes[0].rate: must be <= global.max_rate (100), got 1e+09`},
		{"max-rate-over-cap", `:2: global.max_rate: must be <= 1e+06 (the most arrivals per second a probe's arrival process yields), got 1e+07`},
		{"max-rate-zero", `:2: global.max_rate: must be > 0, got 0`},
		{"burstiness-tiny", `:8: targets[0].probes[0].burstiness: must be between 0.01 and 1000 (gaps with a coefficient of variation of 10 to 0.03), got 1e-09`},
		{"fractional-max-concurrency", `:7: targets[0].probes[0].max_concurrency: want an integer, got "1.9"`},
		{"fractional-seed", `:7: targets[0].probes[0].seed: want a non-negative integer, got "2.5"`},
		{"fractional-token-length", `:8: targets[0].probes[0].workload.input_tokens.min: want an integer, got "8.5"`},
		{"sweep-bad-cron", `:6: targets[0].sweeps[0].cron: invalid cron expression "0 3 * *": expected exactly 5 fields, found 4: [0 3 * *]`},
		{"sweep-duplicate-name", `:8: targets[0].sweeps[1].name: duplicate sweep name "nightly" (also sweeps[0])`},
		{"sweep-goodput", `:8: targets[0].sweeps[0].goodput.ttft: invalid duration "soon" (want e.g. 800ms or 1.5s)`},
		{"sweep-jitter", `:7: targets[0].sweeps[0].jitter: must be < every (1h0m0s), got 2h0m0s`},
		{"sweep-max-sweep-rate", `:4: targets[0].max_sweep_rate: must be >= 0 and finite (0: no cap), got -5`},
		{"sweep-no-schedule", `:5: targets[0].sweeps[0].every: required: an interval such as 24h, or cron: an expression`},
		{"sweep-over-max-rate", `:8: targets[0].sweeps[0].rates: rate 200 req/s is over the target's max_sweep_rate (50 req/s)`},
		{"sweep-rates-shape", `:7: targets[0].sweeps[0].rates: must be "auto" or a list of rates in req/s such as [1, 2, 4]`},
		{"sweep-unknown-key", `:7: targets[0].sweeps[0].rate: unknown key (rate belongs in a probe)`},
		{"probe-trace", `:8: targets[0].probes[0].workload.trace: a probe cannot replay a trace: a probe runs without end and a trace replay is a timed experiment with one; schedule it as a sweep (targets[].sweeps[] with workload.trace)`},
		{"sweep-trace-line", `:8: targets[0].sweeps[0].workload.trace: ../../prober/workload/testdata/trace/invalid-input-zero.jsonl:2: input_length: must be >= 1, got 0`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			path := "testdata/invalid-" + tt.name + ".yml"
			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) succeeded:\n%s", path, c)
			}
			if got, want := err.Error(), path+tt.want; got != want {
				t.Errorf("error\n got: %s\nwant: %s", got, want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File != path {
				t.Errorf("error %#v is not a *Error for %s", err, path)
			}
			for _, secret := range []string{"hunter2", "s3cr3t"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error reveals a secret: %v", err)
				}
			}
		})
	}
	// Every invalid file has its case.
	files, _ := filepath.Glob("testdata/invalid-*.yml")
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "invalid-"), ".yml")
		if !seen[name] {
			t.Errorf("%s has no test case", f)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"empty file", "", "f.yml: targets: at least one target or discovery entry is required"},
		{"comment only", "# nothing\n", "f.yml: targets: at least one target or discovery entry is required"},
		{"null entry", "targets:\n  - ~\n", "f.yml:2: targets[0]: empty list entry"},
		{"several yaml errors", "targets:\n  - name: a\n    base_url: http://x\n    timeot: 1s\n    rate: 1\n",
			"f.yml:4: targets[0].timeot: unknown key (did you mean timeout?)\nf.yml:5: targets[0].rate: unknown key (rate belongs in a probe)"},
		{"unknown top-level key", "target:\n  - name: a\n", "f.yml:1: target: unknown key (did you mean targets?)"},
		{"list for string", "targets:\n  - name: a\n    base_url: [http://x]\n", "f.yml:3: targets[0].base_url: want a string, got a list"},
		{"duration without unit", "global:\n  timeout: 30\ntargets: []\n", `f.yml:2: global.timeout: want a duration such as 800ms, 30s or 2m, got "30"`},
		{"slo not a mapping", "global:\n  slo: 800ms\n", "f.yml:2: global.slo: must be a mapping such as {ttft: 800ms, tpot: 50ms}"},
		{"global slo over timeout", "global:\n  timeout: 1s\n  slo: {ttft: 2s}\n",
			"f.yml: targets: at least one target or discovery entry is required\nf.yml:3: global.slo.ttft: must be <= timeout (1s), got 2s"},
		{"long value shortened by yaml", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - name: p\n        rate: 1\n        max_concurrency: 99999999999999999999\n",
			`f.yml:7: targets[0].probes[0].max_concurrency: want an integer, got "99999999999999999999"`},
		{"huge rate", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - {name: p, rate: 1e13, max_concurrency: 0}\n",
			"f.yml:5: targets[0].probes[0].rate: must be <= global.max_rate (100), got 1e+13\nf.yml:5: targets[0].probes[0].max_concurrency: must be >= 1, got 0"},
		{"objective NaN", "targets:\n  - name: a\n    base_url: http://x\n    goodput_objective: .nan\n", "f.yml:4: targets[0].goodput_objective: must be > 0 and < 1 (e.g. 0.99 for 99 %), got NaN"},
		{"objective zero", "global:\n  goodput_objective: 0\ntargets:\n  - name: a\n    base_url: http://x\n", "f.yml:2: global.goodput_objective: must be > 0 and < 1 (e.g. 0.99 for 99 %), got 0"},
		{"objective in a probe", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - {name: p, rate: 1, goodput_objective: 0.9}\n", "f.yml:5: targets[0].probes[0].goodput_objective: unknown key (goodput_objective belongs in global or a target)"},
		// Issue 22 D3: accepted, and the probe never fired.
		{"rate tiny", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - {name: p, rate: 1e-300}\n",
			"f.yml:5: targets[0].probes[0].rate: must be >= 0.001 (one request per 1000 s; a lower rate never fires), got 1e-300"},
		{"max_concurrency huge", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - {name: p, rate: 1, max_concurrency: 100000000}\n",
			"f.yml:5: targets[0].probes[0].max_concurrency: must be at most 10000 requests in flight (each holds a socket and a goroutine; shard a sweep for more), got 100000000"},
		{"rate NaN", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - {name: p, rate: .nan}\n", "f.yml:5: targets[0].probes[0].rate: must be > 0, got NaN"},
		{"merged probe", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - &p {name: p, rate: 1}\n      - <<: *p\n        max_concurrency: -1\n",
			"f.yml:6: targets[0].probes[1].name: duplicate probe name \"p\" (also probes[0])\nf.yml:7: targets[0].probes[1].max_concurrency: must be >= 1, got -1"},
		{"merged probe name", "targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - &p {name: p, rate: 1}\n      - <<: *p\n        rate: 2\n",
			"f.yml:6: targets[0].probes[1].name: duplicate probe name \"p\" (also probes[0])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "f.yml")
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}

// TestMultipleProblems checks that every independent problem of a file is
// reported, one per line in file order, and that the consequences of a
// problem are not reported again.
func TestMultipleProblems(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		const path = "testdata/multi-problem.yml"
		_, err := Load(path)
		want := []string{
			path + `:7: targets[0].probes[0].arrival: must be one of poisson, gamma, constant, got "gamma2"`,
			path + `:8: targets[0].probes[0].rate: must be > 0, got -2`,
			path + `:13: targets[1].api: must be completions, chat, responses, embeddings, rerank or messages, got "images"`,
		}
		if err == nil || err.Error() != strings.Join(want, "\n") {
			t.Fatalf("error\n got: %v\nwant: %s", err, strings.Join(want, "\n"))
		}
		var es Errors
		if !errors.As(err, &es) || len(es) != len(want) {
			t.Fatalf("error %#v is not Errors of %d", err, len(want))
		}
		var first *Error
		if !errors.As(err, &first) || first != es[0] || first.Line != 7 || first.Path != "targets[0].probes[0].arrival" {
			t.Errorf("errors.As found %#v, want the first problem %#v", first, es[0])
		}
	})

	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"one per probe and target",
			"targets:\n  - name: a\n    base_url: ftp://x\n    probes:\n      - {name: p, rate: 0}\n      - {name: q, rate: 1, burstiness: 2}\n  - name: b/c\n    base_url: http://y\n",
			[]string{
				`f.yml:3: targets[0].base_url: scheme must be http or https, got "ftp"`,
				`f.yml:5: targets[0].probes[0].rate: must be > 0, got 0`,
				`f.yml:6: targets[0].probes[1].burstiness: 2 needs arrival gamma (arrival is poisson)`,
				`f.yml:7: targets[1].name: must match [a-zA-Z0-9_.:-]+, got "b/c"`,
			}},
		{"global and target",
			"global:\n  goodput_objective: 2\ntargets:\n  - name: a\n    base_url: http://x\n    max_body_bytes: 0\n",
			[]string{
				`f.yml:2: global.goodput_objective: must be > 0 and < 1 (e.g. 0.99 for 99 %), got 2`,
				`f.yml:6: targets[0].max_body_bytes: must be > 0, got 0`,
			}},
		// Not repeated: the inherited objective, the default max_concurrency
		// of the missing rate, ttft_timeout against the invalid timeout.
		{"consequences left out",
			"global:\n  goodput_objective: 2\ntargets:\n  - name: a\n    base_url: http://x\n    timeout: 0s\n    probes:\n      - {name: p}\n",
			[]string{
				`f.yml:2: global.goodput_objective: must be > 0 and < 1 (e.g. 0.99 for 99 %), got 2`,
				`f.yml:6: targets[0].timeout: must be > 0, got 0s`,
				`f.yml:8: targets[0].probes[0].rate: required: requests per second, > 0`,
			}},
		{"duplicate names and both timeouts",
			"targets:\n  - {name: a, base_url: http://x, ttft_timeout: -1s, stall_timeout: 3m}\n  - name: a\n    base_url: http://y\n",
			[]string{
				`f.yml:2: targets[0].ttft_timeout: must be >= 0 (0 disables it), got -1s`,
				`f.yml:2: targets[0].stall_timeout: must be <= timeout (2m0s), got 3m0s`,
				`f.yml:3: targets[1].name: duplicate target name "a" (also targets[0])`,
			}},
		{"key of an invalid target not read",
			"targets:\n  - {name: a, base_url: http://x, api: x, api_key_env: LLMPROBE_TEST_NEVER_SET}\n  - {name: b, base_url: http://y, api_key_env: LLMPROBE_TEST_NEVER_SET}\n",
			[]string{
				`f.yml:2: targets[0].api: must be completions, chat, responses, embeddings, rerank or messages, got "x"`,
				`f.yml:3: targets[1].api_key_env: environment variable LLMPROBE_TEST_NEVER_SET is not set`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "f.yml")
			if want := strings.Join(tt.want, "\n"); err == nil || err.Error() != want {
				t.Errorf("error\n got: %v\nwant: %s", err, want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/nope.yml")
	if err == nil || err.Error() != "testdata/nope.yml: no such file or directory" {
		t.Errorf("got %v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not match fs.ErrNotExist", err)
	}
}

func TestInheritance(t *testing.T) {
	c := mustLoad(t, "testdata/inherit.yml")
	in, ov, dis := c.Targets[0], c.Targets[1], c.Targets[2]
	one, two := ov.Probes[0], ov.Probes[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"global ttft lowered to timeout", c.Global.TTFTTimeout, 20 * time.Second},
		{"global stall kept", c.Global.StallTimeout, 15 * time.Second},
		{"trailing slash trimmed", in.BaseURL, "http://127.0.0.1:8000"},
		{"inherited timeouts", []time.Duration{in.Timeout, in.TTFTTimeout, in.StallTimeout}, []time.Duration{20 * time.Second, 20 * time.Second, 15 * time.Second}},
		{"inherited slo", in.SLO, slo.SLO{E2EL: 10 * time.Second}},
		{"inherited goodput objective", in.GoodputObjective, 0.995},
		{"own goodput objective", ov.GoodputObjective, 0.9},
		{"default probe", in.Probes[0].Name, "default"},
		{"default probe rate", in.Probes[0].Rate, 1.0},
		{"default probe concurrency", in.Probes[0].MaxConcurrency, 4},
		{"default probe workload", in.Probes[0].Workload, workload.DefaultSpec()},
		{"default probe seed", in.Probes[0].Seed, DeriveSeed("inherits", "default")},
		{"inherited timeouts lowered to target timeout", []time.Duration{ov.Timeout, ov.TTFTTimeout, ov.StallTimeout}, []time.Duration{8 * time.Second, 8 * time.Second, 8 * time.Second}},
		{"slo replaced as a whole", ov.SLO, slo.SLO{TTFT: time.Second}},
		{"metrics url with query", ov.MetricsURL(), "http://127.0.0.1:9090/federate?match[]=vllm:num_requests_running"},
		{"plain byte count", ov.MaxBodyBytes, ByteSize(1 << 20)},
		{"max_concurrency 4 x ceil(2.5)", one.MaxConcurrency, 12},
		{"max_concurrency of a tiny rate", c.Targets[3].Probes[0].MaxConcurrency, 4},
		{"max_concurrency of a huge rate is capped", c.Targets[3].Probes[1].MaxConcurrency, MaxDefaultConcurrency},
		{"explicit seed", one.Seed, uint64(7)},
		{"merge: rate", two.Rate, 2.5},
		{"merge: arrival", two.Arrival, ArrivalGamma},
		{"merge: burstiness", two.Burstiness, 0.5},
		{"merge: seed", two.Seed, uint64(7)},
		{"explicit max_concurrency", two.MaxConcurrency, 1},
		{"workload input default", two.Workload.InputTokens, workload.Fixed(64)},
		{"workload output as written", two.Workload.OutputTokens, workload.LengthSpec{Dist: workload.DistUniform, Min: 10, Max: 20}},
		{"prefix", two.Workload.PrefixTokens, 32},
		{"ignore_eos false", two.Workload.IgnoreEOSOrDefault(), false},
		{"zero disables ttft and stall", []time.Duration{dis.TTFTTimeout, dis.StallTimeout}, []time.Duration{0, 0}},
		{"metrics none", dis.MetricsURL(), ""},
		{"key relative to the config file", string(dis.APIKey()), "sk-file-key-s3cr3t"},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if fmt.Sprint(ch.got) != fmt.Sprint(ch.want) {
				t.Errorf("got %v, want %v", ch.got, ch.want)
			}
		})
	}
}

// TestSecrets checks that keys are read and never shown.
func TestSecrets(t *testing.T) {
	t.Setenv("LLMPROBE_TEST_KEY", " sk-env-s3cr3t\n")
	c := mustLoad(t, "testdata/keys.yml")
	if got := string(c.Targets[0].APIKey()); got != "sk-file-key-s3cr3t" {
		t.Errorf("file key: got %q", got)
	}
	if got := string(c.Targets[1].APIKey()); got != "sk-env-s3cr3t" {
		t.Errorf("env key: got %q", got)
	}
	if got := c.Targets[2].APIKey(); got != "" {
		t.Errorf("no key: got %q", got)
	}
	jsonBytes, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	views := []struct {
		name, text string
	}{
		{"String", c.String()},
		{"json", string(jsonBytes)},
		{"%v", fmt.Sprintf("%v", *c)},
		{"%+v", fmt.Sprintf("%+v", c.Targets)},
		{"%#v", fmt.Sprintf("%#v", c.Targets[0])},
		{"RestartKey", c.Targets[0].RestartKey()},
	}
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			if strings.Contains(v.text, "s3cr3t") {
				t.Errorf("%s reveals a key:\n%s", v.name, v.text)
			}
		})
	}
	// The key handed to the client marshals as <secret> too.
	if b, _ := json.Marshal(c.Targets[0].APIKey()); string(b) != `"\u003csecret\u003e"` {
		t.Errorf("json of the key: %s", b)
	}
	if !strings.Contains(c.String(), "api_key_env: LLMPROBE_TEST_KEY") {
		t.Errorf("String() should show where the key comes from:\n%s", c.String())
	}
}

func TestRoundTrip(t *testing.T) {
	t.Setenv("VLLM_B_API_KEY", "sk-example-s3cr3t")
	t.Setenv("LLMPROBE_TEST_KEY", "sk-env-s3cr3t")
	for _, path := range []string{"testdata/good.yml", "testdata/inherit.yml", "testdata/keys.yml", "../../deploy/examples/llmprobe.yml"} {
		t.Run(path, func(t *testing.T) {
			c := mustLoad(t, path)
			again, err := Parse([]byte(c.String()), path)
			if err != nil {
				t.Fatalf("String() does not parse back: %v\n%s", err, c)
			}
			if configKey(c) != configKey(again) {
				t.Errorf("round trip changed the config:\n%s\nvs\n%s", c, again)
			}
			if c.String() != again.String() {
				t.Errorf("String() not stable:\n%s\nvs\n%s", c, again)
			}
		})
	}
}

// configKey is a digest of everything a loaded config holds: the global
// section and, per target, its restart key, SLO, objective and probes' keys.
func configKey(c *Config) string {
	parts := []any{c.Global}
	for _, t := range c.Targets {
		parts = append(parts, t.RestartKey(), t.SLO, t.GoodputObjective)
		for _, p := range t.Probes {
			parts = append(parts, p.RestartKey())
		}
	}
	return digest(parts)
}

// probeID names one probe of one target.
type probeID struct{ target, probe string }

func TestRestartKeys(t *testing.T) {
	const base = `
targets:
  - name: a
    base_url: http://127.0.0.1:8000
    api_key_env: LLMPROBE_TEST_KEY
    timeout: %s
    slo: {ttft: %s}
    probes:
      - {name: p, rate: %s}
      - {name: q, rate: 1}
  - name: b
    base_url: http://127.0.0.1:8001
`
	// restarts returns, per probe, the restart keys of its target and itself.
	restarts := func(t *testing.T, timeout, ttft, rate, key string) map[probeID]string {
		t.Helper()
		t.Setenv("LLMPROBE_TEST_KEY", key)
		c, err := Parse([]byte(fmt.Sprintf(base, timeout, ttft, rate)), "f.yml")
		if err != nil {
			t.Fatal(err)
		}
		out := map[probeID]string{}
		for _, tg := range c.Targets {
			for _, p := range tg.Probes {
				out[probeID{tg.Name, p.Name}] = tg.RestartKey() + "/" + p.RestartKey()
			}
		}
		return out
	}
	ref := restarts(t, "1m", "1s", "2", "k1")
	if len(ref) != 3 {
		t.Fatalf("keys: %v", ref)
	}
	tests := []struct {
		name                     string
		timeout, ttft, rate, key string
		changed                  []probeID
	}{
		{"same", "1m", "1s", "2", "k1", nil},
		{"slo is swapped in place", "1m", "2s", "2", "k1", nil},
		{"probe rate", "1m", "1s", "3", "k1", []probeID{{"a", "p"}}},
		{"target timeout", "30s", "1s", "2", "k1", []probeID{{"a", "p"}, {"a", "q"}}},
		{"api key", "1m", "1s", "2", "k2", []probeID{{"a", "p"}, {"a", "q"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := restarts(t, tt.timeout, tt.ttft, tt.rate, tt.key)
			want := map[probeID]bool{}
			for _, id := range tt.changed {
				want[id] = true
			}
			for id, k := range ref {
				if changed := got[id] != k; changed != want[id] {
					t.Errorf("%v: changed=%v, want %v", id, changed, want[id])
				}
			}
		})
	}
}

// setNonZero gives v (settable) a non-zero value of its type, recursively
// for structs (first field), and reports whether it could.
func setNonZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x-changed")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 0.125)
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, e := range v.MapKeys() {
			m.SetMapIndex(e, v.MapIndex(e))
		}
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
			return true
		}
		return setNonZero(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && setNonZero(v.Field(i)) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}

// TestRestartKeyCoversEveryField changes each field of a resolved target
// and probe in turn: the restart key must change unless the field is listed
// as swapped in place. A field added later fails here until someone decides
// whether it restarts its target (the default) or is swapped in place.
func TestRestartKeyCoversEveryField(t *testing.T) {
	c, err := ForTarget("http://127.0.0.1:8000", "m", "")
	if err != nil {
		t.Fatal(err)
	}
	// Unexported fields are bookkeeping (which keys the file set), the
	// key and the http_config secrets, which enter as a hash (checked below
	// and in httpconfig_test.go), or a probe's loaded dataset, which enters
	// as workload.dataset's sha256.
	bookkeeping := map[string]bool{"set": true, "key": true, "workloadSet": true, "httpHash": true, "dataset": true, "secretFiles": true}
	f := func(name string, cfg any, key func(any) string, inPlace []string) {
		t.Run(name, func(t *testing.T) {
			ref := key(cfg)
			typ := reflect.TypeOf(cfg)
			for i := range typ.NumField() {
				fld := typ.Field(i)
				if !fld.IsExported() {
					if !bookkeeping[fld.Name] {
						t.Errorf("unexported field %s: decide whether it restarts the target and list it", fld.Name)
					}
					continue
				}
				cp := reflect.New(typ).Elem()
				cp.Set(reflect.ValueOf(cfg))
				if !setNonZero(cp.Field(i)) {
					t.Errorf("field %s: the test cannot change a %s; extend setNonZero", fld.Name, fld.Type)
					continue
				}
				changed := key(cp.Interface()) != ref
				if want := !slices.Contains(inPlace, fld.Name); changed != want {
					t.Errorf("field %s: restart key changed=%v, want %v", fld.Name, changed, want)
				}
			}
		})
	}
	f("target", c.Targets[0], func(v any) string { return v.(TargetConfig).RestartKey() }, InPlaceTargetFields)
	f("probe", c.Targets[0].Probes[0], func(v any) string { return v.(ProbeConfig).RestartKey() }, InPlaceProbeFields)

	tg := c.Targets[0]
	ref := tg.RestartKey()
	tg.key = &apiKey{s: "sk-restart-key-secret"}
	withKey := tg.RestartKey()
	tg.key = &apiKey{s: "sk-restart-key-other"}
	if withKey == ref || tg.RestartKey() == withKey {
		t.Error("the API key does not enter the restart key")
	}
	if strings.Contains(withKey, "sk-restart") {
		t.Error("the API key is in clear in the restart key")
	}
}

func TestForTarget(t *testing.T) {
	tests := []struct {
		name, url, model, api string
		wantName, wantErr     string
	}{
		{"host and port", "http://vllm:8000/", "", "", "vllm:8000", ""},
		{"ipv6", "http://[::1]:8000", "m", "chat", "_::1_:8000", ""},
		// The path is part of the name: two targets on one host must not
		// share a label (or a seed).
		{"path", "http://gw:8080/llama/", "", "", "gw:8080_llama", ""},
		{"nested path", "https://gw/models/qwen-7b", "", "", "gw_models_qwen-7b", ""},
		{"escaped path", "http://gw/a b", "", "", "gw_a_20b", ""},
		{"bad scheme", "vllm:8000", "", "", "", "base_url: scheme must be http or https, got \"vllm\""},
		{"bad api", "http://vllm:8000", "", "images", "", `api: must be completions, chat, responses, embeddings, rerank or messages, got "images"`},
		{"credentials", "http://u:hunter2@vllm:8000", "", "", "", "base_url: must not contain credentials (user:password@); use api_key_file or api_key_env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ForTarget(tt.url, tt.model, tt.api)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error: got %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tg := c.Targets[0]
			if tg.Name != tt.wantName || tg.Model != tt.model || len(tg.Probes) != 1 || tg.Probes[0].Name != "default" {
				t.Errorf("got %+v", tg)
			}
			if tg.Timeout != DefaultGlobalConfig.Timeout || tg.Probes[0].MaxConcurrency != 4 || tg.GoodputObjective != DefaultGoodputObjective {
				t.Errorf("defaults not applied: %+v", tg)
			}
			if err := tg.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in      string
		want    ByteSize
		str     string
		wantErr bool
	}{
		{"0", 0, "0B", false},
		{"1000", 1000, "1000B", false},
		{"1024", 1024, "1KiB", false},
		{"64MiB", 64 << 20, "64MiB", false},
		{"64 MiB", 64 << 20, "64MiB", false},
		{"1GiB", 1 << 30, "1GiB", false},
		{"2TiB", 2 << 40, "2TiB", false},
		{"5kB", 5000, "5000B", false},
		{"5KB", 5000, "5000B", false},
		{"3MB", 3e6, "3000000B", false},
		{"7B", 7, "7B", false},
		{"1.5GiB", 0, "", true},
		{"+5", 0, "", true},
		{"MiB", 0, "", true},
		{"64mib", 0, "", true},
		{"9999999999TiB", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseByteSize(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got != tt.want || got.String() != tt.str {
				t.Errorf("got %d (%s), want %d (%s)", got, got, tt.want, tt.str)
			}
			back, err := ParseByteSize(got.String())
			if err != nil || back != got {
				t.Errorf("String() does not parse back: %v %v", back, err)
			}
		})
	}
}

func TestDeriveSeed(t *testing.T) {
	tests := []struct {
		target, probe string
	}{{"sim", "small"}, {"a", "b"}, {"a.b", "c"}}
	seen := map[uint64]bool{}
	for _, tt := range tests {
		t.Run(tt.target+"/"+tt.probe, func(t *testing.T) {
			s := DeriveSeed(tt.target, tt.probe)
			if s != DeriveSeed(tt.target, tt.probe) {
				t.Error("not deterministic")
			}
			if s == 0 || s >= 1<<53 {
				t.Errorf("seed %d outside [1, 2^53)", s)
			}
			if seen[s] {
				t.Errorf("seed %d repeated", s)
			}
			seen[s] = true
		})
	}
	// The documented derivation, computed with sha256sum:
	// printf sim/small | sha256sum -> 8ae511cffd6d5fd1..., >> 11.
	if got, want := DeriveSeed("sim", "small"), uint64(0x8ae511cffd6d5fd1>>11); got != want {
		t.Errorf("DeriveSeed(sim, small) = %d, want %d", got, want)
	}
}

// TestBounds checks the defaults that bound a probe: global.max_rate and
// the default max_concurrency, and that max_rate can be raised.
func TestBounds(t *testing.T) {
	c, err := Parse([]byte("targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - {name: p, rate: 100}\n      - {name: q, rate: 50}\n      - {name: r, rate: 0.5}\n"), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Global.MaxRate; got != DefaultMaxRate {
		t.Errorf("default max_rate %v, want %v", got, DefaultMaxRate)
	}
	for i, want := range []int{MaxDefaultConcurrency, 200, 4} {
		if got := c.Targets[0].Probes[i].MaxConcurrency; got != want {
			t.Errorf("probe %s: default max_concurrency %d, want %d", c.Targets[0].Probes[i].Name, got, want)
		}
	}
	c, err = Parse([]byte("global: {max_rate: 1000}\ntargets:\n  - name: a\n    base_url: http://x\n    probes: [{name: p, rate: 1000, max_concurrency: 4000}]\n"), "f.yml")
	if err != nil {
		t.Fatalf("raised max_rate: %v", err)
	}
	if p := c.Targets[0].Probes[0]; p.Rate != 1000 || p.MaxConcurrency != 4000 {
		t.Errorf("probe %+v", p)
	}
	// An integral float is still not an integer; a fractional rate is fine.
	if _, err := Parse([]byte("targets:\n  - name: a\n    base_url: http://x\n    probes: [{name: p, rate: 2.5, max_concurrency: 2.0}]\n"), "f.yml"); err == nil ||
		err.Error() != `f.yml:4: targets[0].probes[0].max_concurrency: want an integer, got "2.0"` {
		t.Errorf("max_concurrency: 2.0: %v", err)
	}
	// A fractional integer beside another yaml problem: both, in line order.
	_, err = Parse([]byte("targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - name: p\n        rate: 1\n        max_concurrency: 3.5\n        arrival: [x]\n"), "f.yml")
	if want := "f.yml:7: targets[0].probes[0].max_concurrency: want an integer, got \"3.5\"\nf.yml:8: targets[0].probes[0].arrival: want a string, got a list"; err == nil || err.Error() != want {
		t.Errorf("error\n got: %v\nwant: %s", err, want)
	}
	// Merged values are checked where they land, overridden ones are not.
	_, err = Parse([]byte("targets:\n  - name: a\n    base_url: http://x\n    probes:\n      - &p {name: p, rate: 1, max_concurrency: 1.5}\n      - <<: *p\n        name: q\n        max_concurrency: 2\n"), "f.yml")
	if want := `f.yml:5: targets[0].probes[0].max_concurrency: want an integer, got "1.5"`; err == nil || err.Error() != want {
		t.Errorf("error\n got: %v\nwant: %s", err, want)
	}
}

// TestFileSizeCap feeds Load an endless file through a pipe: it must stop
// reading past MaxConfigFileBytes and name the file and the cap.
func TestFileSizeCap(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	written := make(chan int64, 1)
	go func() {
		defer w.Close()
		chunk := make([]byte, 64<<10)
		var n int64
		for n < 64<<20 { // an unbounded reader would take all of it
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	}()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no /dev/fd: %v", err)
	}
	_, err = Load(path)
	want := path + ": the file is larger than 4MiB, the cap on a configuration file"
	if err == nil || err.Error() != want {
		t.Errorf("error\n got: %.200v\nwant: %s", err, want)
	}
	r.Close() // the writer's next write fails
	if n := <-written; n > MaxConfigFileBytes+1<<20 {
		t.Errorf("Load read %d bytes of an endless file, want about %d", n, MaxConfigFileBytes)
	}

	big := filepath.Join(t.TempDir(), "big.yml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxConfigFileBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.HasSuffix(err.Error(), "big.yml: the file is larger than 4MiB, the cap on a configuration file") {
		t.Errorf("large file: %v", err)
	}
	var te *TooLargeError
	if _, err := ReadFile(big, 10); !errors.As(err, &te) || te.Limit != 10 || err.Error() != big+" is larger than 10B" {
		t.Errorf("ReadFile: %v", err)
	}
}

// TestRedacted checks that the view of the config shown on /config carries
// no URL query value or userinfo, and that String still round-trips.
func TestRedacted(t *testing.T) {
	const secret = "deadbeef-sig-42"
	c, err := Parse([]byte("targets:\n  - name: a\n    base_url: http://x\n    metrics_url: http://m:9090/federate?match[]=vllm:num_requests_running&X-Amz-Signature="+secret+"&flag\n"), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	red := c.Redacted()
	for _, leak := range []string{secret, "vllm:num_requests_running", "&flag"} {
		if strings.Contains(red, leak) {
			t.Errorf("Redacted() shows %q:\n%s", leak, red)
		}
	}
	if want := "metrics_url: http://m:9090/federate?match[]=<redacted>&X-Amz-Signature=<redacted>&<redacted>"; !strings.Contains(red, want) {
		t.Errorf("Redacted() lacks %q:\n%s", want, red)
	}
	if !strings.Contains(c.String(), secret) {
		t.Errorf("String() must keep the URL as written (it round-trips):\n%s", c.String())
	}
	if c.Targets[0].RawMetricsURL == "" || !strings.Contains(c.Targets[0].RawMetricsURL, secret) {
		t.Error("Redacted() modified the config")
	}
	if got := redactURL("https://user:pw@h/p?q=1"); got != "https://<redacted>@h/p?q=<redacted>" {
		t.Errorf("redactURL = %q", got)
	}
}

func TestEngineKey(t *testing.T) {
	for in, want := range map[string]string{"": "", "engine: auto": "", "engine: llamacpp": "llamacpp", "engine: tgi": "tgi"} {
		c, err := Parse([]byte("targets:\n  - name: t\n    base_url: http://127.0.0.1:8080\n    "+in+"\n"), "t.yml")
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := c.Targets[0].Engine; got != want {
			t.Errorf("%q: engine %q, want %q", in, got, want)
		}
	}
}

// TestTargetLabels checks that static labels and cost_per_hour load as
// written, and that too many labels, a reserved __ name and an overlong value
// are refused.
func TestTargetLabels(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.yml")
		if err := os.WriteFile(p, []byte("targets:\n  - name: t\n    base_url: http://127.0.0.1:8000\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := Load(write("    cost_per_hour: 2.5\n    labels: {canary: chat-v2, role: baseline}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.Targets[0]
	if want := map[string]string{"canary": "chat-v2", "role": "baseline"}; !maps.Equal(tc.Labels, want) || tc.CostPerHour != 2.5 {
		t.Fatalf("labels %v cost %v, want %v and 2.5", tc.Labels, tc.CostPerHour, want)
	}
	var many strings.Builder
	many.WriteString("    labels:\n")
	for i := range MaxTargetLabels + 1 {
		fmt.Fprintf(&many, "      l%d: x\n", i)
	}
	for _, tc := range []struct{ body, want string }{
		{many.String(), fmt.Sprintf("targets[0].labels: at most %d labels, got %d", MaxTargetLabels, MaxTargetLabels+1)},
		{"    labels: {__x: y}\n", `targets[0].labels.__x: label name "__x" is reserved (names starting with __)`},
		{"    labels: {a: " + strings.Repeat("v", MaxTargetLabelValueLen+1) + "}\n", fmt.Sprintf("targets[0].labels.a: at most %d bytes, got %d", MaxTargetLabelValueLen, MaxTargetLabelValueLen+1)},
	} {
		_, err := Load(write(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

// TestRecursiveMergeAlias: a merge key that refers to the mapping holding
// it is an error, not a crash (the integer check followed it until the
// stack overflowed; found by FuzzParse).
func TestRecursiveMergeAlias(t *testing.T) {
	for _, in := range []string{
		"global: &g\n    <<: *g\n",
		"global: &g\n    <<: *g\n    probes: [{name: a, rate: 1}]\n",
		"global: &g\n  <<: [*g, *g]\ntargets: []\n",
	} {
		if _, err := Parse([]byte(in), "f.yml"); err == nil {
			t.Errorf("Parse(%q) accepted a self-referencing merge", in)
		}
	}
}
