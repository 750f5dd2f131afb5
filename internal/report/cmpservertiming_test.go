package report

import (
	"bytes"
	"testing"

	"github.com/llmprobe/llmprobe/prober/compare"
)

// TestServerTimingText: each side's split with n, or not-recorded with
// the reason, in the text and the markdown of a verdict.
func TestServerTimingText(t *testing.T) {
	p := func(a, b float64) *compare.SplitPart { return &compare.SplitPart{P50: a, P99: b} }
	ss := []compare.ServerTiming{{Level: "rate=4",
		Baseline:  compare.ServerTimingSide{N: 40, ClientTTFT: p(12, 30), Queue: p(1, 4), ServerTTFT: p(10, 24), Overhead: p(1, 2)},
		Candidate: compare.ServerTimingSide{NotRecorded: "engine sglang returns no per-request timing"}}}
	var b bytes.Buffer
	writeServerTimingText(&b, ss)
	checkText(t, "text", b.String(), b.String(), []string{
		"baseline  TTFT 12.0/30.0 = queue 1.00/4.00 + server TTFT 10.0/24.0 + overhead 1.00/2.00 ms p50/p99 (n 40)",
		"candidate not-recorded (engine sglang returns no per-request timing)",
	}, nil)
	b.Reset()
	writeServerTimingMarkdown(&b, ss)
	checkText(t, "markdown", b.String(), b.String(), []string{"| rate=4 | baseline | 40 | 12.0 / 30.0 | 1.00 / 4.00 | 10.0 / 24.0 | 1.00 / 2.00 |",
		"| rate=4 | candidate | 0 | not-recorded: engine sglang"}, nil)
	b.Reset()
	writeServerTimingText(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no split, text %q", b.String())
	}
}
