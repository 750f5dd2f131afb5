package compare

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
)

// FuzzDecode feeds Decode what analyze may be given (it reads untrusted
// files): it must never panic, must refuse with one line wrapping
// ErrNotResult, and what it accepts must go through the single-input check
// and a comparison with itself into JSON (analyze --format json).
func FuzzDecode(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed corpus in testdata: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"llmprobe_result_schema": 1, "steps": []}`))
	f.Add([]byte("{\"date\": \"20250101-000000\", \"completed\": 3, \"duration\": 1}\n{\"date\": \"20250101-000001\", \"completed\": 2, \"duration\": 1}\n"))
	f.Add([]byte(`{"completed": 2, "failed": 1, "request_throughput": 1.5, "percentiles_ttft_ms": [[99, 12]], "slo_ms": {"ttft": 10}}`))
	ths, err := ParseThresholds(DefaultThresholds + ",throughput=5%,cost=5%")
	if err != nil {
		f.Fatal(err)
	}
	s := slo.SLO{TTFT: 800 * time.Millisecond, TPOT: 50 * time.Millisecond}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Decode("fuzz.json", b)
		if err != nil {
			if ev != nil || !errors.Is(err, ErrNotResult) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("refusal %q (evidence %v): want one line wrapping ErrNotResult and no evidence", err, ev != nil)
			}
			return
		}
		if ev == nil {
			t.Fatal("nil evidence without an error")
		}
		c := CheckSLO(ev, s)
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("check does not encode: %v", err)
		}
		v := Compare(ev, ev, Options{Thresholds: ths, SLO: s, Iters: 100})
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("verdict does not encode: %v", err)
		}
		if v.Outcome == OutcomeFail {
			t.Fatalf("evidence compared with itself fails: %v", v.Reasons)
		}
	})
}
