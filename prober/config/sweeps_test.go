package config_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

const sweepsYAML = `
targets:
  - name: sim
    base_url: http://127.0.0.1:8000
    slo: {ttft: 800ms, tpot: 50ms}
    max_sweep_rate: 40
    sweeps:
      - name: nightly
        cron: "0 3 * * *"
        jitter: 10m
        rates: auto
        duration: 30s
        workload:
          input_tokens: {dist: fixed, value: 512}
          output_tokens: {dist: fixed, value: 128}
        retention: {count: 5, age: 720h}
      - name: quick
        every: 1m
        rates: [1, 2]
        num_prompts: 20
        input_len: 32
        output_len: 4
        goodput: {ttft: 1s}
`

func TestSweepsBlock(t *testing.T) {
	c, err := config.Parse([]byte(sweepsYAML), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Targets[0]
	if tg.MaxSweepRate != 40 || len(tg.Sweeps) != 2 {
		t.Fatalf("max_sweep_rate %v, %d sweeps", tg.MaxSweepRate, len(tg.Sweeps))
	}
	n, q := tg.Sweeps[0], tg.Sweeps[1]
	if n.Name() != "nightly" || n.Cron != "0 3 * * *" || time.Duration(n.Jitter) != 10*time.Minute || keyText(n.SweepSpec, "rates") != "auto" ||
		n.Retention.Keep() != 5 || time.Duration(n.Retention.Age) != 720*time.Hour {
		t.Errorf("nightly = %+v", n)
	}
	if q.Every != config.Duration(time.Minute) || keyText(q.SweepSpec, "rates") != "[1, 2]" || q.Retention.Keep() != config.DefaultSweepKeep {
		t.Errorf("quick = %+v", q)
	}
	// The schedules.
	at := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	s, err := n.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Next(at), time.Date(2026, 1, 3, 3, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("cron next = %v, want %v", got, want)
	}
	s, _ = q.Schedule()
	if got := s.Next(at); !got.Equal(at.Add(time.Minute)) {
		t.Errorf("every next = %v", got)
	}
	// The config prints and parses back to the same sweeps.
	back, err := config.Parse([]byte(c.String()), "back.yml")
	if err != nil {
		t.Fatalf("String() does not parse back: %v\n%s", err, c.String())
	}
	bt := back.Targets[0]
	if bt.MaxSweepRate != 40 || bt.Sweeps[0].Cron != n.Cron || keyText(bt.Sweeps[0].SweepSpec, "rates") != "auto" || keyText(bt.Sweeps[1].SweepSpec, "rates") != "[1, 2]" ||
		keyText(bt.Sweeps[1].SweepSpec, "goodput") != keyText(q.SweepSpec, "goodput") || bt.Sweeps[0].Workload.InputTokens.Value != 512 {
		t.Errorf("round trip lost sweeps: %+v", bt.Sweeps)
	}
	// A sweeps change does not restart the target's probes.
	if bt.RestartKey() == "" {
		t.Fatal("empty restart key")
	}
	plain := tg
	plain.Sweeps, plain.MaxSweepRate = nil, 0
	if plain.RestartKey() != tg.RestartKey() {
		t.Error("the sweeps block enters the restart key")
	}
}

func TestSweepConfig(t *testing.T) {
	c, err := config.Parse([]byte(sweepsYAML), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Targets[0]
	// Defaults: the CLI's, the target's SLO, auto capped at max_sweep_rate.
	sc, err := sweep.FromSpec(tg.Sweeps[0].SweepSpec, tg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Target != tg.BaseURL || sc.MetricsURL != tg.BaseURL+"/metrics" || sc.API != "completions" || sc.Timeout != tg.Timeout {
		t.Errorf("target settings: %+v", sc)
	}
	if !sc.Auto || sc.Search.MaxRate != 40 || sc.Search.Start != 1 || sc.Duration != 30*time.Second ||
		sc.MinPrompts != sweep.DefaultMinPrompts || sc.Warmups != sweep.DefaultWarmups || sc.Rounds != 1 {
		t.Errorf("load settings: auto %v search %+v duration %v min %d warmups %d rounds %d",
			sc.Auto, sc.Search, sc.Duration, sc.MinPrompts, sc.Warmups, sc.Rounds)
	}
	if sc.SLO != tg.SLO || sc.Name != "nightly" || sc.Metadata["target"] != "sim" {
		t.Errorf("slo %v name %q metadata %v", sc.SLO, sc.Name, sc.Metadata)
	}
	sc, err = sweep.FromSpec(tg.Sweeps[1].SweepSpec, tg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.InputTokens.Value != 32 || sc.SLO != (slo.SLO{TTFT: time.Second}) || sc.NumPrompts != 20 || sc.Duration != 0 {
		t.Errorf("quick: workload %+v slo %v n %d d %v", sc.Workload, sc.SLO, sc.NumPrompts, sc.Duration)
	}

	// Errors name the spec key.
	tests := []struct {
		name string
		spec string
		want string
	}{
		{"over cap", "rates: [41]", "rates: rate 41 req/s is over the target's max_sweep_rate (40 req/s)"},
		{"closed loop with a cap", "concurrency: [4]", "concurrency: the target has a max_sweep_rate (40 req/s), which a closed loop cannot keep: use rates"},
		{"no load", "{}", `rates: required: "auto", a list of rates, or concurrency levels`},
		{"both", "rates: auto\nconcurrency: [1]", "concurrency: give rates or concurrency, not both (use rates with max_concurrency for an open loop with a cap)"},
		{"bad name", "name: a b\nrates: auto", `name: must match [a-zA-Z0-9_.:-]+, got "a b"`},
		{"both prompts and duration", "rates: auto\nnum_prompts: 5\nduration: 1s",
			"num_prompts: give num_prompts or duration per step, not both"},
		{"rounds", "rates: auto\nrounds: -1", "rounds: must be in [1, 100], got -1"},
		{"input", "rates: auto\ninput_len: -3", "input_len: must be >= 1, got -3"},
		{"workload and lengths", "rates: auto\ninput_len: 3\nworkload: {}",
			"workload: give workload or input_len/output_len/range_ratio/prefix_len, not both"},
		{"zero rate", "rates: [0]", "rates: rate must be >= 0.01, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := config.ParseSweepSpec(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			_, err = sweep.FromSpec(spec, tg)
			se := config.AsSpecError(err)
			if se == nil || se.Error() != tt.want {
				t.Errorf("error %v, want %s", err, tt.want)
			}
		})
	}
}

func TestSweepSpecJSON(t *testing.T) {
	body := `{"rates": [1, 2], "num_prompts": 20, "goodput": {"ttft": "800ms", "tpot": "50ms"}, "duration": "3s", "workload": {"prefix_tokens": 3}}`
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	s, err := config.SweepSpecFromJSON(raw)
	if err != nil || keyText(s, "rates") != "[1, 2]" || keyText(s, "duration") != "3s" || s.Workload == nil || s.Workload.PrefixTokens != 3 {
		t.Errorf("decoded %+v %v", s, err)
	}
	if _, err := config.SweepSpecFromJSON(map[string]json.RawMessage{"workload": json.RawMessage(`{"prefix_tokenz": 3}`)}); config.AsSpecError(err) == nil ||
		config.AsSpecError(err).Key != "workload" || !strings.Contains(err.Error(), "prefix_tokenz") {
		t.Errorf("unknown workload key: %v", err)
	}
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"rates":[1,2]`) || !strings.Contains(string(b), `"duration":"3s"`) {
		t.Errorf("marshal: %s %v", b, err)
	}
}

// keyText is a spec key's value as YAML text ("" when left out).
func keyText(s config.SweepSpec, key string) string {
	n, ok := s.Keys[key]
	if !ok {
		return ""
	}
	n.Style = yaml.FlowStyle
	b, err := yaml.Marshal(&n)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// TestSweepLoadBounds: a scheduled sweep's levels are bounded at load from
// the settings table (issue 22 D1, D3: check-config accepted concurrency
// [1000000000], which took a daemon down; a rate of 1e-300 was sent as a
// burst).
func TestSweepLoadBounds(t *testing.T) {
	f := func(load, want string) {
		t.Helper()
		yml := "targets:\n  - name: sim\n    base_url: http://127.0.0.1:8000\n    sweeps:\n      - name: s\n        every: 1h\n        num_prompts: 10\n        " + load + "\n"
		_, err := config.Parse([]byte(yml), "f.yml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", load, err, want)
		}
	}
	f("concurrency: [1000000000]", "concurrency: must be at most 10000 requests in flight (each holds a socket and a goroutine; shard a sweep for more), got 1000000000")
	f("max_concurrency: 20000\n        rates: [1]", "max_concurrency: must be at most 10000 requests in flight")
	f("rates: [1e-300]", "rate must be >= 0.01, got 1e-300")
}

// TestProbeSchemaRecursion: a probe's inline JSON schema that recurses on
// the same value is a load error (issue 22 D2: accepted, and the first
// reply validated against it overflowed the stack and killed the daemon).
func TestProbeSchemaRecursion(t *testing.T) {
	yml := "targets:\n  - name: sim\n    base_url: http://127.0.0.1:8000\n    probes:\n      - name: p\n        rate: 1\n" +
		"        workload: {request: {features: [{kind: json_schema, share: 1, schema: {$ref: \"#\"}}]}}\n"
	_, err := config.Parse([]byte(yml), "f.yml")
	if err == nil || !strings.Contains(err.Error(), "leads back to the root on the same value") {
		t.Errorf("error %v, want the schema's recursion named", err)
	}
}
