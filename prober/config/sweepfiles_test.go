package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// sweepFilesDir writes a trace, datasets and a schema into a new directory
// and returns it with a function that parses a config file there whose one
// target has the given sweeps: block.
func sweepFilesDir(t *testing.T) (string, func(extra, sweeps string) (*config.Config, error)) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("trace.jsonl", `{"timestamp": 1000, "input_length": 1200, "output_length": 8, "hash_ids": [0, 1, 2]}
{"timestamp": 1500, "input_length": 600, "output_length": 16, "hash_ids": [0, 4]}
{"timestamp": 3000, "input_length": 300, "output_length": 2}
`)
	write("bad-trace.jsonl", "{\"offset_ms\": 0, \"input_tokens\": 8, \"output_tokens\": 2}\n{\"offset_ms\": 10, \"input_tokens\": 8}\n")
	write("data.jsonl", "{\"prompt\": \"a b c\", \"max_tokens\": 3}\n")
	write("bad-data.jsonl", "{\"prompt\": \"a b c\", \"max_tokens\": 3}\n{\"prompt\": 1}\n")
	write("order.json", `{"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}`)
	parse := func(extra, sweeps string) (*config.Config, error) {
		yml := "targets:\n- name: t\n  base_url: http://127.0.0.1:1\n" + extra + "  sweeps:\n" + sweeps
		return config.Parse([]byte(yml), filepath.Join(dir, "c.yml"))
	}
	return dir, parse
}

// TestSweepTrace loads a scheduled sweep's workload.trace relative to the
// config file, builds the trace replay's sweep.Config from it, and pins
// each refusal to its message (the config's file and line, the field, and
// the trace's own file and line).
func TestSweepTrace(t *testing.T) {
	dir, parse := sweepFilesDir(t)
	c, err := parse("", "  - name: replay\n    every: 24h\n    workload:\n      trace: {path: trace.jsonl, speeds: [1, 2], block_size: 512}\n"+
		"      request: {temperature: 0.5}\n")
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Targets[0]
	sw := tg.Sweeps[0]
	ts := sw.Workload.Trace
	if ts.Path != filepath.Join(dir, "trace.jsonl") || !strings.HasPrefix(ts.SHA256, "sha256:") || sw.LoadedTrace() == nil {
		t.Fatalf("trace spec %+v, loaded %v", ts, sw.LoadedTrace() != nil)
	}
	sc, err := sweep.FromSpec(sw.SweepSpec, tg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Trace != sw.LoadedTrace() || !reflect.DeepEqual(sc.TraceSpeeds, []float64{1, 2}) || sc.Duration != 0 || sc.MinPrompts != 0 ||
		len(sc.Rates) != 0 || sc.Auto || sc.Workload.Trace != nil || sc.Workload.Request == nil || *sc.Workload.Request.Temperature != 0.5 {
		t.Errorf("sweep.Config: trace %v speeds %v duration %v min %d rates %v auto %v workload %+v",
			sc.Trace != nil, sc.TraceSpeeds, sc.Duration, sc.MinPrompts, sc.Rates, sc.Auto, sc.Workload)
	}
	// The file's digest is in the spec's JSON (the schedule's digest): a
	// changed file changes it; the path and speeds print, never the YAML key.
	b, _ := json.Marshal(sw)
	if !strings.Contains(string(b), ts.SHA256) {
		t.Errorf("the spec's JSON lacks the trace's digest: %s", b)
	}
	cfg := filepath.Join(dir, "c.yml")
	for _, tc := range []struct{ extra, sweeps, want string }{
		{"", "  - name: r\n    every: 1h\n    workload:\n      trace: {path: bad-trace.jsonl}\n",
			cfg + ":8: targets[0].sweeps[0].workload.trace: " + filepath.Join(dir, "bad-trace.jsonl") + ":2: output_tokens: required"},
		{"", "  - name: r\n    every: 1h\n    workload: {trace: {path: none.jsonl}}\n",
			cfg + ":7: targets[0].sweeps[0].workload.trace: open " + filepath.Join(dir, "none.jsonl") + ": no such file or directory"},
		{"", "  - name: r\n    every: 1h\n    rates: [1]\n    workload: {trace: {path: trace.jsonl}}\n",
			"targets[0].sweeps[0].rates: a trace replay has its own timing: give workload.trace.speeds, not rates or concurrency"},
		{"", "  - name: r\n    every: 1h\n    workload: {trace: {path: trace.jsonl}, input_tokens: {dist: fixed, value: 8}}\n",
			"targets[0].sweeps[0].workload.input_tokens: does not apply with trace"},
		{"", "  - name: r\n    every: 1h\n    workload: {trace: {path: trace.jsonl, speeds: [2, 2]}}\n",
			"targets[0].sweeps[0].workload.trace.speeds: speed 2 given twice"},
		{"", "  - name: r\n    every: 1h\n    workload: {trace: {path: trace.jsonl, speeds: [-1]}}\n",
			"targets[0].sweeps[0].workload.trace.speeds: speed must be > 0 and finite"},
		{"", "  - name: r\n    every: 1h\n    workload: {trace: {speeds: [1]}}\n",
			"targets[0].sweeps[0].workload.trace.path: required"},
		{"", "  - name: r\n    every: 1h\n    workload: {trace: {path: trace.jsonl, sha256: abc}}\n",
			"targets[0].sweeps[0].workload.trace.sha256: unknown key"},
		{"  max_sweep_rate: 2\n", "  - name: r\n    every: 1h\n    workload: {trace: {path: trace.jsonl, speeds: [1, 4]}}\n",
			"targets[0].sweeps[0].workload.trace.speeds: speed 4 replays 6 req/s on average, over the target's max_sweep_rate (2 req/s)"},
	} {
		_, err := parse(tc.extra, tc.sweeps)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.sweeps, err, tc.want)
		}
	}
	// Speeds 1 and 2 of a 2-second trace of 3 entries are 1.5 and 3 req/s.
	if _, err := parse("  max_sweep_rate: 3\n", "  - name: r\n    every: 1h\n    workload: {trace: {path: trace.jsonl, speeds: [1, 2]}}\n"); err != nil {
		t.Errorf("speeds within max_sweep_rate: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(`{"offset_ms": 0, "input_tokens": 8, "output_tokens": 2}
{"offset_ms": 500, "input_tokens": 8, "output_tokens": 2}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c2, err := parse("", "  - name: replay\n    every: 24h\n    workload:\n      trace: {path: trace.jsonl, speeds: [1, 2], block_size: 512}\n"+
		"      request: {temperature: 0.5}\n")
	if err != nil {
		t.Fatal(err)
	}
	if c2.Targets[0].Sweeps[0].Workload.Trace.SHA256 == ts.SHA256 {
		t.Error("a changed trace file kept its digest")
	}
	if strings.Contains(c.String(), "sha256") {
		t.Errorf("the config view shows the digest as a key:\n%s", c)
	}
}

// TestSweepDatasetAndSchemaFiles: a scheduled sweep's workload.dataset and
// schema_file are relative to the config file's directory, not the working
// directory; the dataset is checked at load and its digest recorded.
func TestSweepDatasetAndSchemaFiles(t *testing.T) {
	dir, parse := sweepFilesDir(t)
	t.Chdir(t.TempDir()) // a working directory without the files
	c, err := parse("", "  - name: ds\n    every: 24h\n    rates: [1]\n    workload:\n      dataset: {path: data.jsonl, sampling: cycle}\n"+
		"      request: {features: [{kind: json_schema, share: 0.5, schema_file: order.json}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Targets[0]
	w := tg.Sweeps[0].Workload
	if w.Dataset.Path != filepath.Join(dir, "data.jsonl") || len(w.Dataset.SHA256) != 64 {
		t.Errorf("dataset %+v", w.Dataset)
	}
	if f := w.Request.Features[0]; f.Schema["type"] != "object" {
		t.Errorf("schema_file not read: %+v", f)
	}
	sc, err := sweep.FromSpec(tg.Sweeps[0].SweepSpec, tg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.Dataset.Path != filepath.Join(dir, "data.jsonl") {
		t.Errorf("the sweep reads the dataset from %s", sc.Workload.Dataset.Path)
	}
	cfg := filepath.Join(dir, "c.yml")
	for _, tc := range []struct{ sweeps, want string }{
		{"  - name: ds\n    every: 1h\n    rates: [1]\n    workload:\n      dataset: {path: bad-data.jsonl}\n",
			cfg + ":9: targets[0].sweeps[0].workload.dataset: " + filepath.Join(dir, "bad-data.jsonl") + ":2: prompt: must be a string, got number"},
		{"  - name: ds\n    every: 1h\n    rates: [1]\n    workload: {request: {features: [{kind: json_schema, share: 1, schema_file: none.json}]}, " +
			"input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}\n",
			"targets[0].sweeps[0].workload.request.features[0].schema_file: open " + filepath.Join(dir, "none.json")},
	} {
		_, err := parse("", tc.sweeps)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.sweeps, err, tc.want)
		}
	}
}

// mustSpec is the spec of YAML text.
func mustSpec(t *testing.T, text string) config.SweepSpec {
	t.Helper()
	s, err := config.ParseSweepSpec(text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return s
}

// TestCheckNoFiles: a spec naming a file is refused with the key at fault;
// an inline schema passes.
func TestCheckNoFiles(t *testing.T) {
	f := func(body, wantKey string) {
		t.Helper()
		s, err := config.ParseSweepSpec(body)
		if err != nil {
			t.Fatal(err)
		}
		err = s.CheckNoFiles()
		if wantKey == "" {
			if err != nil {
				t.Errorf("%s: %v", body, err)
			}
			return
		}
		se := config.AsSpecError(err)
		if err == nil || se.Key != wantKey || !strings.Contains(err.Error(), "accepted only in a scheduled sweep of the config file") {
			t.Errorf("%s: %v, want key %s", body, err, wantKey)
		}
	}
	f(`{"workload": {"dataset": {"path": "/etc/passwd"}}}`, "workload.dataset")
	f(`{"workload": {"trace": {"path": "/etc/shadow"}}}`, "workload.trace")
	f(`{"workload": {"request": {"features": [{"kind": "logprobs", "share": 1}, {"kind": "json_schema", "share": 1, "schema_file": "/etc/hosts"}]}}}`,
		"workload.request.features[1].schema_file")
	f(`{"workload": {"request": {"features": [{"kind": "json_schema", "share": 1, "schema": {"type": "object"}}]}}}`, "")
	f(`{"rates": [1]}`, "")
	f(`{"rates": [1], "answer_checks": "/etc/passwd"}`, "answer_checks")
	f(`{"rates": [1], "answer_checks": "builtin"}`, "")
}

// TestSweepAnswerChecksFile: a scheduled sweep's answer_checks file is read
// at load relative to the config file's directory, its set handed to the
// sweep.Config and its digest to the schedule; builtin is no file; a bad
// file fails the load naming the config's line and the key.
func TestSweepAnswerChecksFile(t *testing.T) {
	dir, parse := sweepFilesDir(t)
	t.Chdir(t.TempDir()) // a working directory without the files
	set := filepath.Join(dir, "checks.jsonl")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(set, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"id":"add","prompt":"What is 2 + 2?","number":4}` + "\n")
	c, err := parse("", "  - name: q\n    every: 24h\n    rates: [1]\n    answer_checks: checks.jsonl\n")
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Targets[0]
	sw := tg.Sweeps[0]
	sc, err := sweep.FromSpec(sw.SweepSpec, tg)
	if err != nil {
		t.Fatal(err)
	}
	if checks, _ := sw.Text("answer_checks"); checks != set || sc.AnswerChecks == nil || sc.AnswerChecks.Name != set || len(sc.AnswerChecks.Items) != 1 ||
		len(sw.AnswerChecksSHA256()) != 64 || sw.AnswerChecksSHA256() != sc.AnswerChecks.SHA256 {
		t.Fatalf("spec %q (sha256 %q), sweep.Config set %+v", checks, sw.AnswerChecksSHA256(), sc.AnswerChecks)
	}
	if strings.Contains(c.String(), "sha256") {
		t.Errorf("the config view shows the digest as a key:\n%s", c)
	}
	// A changed file changes the digest.
	write(`{"id":"add","prompt":"What is 2 + 3?","number":5}` + "\n")
	c2, err := parse("", "  - name: q\n    every: 24h\n    rates: [1]\n    answer_checks: checks.jsonl\n")
	if err != nil {
		t.Fatal(err)
	}
	if c2.Targets[0].Sweeps[0].AnswerChecksSHA256() == sw.AnswerChecksSHA256() {
		t.Error("a changed check set kept its digest")
	}
	// builtin: the embedded set, no file.
	c3, err := parse("", "  - name: q\n    every: 24h\n    rates: [1]\n    answer_checks: builtin\n")
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := sweep.FromSpec(c3.Targets[0].Sweeps[0].SweepSpec, c3.Targets[0]); err != nil || sc.AnswerChecks != answer.Builtin() ||
		c3.Targets[0].Sweeps[0].AnswerChecksSHA256() != "" {
		t.Errorf("builtin: %v, %v", sc.AnswerChecks, err)
	}
	// Without one: none.
	if sc, err := sweep.FromSpec(mustSpec(t, "rates: [1]"), tg); err != nil || sc.AnswerChecks != nil {
		t.Errorf("no answer_checks: %v, %v", sc.AnswerChecks, err)
	}
	// A spec naming a file that no config load read (an API body past
	// CheckNoFiles) is refused, not read.
	if _, err := sweep.FromSpec(mustSpec(t, "rates: [1]\nanswer_checks: "+set), tg); config.AsSpecError(err) == nil ||
		config.AsSpecError(err).Key != "answer_checks" || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("an unloaded file: %v", err)
	}
	write(`{"id":"greet","messages":[{"role":"user","content":"Say hi"}],"contains":"hi"}` + "\n")
	cfg := filepath.Join(dir, "c.yml")
	for _, tc := range []struct{ sweeps, want string }{
		{"  - name: q\n    every: 1h\n    rates: [1]\n    answer_checks: none.jsonl\n",
			cfg + ":8: targets[0].sweeps[0].answer_checks: open " + filepath.Join(dir, "none.jsonl") + ": no such file or directory"},
		{"  - name: q\n    every: 1h\n    rates: [1]\n    answer_checks: bad-data.jsonl\n",
			cfg + ":8: targets[0].sweeps[0].answer_checks: " + filepath.Join(dir, "bad-data.jsonl") + ":1: id: required"},
		{"  - name: q\n    every: 1h\n    rates: [1]\n    answer_checks: checks.jsonl\n",
			cfg + ":8: targets[0].sweeps[0].answer_checks: check greet: messages need a chat target (api: chat or messages), this one is completions"},
	} {
		_, err := parse("", tc.sweeps)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.sweeps, err, tc.want)
		}
	}
	if _, err := parse("  api: chat\n", "  - name: q\n    every: 1h\n    rates: [1]\n    answer_checks: checks.jsonl\n"); err != nil {
		t.Errorf("a messages check on a chat target: %v", err)
	}
}
