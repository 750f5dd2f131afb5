package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
)

// maxDecodeAlloc bounds what DecodeResult may allocate for an input of n
// bytes: the input's own copies, and every object in it costing in
// proportion to its bytes (the worst is a list of empty objects decoded
// into a struct, [{},{},...] of throughput-probe levels: some 200 bytes per
// input byte), never a count, a list or a percentile multiplying another.
func maxDecodeAlloc(n int) uint64 { return 512*uint64(n) + 4<<20 }

// FuzzDecodeResult fuzzes DecodeResult, the reader of result.json files
// (report, compare and the sweep daemon read them from run directories: an
// untrusted input, hand-edited, truncated or from elsewhere). It holds:
//   - no panic, whatever the input, and an error returns no Result;
//   - what it allocates is at most maxDecodeAlloc of the input's size;
//   - a Result it decodes encodes again, and that encoding decodes and
//     encodes to the same bytes (the codec's tables read what they write).
//
// Seeds: the result.json of a Result with no optional key and of the
// hand-built one of TestDecodeResultHandBuilt, a step of vLLM's keys only,
// a schema 1 knee; testdata/fuzz/FuzzDecodeResult holds the inputs the
// fuzzer found. The larger documents (every key set, the real sweeps of
// internal/report's testdata: 15-40 KB, which make the fuzzer spend its
// time minimising) are checked as plain tests in
// TestResultFixturesHoldFuzzInvariants.
func FuzzDecodeResult(f *testing.F) {
	for _, r := range []*Result{leanResult(), handBuiltResult()} {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"llmprobe_result_schema":2,"percentiles":[75],"steps":[{` + vllmStep + `,"p75_ttft_ms":3,"mode":"open"}]}`))
	f.Add([]byte(`{"llmprobe_result_schema": 1, "knee": {"found": false, "level": 2}}`))
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeResult(t, b) })
}

// vllmStep is a step's vLLM keys (vllmStepKeys): the label "rate=1", every
// other value 1.
var vllmStep = func() string {
	kv := []string{`"label":"rate=1"`}
	for _, k := range vllmStepKeys[1:] {
		kv = append(kv, fmt.Sprintf("%q:1", k))
	}
	return strings.Join(kv, ",")
}()

// TestResultFixturesHoldFuzzInvariants runs FuzzDecodeResult's checks on
// the result.json of a Result with every key set and on the real sweeps
// of internal/report's testdata.
func TestResultFixturesHoldFuzzInvariants(t *testing.T) {
	full, err := json.Marshal(fullResult())
	if err != nil {
		t.Fatal(err)
	}
	checkDecodeResult(t, full)
	files, _ := filepath.Glob("../../internal/report/testdata/runs/*/result.json")
	if len(files) == 0 {
		t.Fatal("no result.json under internal/report/testdata")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeResult(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		checkDecodeResult(t, b)
	}
}

func checkDecodeResult(t *testing.T, b []byte) {
	t.Helper()
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(allocs)
	before := allocs[0].Value.Uint64()
	res, err := DecodeResult(bytes.NewReader(b))
	metrics.Read(allocs)
	if n := allocs[0].Value.Uint64() - before; n > maxDecodeAlloc(len(b)) {
		t.Fatalf("DecodeResult of %d bytes allocated %d bytes, over %d", len(b), n, maxDecodeAlloc(len(b)))
	}
	if err != nil {
		if res != nil {
			t.Fatalf("DecodeResult returned a Result and the error %v", err)
		}
		return
	}
	b1, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("the decoded Result does not encode: %v", err)
	}
	again, err := DecodeResult(bytes.NewReader(b1))
	if err != nil {
		t.Fatalf("the decoded Result encoded does not decode: %v\n%s", err, b1)
	}
	b2, err := json.Marshal(again)
	if err != nil {
		t.Fatalf("encoding again: %v", err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("the decoded Result encoded, decoded and encoded again differs:\n%s\nwant:\n%s", b2, b1)
	}
}
