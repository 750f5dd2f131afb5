package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestDetailedFailedRequestsWriteZero sweeps a simulator that fails some
// requests with HTTP 500 and cuts some streams after half their tokens,
// with --save-detailed: in each step's vLLM-form file a failed request has
// ttft, latency and output_len 0 (as vllm bench serve writes them) and its
// error text, although records.jsonl holds a non-zero e2e for it (and, for a
// cut stream, a TTFT and tokens); a successful one has its own figures and
// an empty error.
func TestDetailedFailedRequestsWriteZero(t *testing.T) {
	url, sim := simtest.Start(t, simtest.Fast())
	sim.SetFaults(simulator.Faults{HTTP500: 0.25, CutStream: 0.25})
	cfg := testConfig(t, url)
	o := testOptions(t)
	o.SaveDetailed = true
	out := mustRun(t, cfg, o)
	verifyClean(t, out.Dir)

	// What records.jsonl says of the failed requests, so that a file that
	// copied it would differ from one that writes 0.
	type rec struct {
		Step             int    `json:"step"`
		Error            string `json:"error"`
		TTFT             int64  `json:"ttft_ns"`
		E2E              int64  `json:"e2e_ns"`
		CompletionTokens int    `json:"completion_tokens"`
	}
	f, err := os.Open(filepath.Join(out.Dir, artifacts.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var failedE2E, failedTTFT, failedTokens int
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Error == "" {
			continue
		}
		if r.E2E > 0 {
			failedE2E++
		}
		if r.TTFT > 0 {
			failedTTFT++
		}
		if r.CompletionTokens > 0 {
			failedTokens++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if failedE2E == 0 || failedTTFT == 0 || failedTokens == 0 {
		t.Fatalf("records.jsonl: failed requests with e2e %d, ttft %d, tokens %d: want each > 0, or the test shows nothing",
			failedE2E, failedTTFT, failedTokens)
	}

	failed, kinds := 0, map[string]int{}
	for _, st := range out.Result.Steps {
		b := mustRead(t, filepath.Join(out.Dir, filepath.FromSlash(VLLMFileName(out.Result, st))))
		var v struct {
			Failed     int       `json:"failed"`
			InputLens  []int     `json:"input_lens"`
			OutputLens []int     `json:"output_lens"`
			TTFTs      []float64 `json:"ttfts"`
			Latencies  []float64 `json:"latencies"`
			Errors     []string  `json:"errors"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		n := st.Stats.Requests
		if len(v.OutputLens) != n || len(v.TTFTs) != n || len(v.Latencies) != n || len(v.Errors) != n || len(v.InputLens) != n {
			t.Fatalf("step %d: arrays of %d, %d, %d, %d, %d entries, want %d", st.Index,
				len(v.InputLens), len(v.OutputLens), len(v.TTFTs), len(v.Latencies), len(v.Errors), n)
		}
		nonEmpty := n - countEmpty(v.Errors)
		if nonEmpty != st.Stats.Failed || v.Failed != st.Stats.Failed {
			t.Errorf("step %d: %d errors, failed %d, want %d", st.Index, nonEmpty, v.Failed, st.Stats.Failed)
		}
		for i, e := range v.Errors {
			if e == "" {
				if v.TTFTs[i] <= 0 || v.Latencies[i] <= 0 || v.OutputLens[i] != 4 {
					t.Errorf("step %d request %d (ok): ttft %v latency %v output_len %d, want > 0, > 0, 4",
						st.Index, i, v.TTFTs[i], v.Latencies[i], v.OutputLens[i])
				}
				continue
			}
			failed++
			switch {
			case strings.HasPrefix(e, "http_5xx: HTTP 500 "):
				kinds["http_5xx"]++
			case strings.HasPrefix(e, "stream: stream ended before [DONE]"):
				kinds["stream"]++
			default:
				t.Errorf("step %d request %d: error %q, want the class and message of an HTTP 500 or a cut stream", st.Index, i, e)
			}
			if v.TTFTs[i] != 0 || v.Latencies[i] != 0 || v.OutputLens[i] != 0 {
				t.Errorf("step %d request %d (failed: %s): ttft %v latency %v output_len %d, want 0, 0, 0 as vLLM writes",
					st.Index, i, e, v.TTFTs[i], v.Latencies[i], v.OutputLens[i])
			}
			if v.InputLens[i] <= 0 {
				t.Errorf("step %d request %d (failed): input_len %d, want the prompt's length", st.Index, i, v.InputLens[i])
			}
		}
	}
	if failed == 0 || kinds["http_5xx"] == 0 || kinds["stream"] == 0 {
		t.Fatalf("failed requests in the vLLM files: %d, by kind %v: want both kinds", failed, kinds)
	}
}

func countEmpty(s []string) int {
	n := 0
	for _, x := range s {
		if x == "" {
			n++
		}
	}
	return n
}
