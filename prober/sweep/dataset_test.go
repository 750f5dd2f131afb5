package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// countTokenize returns the number of POST /tokenize the recorder passed on.
func countTokenize(rec *simtest.Recorder) int {
	n := 0
	for _, e := range rec.Exchanges() {
		if strings.HasSuffix(e.Path, "/tokenize") {
			n++
		}
	}
	return n
}

// TestSweepDatasetSubset: a sweep over a 300-entry dataset with
// max_entries 40 counts only the subset with the server's tokenizer (seen
// at the server), sends only prompts of the subset in every step, and
// records the subset in the result and the fingerprint; the workload's hash
// differs from the whole file's.
func TestSweepDatasetSubset(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "{\"prompt\": \"entry %d of the file\", \"max_tokens\": 3}\n", i)
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := simtest.Start(t, simtest.Fast())
	rec := simtest.Record(t, base)
	cfg := testConfig(t, rec.URL)
	forty := 40
	cfg.Workload = workload.Spec{Dataset: &workload.DatasetSpec{Path: path, Sampling: workload.SamplingShuffle, MaxEntries: &forty}}
	cfg.WorkloadSource = path
	cfg.Rates, cfg.RatesText, cfg.NumPrompts, cfg.Warmups = []float64{40, 80}, "40,80", 30, 1
	p, err := Prepare(context.Background(), cfg, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n := countTokenize(rec); n < 40 || n > 45 {
		t.Fatalf("the server answered %d /tokenize before the first step; want the subset's 40 (and the sizing's few)", n)
	}
	fp := p.Fingerprint()
	if d := fp.Workload.Dataset; d == nil || d.Entries != 300 || d.Sampled != 40 || d.Used != 40 || d.MaxEntries != 40 {
		t.Fatalf("fingerprint dataset %+v", d)
	}
	if !strings.Contains(string(fp.Workload.Spec), `"max_entries":40`) {
		t.Errorf("the workload's spec does not hold the subset: %s", fp.Workload.Spec)
	}
	res, err := p.Run(context.Background(), &memSink{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Dataset; d.Sampled != 40 || d.Entries != 300 || d.TokenizeCalls != 40 {
		t.Fatalf("result dataset %+v", d)
	}
	prompts := map[string]bool{}
	perStep := 0
	for _, e := range rec.Exchanges() {
		if !strings.HasSuffix(e.Path, "/completions") {
			continue
		}
		var body struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal(e.Request, &body); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(body.Prompt, "entry ") {
			prompts[body.Prompt] = true
			perStep++
		}
	}
	if perStep < 60 || len(prompts) > 40 {
		t.Fatalf("%d dataset requests drew %d distinct prompts; want >= 60 drawn from the 40 of the subset", perStep, len(prompts))
	}

	// The whole file: another workload hash; a shuffle step larger than the
	// subset is refused naming both numbers.
	all := cfg
	zero := 0
	all.Workload = workload.Spec{Dataset: &workload.DatasetSpec{Path: path, Sampling: workload.SamplingShuffle, MaxEntries: &zero}}
	all.OutDir = t.TempDir()
	pa, err := Prepare(context.Background(), all, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	pa.Close()
	if pa.Fingerprint().Workload.SHA256 == fp.Workload.SHA256 {
		t.Error("the whole file and a subset of 40 hash the same")
	}
	big := cfg
	big.NumPrompts = 45
	big.OutDir = t.TempDir()
	_, err = Prepare(context.Background(), big, Options{Logger: testLogger(t)})
	if err == nil || !strings.Contains(cliText(err), "a step sends up to 46 requests (1 warmups included) but the dataset has 40 usable entries "+
		"(a subset of 40 of the file's 300 entries, --dataset-max-entries 40: raise it, or 0 for every entry)") {
		t.Fatalf("shuffle beyond the subset: %v", err)
	}
}

// writeShareGPT writes n synthetic ShareGPT conversations (a human turn and
// a reply of 5 to 120 distinct words each) to a file under dir.
func writeShareGPT(tb testing.TB, dir string, n int) string {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	turn := func(i int, who string) string {
		words := make([]string, 5+rng.IntN(116))
		for k := range words {
			words[k] = fmt.Sprintf("w%d", rng.IntN(5000))
		}
		return fmt.Sprintf(`{"from": %q, "value": "%s %d %s"}`, who, who, i, strings.Join(words, " "))
	}
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": "c%d", "conversations": [%s, %s]}`, i, turn(i, "human"), turn(i, "gpt"))
	}
	b.WriteString("]\n")
	p := filepath.Join(dir, "sharegpt-synthetic.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkPrepareShareGPT90k measures what preparing a sweep over a
// 90,000-conversation ShareGPT file costs before its first request, with
// every entry measured (max_entries 0, the behaviour before max_entries) and
// with the default subset: the time of Prepare and the /tokenize calls the
// server answered (docs/workload.md). Run it once:
//
//	go test ./prober/sweep/ -run '^$' -bench PrepareShareGPT90k -benchtime 1x
func BenchmarkPrepareShareGPT90k(b *testing.B) {
	path := writeShareGPT(b, b.TempDir(), 90_000)
	start := time.Now()
	if _, err := workload.LoadDataset(path, workload.DatasetOptions{}); err != nil {
		b.Fatal(err)
	}
	load := time.Since(start).Seconds()
	base, _ := simtest.Start(b, simtest.Fast())
	for _, maxEntries := range []int{0, workload.DefaultDatasetMaxEntries} {
		b.Run(fmt.Sprintf("max_entries=%d", maxEntries), func(b *testing.B) {
			for range b.N {
				rec := simtest.Record(b, base)
				cfg := testConfig(b, rec.URL)
				m := maxEntries
				cfg.Workload = workload.Spec{Dataset: &workload.DatasetSpec{Path: path, MaxEntries: &m}}
				cfg.WorkloadSource = path
				start := time.Now()
				p, err := Prepare(context.Background(), cfg, Options{Logger: log.NewNopLogger()})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "prepare_s")
				b.ReportMetric(float64(countTokenize(rec)), "tokenize_calls")
				b.ReportMetric(float64(p.r.datasetInfo.Used), "used")
				b.ReportMetric(float64(p.r.datasetInfo.TokenizeCalls), "measure_calls")
				b.ReportMetric(load, "load_s")
				p.Close()
			}
		})
	}
}
