package workload_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// numbered writes a JSONL dataset of n distinct prompts "entry I ...".
func numbered(t *testing.T, n int) *workload.Dataset {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"prompt\": \"entry %d here\", \"max_tokens\": 3}\n", i)
	}
	ds, err := workload.LoadDataset(writeFile(t, "n.jsonl", b.String()), workload.DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func intp(n int) *int { return &n }

// TestDatasetSubset: MaxEntries bounds what is measured (one tokenizer call
// per entry of the subset, none for the rest) and sampled from; random and
// shuffle take a seeded subset, sequential and cycle the first N in file
// order; 0 and a bound above the file's size take every entry.
func TestDatasetSubset(t *testing.T) {
	ds := numbered(t, 200)
	ctx := context.Background()
	measure := func(sampling string, maxEntries *int, seed uint64) (*workload.DatasetSource, workload.DatasetInfo, *wordTokenizer) {
		t.Helper()
		src, err := workload.NewDatasetSource(ds, workload.Spec{Dataset: &workload.DatasetSpec{Path: ds.Path, Sampling: sampling,
			MaxEntries: maxEntries}}, seed)
		if err != nil {
			t.Fatal(err)
		}
		tok := &wordTokenizer{}
		info, err := src.Measure(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		return src, info, tok
	}
	sourceOf := func(sampling string, maxEntries *int, seed uint64) *workload.DatasetSource {
		t.Helper()
		src, _, _ := measure(sampling, maxEntries, seed)
		return src
	}
	prompts := func(src *workload.DatasetSource, n int) []string {
		t.Helper()
		var out []string
		for i := range int64(n) {
			it, err := src.At(ctx, &wordTokenizer{}, i)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, it.Prompt)
		}
		return out
	}
	distinctSorted := func(xs []string) []string {
		s := slices.Clone(xs)
		slices.Sort(s)
		return slices.Compact(s)
	}

	src, info, tok := measure(workload.SamplingShuffle, intp(20), 7)
	if info.Entries != 200 || info.Sampled != 20 || info.Used != 20 || info.MaxEntries != 20 || info.TokenizeCalls != 20 || tok.calls.Load() != 20 {
		t.Fatalf("shuffle subset of 20: info %+v, %d calls", info, tok.calls.Load())
	}
	sub := distinctSorted(prompts(src, 20))
	if len(sub) != 20 {
		t.Fatalf("shuffle: %d distinct in 20 items of a 20-entry subset", len(sub))
	}
	if again := distinctSorted(prompts(src, 60)); !slices.Equal(again, sub) {
		t.Fatalf("cycling past the subset left it: %v vs %v", again, sub)
	}
	if first := distinctSorted(prompts(sourceOf(workload.SamplingShuffle, intp(20), 7), 20)); !slices.Equal(first, sub) {
		t.Fatal("the same seed chose another subset")
	}
	other := distinctSorted(prompts(sourceOf(workload.SamplingShuffle, intp(20), 8), 20))
	if slices.Equal(other, sub) {
		t.Fatal("two seeds chose the same subset")
	}
	if slices.Equal(sub, firstPrompts(20)) {
		t.Fatal("the seeded subset is the file's first 20 entries")
	}
	rsrc, _, _ := measure(workload.SamplingRandom, intp(20), 7)
	if r := distinctSorted(prompts(rsrc, 300)); len(r) != 20 || !slices.Equal(r, sub) {
		t.Fatalf("random draws from another subset than shuffle with the same seed: %d distinct", len(r))
	}

	for _, s := range []string{workload.SamplingSequential, workload.SamplingCycle} {
		src, info, _ := measure(s, intp(20), 7)
		if info.Sampled != 20 || info.Used != 20 {
			t.Fatalf("%s: info %+v", s, info)
		}
		if got := distinctSorted(prompts(src, 40)); !slices.Equal(got, firstPrompts(20)) {
			t.Fatalf("%s: the subset is not the first 20 in file order: %v", s, got)
		}
	}
	seq, _, _ := measure(workload.SamplingSequential, intp(20), 7)
	if p := prompts(seq, 21); p[0] != "entry 0 here" || p[19] != "entry 19 here" || p[20] != p[0] {
		t.Fatalf("sequential over the subset: %q %q %q", p[0], p[19], p[20])
	}

	for _, m := range []*int{intp(0), intp(500), nil} {
		_, info, tok := measure(workload.SamplingRandom, m, 7)
		if info.Sampled != 200 || info.Used != 200 || tok.calls.Load() != 200 {
			t.Fatalf("max_entries %v: info %+v, %d calls", m, info, tok.calls.Load())
		}
	}
}

func firstPrompts(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("entry %d here", i))
	}
	slices.Sort(out)
	return out
}

// TestDatasetSubsetPruning: ShareGPT's pruning applies to the subset; the
// info counts pruned entries within it and Used is what is left.
func TestDatasetSubsetPruning(t *testing.T) {
	ds := shareGPT(t) // 7 entries, 4 pruned by vLLM's rules
	src, err := workload.NewDatasetSource(ds, workload.Spec{Dataset: &workload.DatasetSpec{Path: ds.Path,
		Sampling: workload.SamplingSequential, MaxEntries: intp(3)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	info, err := src.Measure(context.Background(), &wordTokenizer{})
	if err != nil {
		t.Fatal(err)
	}
	// The first three: {10,20} kept, {2,20} prompt too short, {10,2} output too short.
	if info.Entries != 7 || info.Sampled != 3 || info.Used != 1 || info.Pruned["prompt_too_short"] != 1 ||
		info.Pruned["output_too_short"] != 1 || len(info.Pruned) != 2 {
		t.Fatalf("info %+v", info)
	}
}

// TestDatasetSpecMaxEntries pins the canonical form the workload's hash
// uses and the bound's validation.
func TestDatasetSpecMaxEntries(t *testing.T) {
	f := func(m *int, n int, want *int) {
		t.Helper()
		got := workload.DatasetSpec{Path: "d", MaxEntries: m}.ForEntries(n).MaxEntries
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("ForEntries(%v, %d) = %v, want %v", m, n, got, want)
		}
	}
	f(nil, 500, nil)
	f(intp(0), 500, nil)
	f(intp(9000), 500, nil)
	f(intp(100), 500, intp(100))
	f(nil, 90_000, intp(workload.DefaultDatasetMaxEntries))
	f(intp(10_000), 90_000, intp(10_000))
	f(intp(0), 90_000, intp(0))
	f(intp(100_000), 90_000, intp(0))
	for _, bad := range []int{-1, workload.MaxDatasetEntries + 1} {
		err := workload.Spec{Dataset: &workload.DatasetSpec{Path: "x", MaxEntries: intp(bad)}}.Validate()
		if err == nil || !strings.Contains(err.Error(), "dataset: max_entries: must be 0 (every entry) to 200000") {
			t.Errorf("max_entries %d: %v", bad, err)
		}
	}
}

// TestDatasetSpecMaxEntriesYAML: max_entries is a key of workload.dataset
// (the daemon's probes and --workload files); absent is the default, 0 is
// every entry.
func TestDatasetSpecMaxEntriesYAML(t *testing.T) {
	f := func(src string, want int) {
		t.Helper()
		var s workload.Spec
		dec := yaml.NewDecoder(strings.NewReader(src))
		dec.KnownFields(true)
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := s.Dataset.MaxEntriesOrDefault(); got != want {
			t.Errorf("%s: max entries %d, want %d", src, got, want)
		}
	}
	f("dataset: {path: d.jsonl}\n", workload.DefaultDatasetMaxEntries)
	f("dataset: {path: d.jsonl, max_entries: 0}\n", 0)
	f("dataset: {path: d.jsonl, max_entries: 500}\n", 500)
}
