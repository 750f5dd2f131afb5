package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/workload"
)

func TestComputeStats(t *testing.T) {
	var samples []workload.Sample
	for i := range 101 {
		samples = append(samples, workload.Sample{InputTokens: i + 1, OutputTokens: 10, Offset: time.Duration(i) * 100 * time.Millisecond,
			Timed: true, SharedPrefixTokens: (i + 1) / 2})
	}
	st := workload.ComputeStats(samples)
	if st.Count != 101 || st.InputTokens.P50 != 51 || st.InputTokens.P10 != 11 || st.InputTokens.Max != 101 || st.OutputTokens.P99 != 10 {
		t.Fatalf("lengths %+v", st)
	}
	if !st.Timed || math.Abs(st.RatePerS-10) > 1e-9 || st.GapCV2 > 1e-9 || math.Abs(st.DurationS-10) > 1e-9 {
		t.Fatalf("timing %+v", st)
	}
	if math.Abs(st.PrefixShare-2550.0/5151) > 1e-9 {
		t.Fatalf("prefix share %v", st.PrefixShare)
	}
	samples[3].Timed = false
	if st := workload.ComputeStats(samples); st.Timed || st.RatePerS != 0 {
		t.Fatalf("one untimed sample: %+v", st)
	}
}

func TestSharedPrefixes(t *testing.T) {
	got := workload.SharedPrefixes([]string{
		"a b c d e f g h", // nothing earlier
		"a b c d x y",     // one block of four words shared: 4 of 6 words
		"a b c d e f g h", // the same as the first: all
		"q r s t",
	}, []int{8, 12, 8, 4})
	want := []int{0, 8, 8, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("shared %v, want %v", got, want)
		}
	}
}

// TestSynthRoundTrip draws a dataset from stats and checks that `workload
// stats` of 20,000 entries gives the quantiles back within 5% + 2 tokens, the rate
// within 10%, the gap CV² within 25% and the prefix share within 0.03.
func TestSynthRoundTrip(t *testing.T) {
	want := workload.Stats{
		Count:        20000,
		InputTokens:  workload.LengthDist{Min: 5, P10: 20, P50: 120, P90: 400, P99: 900, Max: 1500},
		OutputTokens: workload.LengthDist{Min: 1, P10: 8, P50: 60, P90: 200, P99: 450, Max: 600},
		Timed:        true, RatePerS: 20, GapCV2: 2.5, PrefixShare: 0.3,
	}
	var b bytes.Buffer
	n, err := workload.Synthesize(&b, want, workload.SynthOptions{Seed: 42})
	if err != nil || n != 20000 {
		t.Fatalf("synthesize: %d, %v", n, err)
	}
	p := filepath.Join(t.TempDir(), "synth.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := workload.LoadDataset(p, workload.DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, info, err := workload.DatasetStats(context.Background(), ds, workload.EstimateTokenizer{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != 20000 || info.Method != workload.MethodEstimate || got.Tokenizer != workload.MethodEstimate {
		t.Fatalf("count %d method %s", got.Count, info.Method)
	}
	near := func(name string, g, w, rel, abs float64) {
		t.Helper()
		if math.Abs(g-w) > rel*w+abs {
			t.Errorf("%s: got %.4g, want %.4g (±%.0f%% + %g)", name, g, w, 100*rel, abs)
		}
	}
	for _, d := range []struct {
		name      string
		got, want workload.LengthDist
	}{{"input", got.InputTokens, want.InputTokens}, {"output", got.OutputTokens, want.OutputTokens}} {
		near(d.name+" p10", d.got.P10, d.want.P10, 0.05, 2)
		near(d.name+" p50", d.got.P50, d.want.P50, 0.05, 2)
		near(d.name+" p90", d.got.P90, d.want.P90, 0.05, 2)
		near(d.name+" p99", d.got.P99, d.want.P99, 0.05, 2)
		if d.got.Max > d.want.Max {
			t.Errorf("%s max %v above the cap %v", d.name, d.got.Max, d.want.Max)
		}
	}
	if !got.Timed {
		t.Fatal("not timed")
	}
	near("rate", got.RatePerS, want.RatePerS, 0.10, 0)
	near("gap cv2", got.GapCV2, want.GapCV2, 0.25, 0)
	near("prefix share", got.PrefixShare, want.PrefixShare, 0, 0.03)
}

func TestSynthRefusesBadStats(t *testing.T) {
	for _, st := range []workload.Stats{
		{InputTokens: workload.LengthDist{Min: 0, Max: 3}},
		{InputTokens: workload.LengthDist{Min: 1, P10: 5, P50: 4, P90: 6, P99: 7, Max: 8}},
		{InputTokens: workload.LengthDist{Min: 1, P10: 1, P50: 1, P90: 1, P99: 1, Max: 1}, PrefixShare: 1},
	} {
		if _, err := workload.Synthesize(&bytes.Buffer{}, st, workload.SynthOptions{Count: 2}); err == nil {
			t.Errorf("%+v: no error", st)
		}
	}
}

// TestDecodeStats checks that the JSON of Stats reads back, and that an
// unknown key (a file that is not a stats file) is an error.
func TestDecodeStats(t *testing.T) {
	want := workload.Stats{Count: 3, InputTokens: workload.LengthDist{N: 3, Min: 1, P50: 2, Max: 3}, Timed: true, RatePerS: 2}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := workload.DecodeStats(b); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeStats = %+v, %v; want %+v", got, err, want)
	}
	if _, err := workload.DecodeStats([]byte(`{"count": 3, "prompt": "x"}`)); err == nil || !strings.Contains(err.Error(), `unknown field "prompt"`) {
		t.Errorf("unknown key: %v", err)
	}
}

// TestSniffTrace checks that the first non-empty line decides: a trace
// entry is a trace, a dataset entry, an unreadable file or an empty one is
// not.
func TestSniffTrace(t *testing.T) {
	dir := t.TempDir()
	f := func(name, content string, want bool) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := workload.SniffTrace(p); got != want {
			t.Errorf("%s: SniffTrace = %v, want %v", name, got, want)
		}
	}
	f("mooncake.jsonl", "\n  \n"+`{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}`+"\n", true)
	f("offsets.jsonl", `{"offset_ms": 0, "input_tokens": 10}`+"\n"+`{"prompt": "x"}`+"\n", true)
	f("dataset.jsonl", `{"prompt": "x", "input_tokens": 3}`+"\n", false)
	f("empty.jsonl", "", false)
	f("broken.jsonl", "{not json\n", false)
	if workload.SniffTrace(filepath.Join(dir, "missing.jsonl")) {
		t.Error("a missing file sniffed as a trace")
	}
}
