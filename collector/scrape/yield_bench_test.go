package scrape

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// BenchmarkParseSlices parses a vLLM /metrics page as NewSnapshot does and
// reports the median over parses of the longest stretch the parse runs without a scheduling point
// (between two yields, or from the last one to the end): how long a
// during-step scrape can keep a prober's only P from its sends and reads.
// Sub-benchmark "whole" is the page without yields (the parse before).
func BenchmarkParseSlices(b *testing.B) {
	raw := fixture(b, "vllm-dp2.prom")
	for _, tc := range []struct {
		name  string
		every int
	}{{"yield", yieldEvery}, {"whole", len(raw)}} {
		b.Run(tc.name, func(b *testing.B) {
			var per []time.Duration
			for b.Loop() {
				var longest time.Duration
				last := time.Now()
				y := &yieldReader{r: bytes.NewReader(raw), yield: func() {
					now := time.Now()
					longest = max(longest, now.Sub(last))
					last = now
				}}
				var rd interface{ Read([]byte) (int, error) } = y
				if tc.every != yieldEvery {
					rd = bytes.NewReader(raw)
				}
				p := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := p.TextToMetricFamilies(rd); err != nil {
					b.Fatal(err)
				}
				per = append(per, max(longest, time.Since(last)))
			}
			slices.Sort(per)
			b.ReportMetric(float64(per[len(per)/2].Microseconds()), "longest-slice-µs(median)")
		})
	}
}
