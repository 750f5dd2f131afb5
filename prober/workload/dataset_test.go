package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDatasetGood(t *testing.T) {
	f := func(name, body, format string, entries, skipped int, messages bool) *workload.Dataset {
		t.Helper()
		p := writeFile(t, name, body)
		ds, err := workload.LoadDataset(p, workload.DatasetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ds.Format != format || len(ds.Entries) != entries || ds.Skipped != skipped || ds.HasMessages != messages {
			t.Fatalf("%s: format %s entries %d skipped %d messages %v, want %s %d %d %v",
				name, ds.Format, len(ds.Entries), ds.Skipped, ds.HasMessages, format, entries, skipped, messages)
		}
		if len(ds.SHA256) != 64 || ds.Bytes != int64(len(body)) {
			t.Fatalf("%s: sha %q bytes %d", name, ds.SHA256, ds.Bytes)
		}
		return ds
	}
	ds := f("a.jsonl", "{\"prompt\": \"hello there\", \"max_tokens\": 5}\n\n{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, "+
		"{\"role\": \"user\", \"content\": \"hi\"}], \"output_tokens\": 7, \"id\": \"x\"}\n", workload.FormatJSONL, 2, 0, true)
	if ds.Entries[0].OutputTokens != 5 || ds.Entries[1].OutputTokens != 7 || ds.Entries[1].Text() != "be brief\nhi" ||
		!strings.HasSuffix(ds.Entries[1].Where, "a.jsonl:3") {
		t.Fatalf("entries %+v", ds.Entries)
	}
	ds = f("s.json", `[{"id": "1", "conversations": [{"from": "human", "value": "what is up"}, {"from": "gpt", "value": "the sky"}]},
		{"conversations": [{"from": "human", "value": "only one turn"}]},
		{"conversations": [{"from": "system", "value": "sys"}, {"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]},
		{"conversations": [{"from": "gpt", "value": "no human"}, {"from": "gpt", "value": "still none"}]},
		{"other": 1}]`, workload.FormatShareGPT, 2, 3, false)
	if ds.Entries[1].Prompt != "q" || ds.Entries[1].Reply != "a" || ds.MissingOutput != 0 {
		t.Fatalf("entries %+v", ds.Entries)
	}
	ds = f("t.jsonl", "{\"prompt\": \"a b\", \"offset_ms\": 0}\n{\"prompt\": \"c\", \"offset_ms\": 12.5}\n", workload.FormatJSONL, 2, 0, false)
	if !ds.Timed || ds.Entries[1].Offset.Milliseconds() != 12 || ds.MissingOutput != 2 {
		t.Fatalf("timed %v offset %s missing %d", ds.Timed, ds.Entries[1].Offset, ds.MissingOutput)
	}
}

// TestLoadDatasetBroken pins each broken input to its message: the file and
// line (JSONL) or entry (ShareGPT), and the field.
func TestLoadDatasetBroken(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"x.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n", "x.jsonl:2: prompt: must be a string, got number"},
		{"x.jsonl", "{\"prompt\": \"ok\"}\n\n{\"prompt\": \"a\", \"messages\": []}\n", "x.jsonl:3: give prompt or messages, not both"},
		{"x.jsonl", "{\"text\": \"a\"}\n", "x.jsonl:1: prompt or messages: required"},
		{"x.jsonl", "{\"prompt\": \"  \"}\n", "x.jsonl:1: prompt: must not be empty"},
		{"x.jsonl", "{\"prompt\": \"a\"\n", "x.jsonl:1: not valid JSON"},
		{"x.jsonl", "{\"prompt\": \"a\", \"max_tokens\": 0}\n", "x.jsonl:1: max_tokens: must be an integer in [1, 1048576], got 0"},
		{"x.jsonl", "{\"prompt\": \"a\", \"max_tokens\": 2.5}\n", "x.jsonl:1: max_tokens: must be an integer"},
		{"x.jsonl", "{\"prompt\": \"a\", \"max_tokens\": 2, \"output_tokens\": 2}\n", "x.jsonl:1: give max_tokens or output_tokens, not both"},
		{"x.jsonl", "{\"messages\": [{\"role\": \"robot\", \"content\": \"a\"}]}\n", "x.jsonl:1: messages[0].role: must be system"},
		{"x.jsonl", "{\"messages\": [{\"role\": \"user\"}]}\n", "x.jsonl:1: messages[0].content: required"},
		{"x.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": 3}]}\n", "x.jsonl:1: messages[0].content: must be a string, got number"},
		{"x.jsonl", "{\"messages\": []}\n", "x.jsonl:1: messages: must not be empty"},
		{"x.jsonl", "{\"messages\": \"hi\"}\n", "x.jsonl:1: messages: must be an array"},
		{"x.jsonl", "{\"prompt\": \"a\", \"offset_ms\": -1}\n", "x.jsonl:1: offset_ms: must be a number of milliseconds"},
		{"x.jsonl", "{\"prompt\": \"a\", \"offset_ms\": 1}\n{\"prompt\": \"b\"}\n", "offset_ms: 1 of 2 entries have it"},
		{"x.jsonl", "[1]\n", "x.jsonl: entry 0: not a JSON object"},
		{"x.jsonl", "\n \n", "x.jsonl: empty file"},
		{"x.jsonl", "prompt,max_tokens\n", "cannot tell the format"},
		{"s.json", `[{"conversations": [{"from": "human", "value": 1}, {"from": "gpt", "value": "b"}]}]`,
			"s.json: entry 0: conversations[].value: must be a string, got number"},
		{"s.json", `[{"conversations": "hi"}]`, "s.json: entry 0: conversations: must be an array"},
		{"s.json", `[{"conversations": [{"from": "human", "value": "a"}, {"value": "b"}]}]`, "s.json: entry 0: conversations[1].from: required"},
		{"s.json", `[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}, 7]`, "s.json: entry 1: not a JSON object"},
		{"s.json", `[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}`, "after entry 1"},
		{"s.json", `[{"conversations": [{"from": "human", "value": "a"}]}]`, "no usable entry (1 ShareGPT entries without"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := workload.LoadDataset(writeFile(t, tc.name, tc.body), workload.DatasetOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadDatasetBounds(t *testing.T) {
	p := writeFile(t, "big.jsonl", strings.Repeat("{\"prompt\": \"a\"}\n", 10))
	if _, err := workload.LoadDataset(p, workload.DatasetOptions{MaxBytes: 50}); err == nil || !strings.Contains(err.Error(), "160 bytes, more than the 50") {
		t.Fatalf("size cap: %v", err)
	}
	if _, err := workload.LoadDataset(p, workload.DatasetOptions{MaxEntries: 3}); err == nil || !strings.Contains(err.Error(), "big.jsonl:4: more than 3 entries") {
		t.Fatalf("entry cap: %v", err)
	}
	if _, err := workload.LoadDataset(p, workload.DatasetOptions{Format: "csv"}); err == nil || !strings.Contains(err.Error(), `format: must be`) {
		t.Fatalf("format: %v", err)
	}
	if _, err := workload.LoadDataset(filepath.Join(t.TempDir(), "none.jsonl"), workload.DatasetOptions{}); err == nil {
		t.Fatal("missing file loaded")
	}
}

// wordTokenizer counts one token per word plus one (a BOS).
type wordTokenizer struct{ calls atomic.Int64 }

func (w *wordTokenizer) Count(_ context.Context, text string) (int, error) {
	w.calls.Add(1)
	return len(strings.Fields(text)) + 1, nil
}

func shareGPT(t *testing.T) *workload.Dataset {
	t.Helper()
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("w ", n)) }
	var b strings.Builder
	b.WriteString("[")
	for i, p := range []struct{ in, out int }{
		{10, 20}, {2, 20} /* rule 3 */, {10, 2} /* rule 4 */, {1100, 5} /* rule 5 */, {1000, 1100} /* rule 6 */, {10, 20}, {30, 40},
	} {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"conversations": [{"from": "human", "value": "` + words(p.in-1) + `"}, {"from": "gpt", "value": "` + words(p.out) + `"}]}`)
	}
	b.WriteString("]")
	ds, err := workload.LoadDataset(writeFile(t, "s.json", b.String()), workload.DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestShareGPTPruning checks vLLM's rules and the once-per-distinct-text
// tokenizer calls.
func TestShareGPTPruning(t *testing.T) {
	ds := shareGPT(t)
	src, err := workload.NewDatasetSource(ds, workload.Spec{Dataset: &workload.DatasetSpec{Path: ds.Path}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	tok := &wordTokenizer{}
	info, err := src.Measure(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"prompt_too_short": 1, "output_too_short": 1, "prompt_too_long": 1, "combined_too_long": 1}
	for k, v := range want {
		if info.Pruned[k] != v {
			t.Fatalf("pruned %v, want %v", info.Pruned, want)
		}
	}
	if info.Used != 3 || info.InputTokens.Max != 30 || info.OutputTokens.Max != 40 || info.OutputTokens.Min != 20 {
		t.Fatalf("info %+v", info)
	}
	// 7 prompts and 7 replies, 2 of them repeated, plus "the".
	if info.TokenizeCalls != 11 || tok.calls.Load() != 11 {
		t.Fatalf("tokenizer calls %d (%d), want 11", info.TokenizeCalls, tok.calls.Load())
	}
	if _, err := src.Measure(context.Background(), tok); err != nil || tok.calls.Load() != 11 {
		t.Fatalf("second measure: %v, %d calls", err, tok.calls.Load())
	}
}

// TestDatasetSampling checks each mode's determinism and, without
// replacement, distinct entries.
func TestDatasetSampling(t *testing.T) {
	var b strings.Builder
	for i := range 50 {
		b.WriteString(`{"prompt": "entry ` + strings.Repeat("x ", i) + `", "max_tokens": 3}` + "\n")
	}
	ds, err := workload.LoadDataset(writeFile(t, "d.jsonl", b.String()), workload.DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := func(sampling string, seed uint64, base int64, n int) []string {
		src, err := workload.NewDatasetSource(ds, workload.Spec{Dataset: &workload.DatasetSpec{Path: ds.Path, Sampling: sampling}}, seed)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := range int64(n) {
			it, err := src.At(context.Background(), &wordTokenizer{}, base+i)
			if err != nil {
				t.Fatal(err)
			}
			if it.OutputTokens != 3 || it.PromptTokens != len(strings.Fields(it.Prompt))+1 || !it.Exact() {
				t.Fatalf("item %+v", it)
			}
			out = append(out, it.Prompt)
		}
		return out
	}
	distinct := func(xs []string) int {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return len(m)
	}
	for _, s := range []string{workload.SamplingShuffle, workload.SamplingCycle} {
		a := items(s, 7, 123456789, 50)
		if distinct(a) != 50 {
			t.Fatalf("%s: %d distinct of 50", s, distinct(a))
		}
		if strings.Join(a, "|") != strings.Join(items(s, 7, 123456789, 50), "|") {
			t.Fatalf("%s: not deterministic", s)
		}
		if c := items(s, 7, 123456789, 100); c[0] != c[50] {
			t.Fatalf("%s: does not cycle", s)
		}
	}
	seq := items(workload.SamplingSequential, 7, 0, 51)
	if seq[0] != "entry " || seq[50] != seq[0] || seq[1] != "entry x " {
		t.Fatalf("sequential: %q %q %q", seq[0], seq[1], seq[50])
	}
	r1, r2 := items(workload.SamplingRandom, 7, 0, 200), items(workload.SamplingRandom, 8, 0, 200)
	if d := distinct(r1); d < 30 || d == 200 {
		t.Fatalf("random: %d distinct of 200 draws from 50", d)
	}
	if strings.Join(r1, "|") == strings.Join(r2, "|") {
		t.Fatal("random: two seeds draw the same")
	}
	// Output lengths from the workload replace the entries' own.
	src, err := workload.NewDatasetSource(ds, workload.Spec{Dataset: &workload.DatasetSpec{Path: ds.Path},
		OutputTokens: workload.Fixed(9)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if it, err := src.At(context.Background(), &wordTokenizer{}, 3); err != nil || it.OutputTokens != 9 {
		t.Fatalf("override: %+v %v", it, err)
	}
}

func TestDatasetSpecErrors(t *testing.T) {
	ds, err := workload.LoadDataset(writeFile(t, "n.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n"), workload.DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workload.NewDatasetSource(ds, workload.Spec{Dataset: &workload.DatasetSpec{Path: ds.Path}}, 1); err == nil ||
		!strings.Contains(err.Error(), "n.jsonl:1: max_tokens or output_tokens: required (2 entries") {
		t.Fatalf("missing output: %v", err)
	}
	for _, tc := range []struct {
		spec workload.Spec
		want string
	}{
		{workload.Spec{Dataset: &workload.DatasetSpec{}}, "dataset: path: required"},
		{workload.Spec{Dataset: &workload.DatasetSpec{Path: "x", Sampling: "often"}}, "dataset: sampling: must be one of"},
		{workload.Spec{Dataset: &workload.DatasetSpec{Path: "x", Format: "csv"}}, "dataset: format: must be"},
		{workload.Spec{Dataset: &workload.DatasetSpec{Path: "x"}, InputTokens: workload.Fixed(3)}, "input_tokens: does not apply with dataset"},
		{workload.Spec{Dataset: &workload.DatasetSpec{Path: "x"}, PrefixTokens: 3}, "prefix_tokens: does not apply with dataset"},
	} {
		if err := tc.spec.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// TestDatasetAgainstSimulator measures a messages entry with the
// simulator's /tokenize (chat) and checks it against the server's
// usage.prompt_tokens for the same conversation.
func TestDatasetAgainstSimulator(t *testing.T) {
	base, _ := simtest.Start(t, simulator.DefaultConfig())
	model := simulator.DefaultConfig().Model
	ds, err := workload.LoadDataset(writeFile(t, "m.jsonl",
		`{"messages": [{"role": "system", "content": "you are terse"}, {"role": "user", "content": "name three colours"}], "max_tokens": 1}`+"\n"),
		workload.DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{BaseURL: base, Model: model, Chat: true})
	if err != nil {
		t.Fatal(err)
	}
	src, err := workload.NewDatasetSource(ds, workload.Spec{Dataset: &workload.DatasetSpec{Path: ds.Path}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	it, err := src.At(context.Background(), tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(it.ChatMessages()) != 2 {
		t.Fatalf("messages %+v", it.ChatMessages())
	}
	got := promptTokensOf(t, base+"/v1/chat/completions", map[string]any{"model": model, "max_tokens": 1, "messages": it.ChatMessages()})
	if got != it.PromptTokens {
		t.Fatalf("measured %d prompt tokens, the server reports %d", it.PromptTokens, got)
	}
}

// promptTokensOf posts req to url (max_tokens 1, not streamed) and returns
// the server's usage.prompt_tokens.
func promptTokensOf(t *testing.T, url string, req map[string]any) int {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d, %v", resp.StatusCode, err)
	}
	return out.Usage.PromptTokens
}

// TestDatasetSpecWithOtherKeys: request features are checked with a dataset
// too, and multi_turn is refused beside it.
func TestDatasetSpecWithOtherKeys(t *testing.T) {
	ds := &workload.DatasetSpec{Path: "d.jsonl"}
	bad := workload.Spec{Dataset: ds, Request: &workload.Request{Features: []workload.RequestFeature{{Kind: "nope", Share: 0.5}}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "request") {
		t.Errorf("bad request features with a dataset: %v, want an error naming request", err)
	}
	mt := workload.Spec{Dataset: ds, MultiTurn: &workload.MultiTurn{}}
	if err := mt.Validate(); err == nil || !strings.Contains(err.Error(), "multi_turn") {
		t.Errorf("multi_turn with a dataset: %v, want an error naming multi_turn", err)
	}
}
