package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/answer"
)

func TestAnswerChecksLoad(t *testing.T) {
	c, err := Load("testdata/answers/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	ps := c.Targets[0].Probes
	if ps[0].AnswerChecks != nil {
		t.Errorf("default probe has answer checks")
	}
	b := ps[1].AnswerChecks
	if b == nil || b.Every != DefaultAnswerCheckEvery || b.CheckSet() != answer.Builtin() || b.SHA256 != "" {
		t.Errorf("builtin probe: %+v", b)
	}
	f := ps[2].AnswerChecks
	if f == nil || f.Every != time.Minute || f.Set != filepath.Join("testdata", "answers", "set.jsonl") ||
		len(f.CheckSet().Items) != 1 || len(f.SHA256) != 64 {
		t.Errorf("file probe: %+v", f)
	}
	if ps[1].RestartKey() == ps[2].RestartKey() {
		t.Errorf("restart keys equal")
	}
}

func TestAnswerChecksInvalid(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"rate", `:6: targets[0].probes[0].rate: an answer_checks probe sends its check set, not a workload: leave rate out`},
		{"every", `:8: targets[0].probes[0].answer_checks.every: must be between 10s and 24h0m0s, got 1s`},
		{"no-set", `:6: targets[0].probes[0].answer_checks.set: required: builtin or the path of a JSONL check set`},
		{"unknown-key", `:8: targets[0].probes[0].answer_checks.seed: unknown key (seed belongs in a probe)`},
		{"bad-file", `:7: targets[0].probes[0].answer_checks.set: testdata/answers/bad.jsonl:2: number: must be a number, got string`},
		{"messages-completions", `:7: targets[0].probes[0].answer_checks.set: check "hello" has messages: they need api: chat or messages`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "testdata/answers/invalid-" + tc.name + ".yml"
			_, err := Load(path)
			if err == nil || err.Error() != path+tc.want {
				t.Errorf("error\n got: %v\nwant: %s", err, path+tc.want)
			}
		})
	}
}

func TestAddAnswerChecks(t *testing.T) {
	c, err := ForTarget("http://127.0.0.1:8000", "", "completions")
	if err != nil {
		t.Fatal(err)
	}
	tg := &c.Targets[0]
	if err := tg.AddAnswerChecks("builtin"); err != nil {
		t.Fatal(err)
	}
	if len(tg.Probes) != 2 || tg.Probes[1].Name != AnswerProbeName || tg.Probes[1].AnswerChecks.CheckSet() == nil {
		t.Fatalf("probes %+v", tg.Probes)
	}
	if err := tg.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	if err := tg.AddAnswerChecks("builtin"); err == nil || !strings.Contains(err.Error(), `already has a probe named "answers"`) {
		t.Errorf("twice: %v", err)
	}
	tg.Probes = tg.Probes[:1]
	if err := tg.AddAnswerChecks(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") || len(tg.Probes) != 1 {
		t.Errorf("missing file: %v (probes %d)", err, len(tg.Probes))
	}
}

// TestDocsStateAnswerChecksBounds holds docs/configuration.md's
// answer_checks row to the constants.
func TestDocsStateAnswerChecksBounds(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "| `answer_checks` |") {
			row = l
		}
	}
	for _, want := range []string{
		"defaults to `" + dur(DefaultAnswerCheckEvery) + "`",
		"between `" + dur(MinAnswerCheckEvery) + "` and `" + dur(MaxAnswerCheckEvery) + "`",
		"`" + answer.BuiltinName + "`",
		"at most 1 MiB and 256 checks",
		"`" + AnswerProbeName + "`",
	} {
		if !strings.Contains(row, want) {
			t.Errorf("docs/configuration.md's answer_checks row lacks %q:\n%s", want, row)
		}
	}
	if answer.MaxSetBytes != 1<<20 || answer.MaxChecks != 256 {
		t.Errorf("bounds changed: update the row")
	}
}

// TestAnswerChecksString: the config view writes an answer-check probe
// without the workload keys it refuses, and reads back to the same probes.
func TestAnswerChecksString(t *testing.T) {
	c, err := Load("testdata/answers/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	s := c.String()
	if !strings.Contains(s, "- name: answers\n          answer_checks:\n            set: builtin\n            every: 5m0s\n") ||
		!strings.Contains(s, "- name: default\n          rate: 1\n") {
		t.Errorf("config view:\n%s", s)
	}
	back, err := Parse([]byte(s), "view.yml")
	if err != nil {
		t.Fatalf("the view does not load again: %v", err)
	}
	for i, p := range back.Targets[0].Probes {
		if p.RestartKey() != c.Targets[0].Probes[i].RestartKey() {
			t.Errorf("probe %s differs after a round trip", p.Name)
		}
	}
}
