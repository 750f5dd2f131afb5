package daemon

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// TestPoolingProbes probes the simulator's pooling endpoints from the
// daemon: a target with api embeddings (batch_size 4) and an E2E SLO
// exports E2E histograms and counts its good requests, and never a TTFT;
// a rerank target against a simulator whose answers leave a result out
// (--fault.wrong-count 1) counts every request invalid_response.
func TestPoolingProbes(t *testing.T) {
	good, _ := simtest.Start(t, simulator.DefaultConfig())
	bc := simulator.DefaultConfig()
	bc.Faults.WrongCount = 1
	broken, _ := simtest.Start(t, bc)
	o, url, logs := options(t)
	probe := "    probes:\n      - name: p\n        rate: 20\n        workload: {input_tokens: {dist: fixed, value: 16}}\n"
	yml := fmt.Sprintf("targets:\n  - name: emb\n    base_url: %s\n    api: embeddings\n    batch_size: 4\n    slo: {e2el: 30s}\n%s"+
		"  - name: rr\n    base_url: %s\n    api: rerank\n    batch_size: 3\n%s", good, probe, broken, probe)
	setConfig(t, &o, t.TempDir(), yml)
	start(t, o)
	count := regexp.MustCompile(`llmprobe_e2e_request_latency_seconds_count\{probe="p",target="emb"\} (\d+)`)
	var body string
	invalid := regexp.MustCompile(`llmprobe_requests_total\{outcome="invalid_response",probe="p",target="rr"\} (\d+)`)
	testutil.Eventually(t, "five E2E observations of the embeddings target, three invalid rerank answers", func() bool {
		body = get(t, url+"/metrics", `llmprobe_requests_total{outcome="invalid_response",probe="p",target="rr"}`, logs)
		m, i := count.FindStringSubmatch(body), invalid.FindStringSubmatch(body)
		if m == nil || i == nil {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		k, _ := strconv.Atoi(i[1])
		return n >= 5 && k >= 3
	})
	goodN := regexp.MustCompile(`llmprobe_good_requests_total\{probe="p",target="emb"\} (\d+)`).FindStringSubmatch(body)
	if goodN == nil || goodN[1] == "0" {
		t.Errorf("no good requests of the embeddings target under e2el 30s:\n%s", body)
	}
	if regexp.MustCompile(`llmprobe_time_to_first_token_seconds_count\{probe="p",target="emb"\} [1-9]`).MatchString(body) {
		t.Errorf("a TTFT observed for the non-streamed embeddings target")
	}
	if regexp.MustCompile(`llmprobe_requests_total\{outcome="success",probe="p",target="rr"\} [1-9]`).MatchString(body) {
		t.Errorf("a success counted for the rerank target whose answers lack a result:\n%s", body)
	}
}
