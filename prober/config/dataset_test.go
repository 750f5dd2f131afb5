package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeDataset loads a probe's workload.dataset relative to the config
// file and pins each refusal to its message: the config's file and line,
// the field, and the dataset's own file and line.
func TestProbeDataset(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good.jsonl", "{\"prompt\": \"a b c\", \"max_tokens\": 3}\n")
	write("bad.jsonl", "{\"prompt\": \"a b c\", \"max_tokens\": 3}\n{\"prompt\": 1}\n")
	write("msgs.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 3}\n")
	write("noout.jsonl", "{\"prompt\": \"a\"}\n")
	cfgFile := filepath.Join(dir, "c.yml")
	probe := func(workload string) string {
		return "targets:\n- name: t\n  base_url: http://127.0.0.1:1\n  probes:\n  - name: p\n    rate: 1\n    workload: " + workload + "\n"
	}
	c, err := Parse([]byte(probe("{dataset: {path: good.jsonl, sampling: cycle}}")), cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Targets[0].Probes[0]
	if d := p.Workload.Dataset; d.Path != filepath.Join(dir, "good.jsonl") || len(d.SHA256) != 64 || p.Dataset() == nil ||
		p.Workload.InputTokens.Dist != "" {
		t.Fatalf("dataset %+v, loaded %v, input %+v", d, p.Dataset() != nil, p.Workload.InputTokens)
	}
	for _, tc := range []struct{ workload, want string }{
		{"{dataset: {path: bad.jsonl}}", cfgFile + ":7: targets[0].probes[0].workload.dataset: " + filepath.Join(dir, "bad.jsonl") + ":2: prompt: must be a string, got number"},
		{"{dataset: {path: msgs.jsonl}}", "workload.dataset: " + filepath.Join(dir, "msgs.jsonl") + " has messages entries (chat conversations): they need api: chat or messages"},
		{"{dataset: {path: noout.jsonl}}", "workload.dataset: " + filepath.Join(dir, "noout.jsonl") + ":1: max_tokens or output_tokens: required"},
		{"{dataset: {path: good.jsonl, sampling: shuffle}}", "workload.dataset: sampling shuffle (without replacement) ends when the entries do"},
		{"{dataset: {path: good.jsonl, sampling: often}}", "workload.dataset: sampling: must be one of"},
		{"{dataset: {path: good.jsonl}, input_tokens: {dist: fixed, value: 3}}", "workload.input_tokens: does not apply with dataset"},
		{"{dataset: {path: missing.jsonl}}", "workload.dataset: open " + filepath.Join(dir, "missing.jsonl")},
		{"{dataset: {path: good.jsonl, sha256: abc}}", "targets[0].probes[0].workload.dataset.sha256: unknown key"},
	} {
		_, err := Parse([]byte(probe(tc.workload)), cfgFile)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.workload, err, tc.want)
		}
	}
}
