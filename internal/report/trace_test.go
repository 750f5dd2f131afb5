package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

func TestAnalysisTrace(t *testing.T) {
	res := ladder()
	if strings.Contains(string(Analysis(res)), "## Trace replay") {
		t.Fatal("a rate sweep has a trace section")
	}
	res.Steps = res.Steps[:2]
	for i, st := range res.Steps {
		speed := float64(i + 1)
		st.Label = "trace-speed=" + num(speed)
		tt := &sweep.TraceTiming{Source: "mooncake.jsonl", SHA256: "sha256:ab", Format: "mooncake", Speed: speed, Entries: 200, Sent: 200,
			TraceSpanS: 100, ScheduledSpanS: 100 / speed, AchievedSpanS: 100/speed + 0.01, SendLagP99MS: 0.4,
			OffsetErrorMS: sweep.OffsetError{P50: 0.2, P99: 0.9, Max: 3}, MaxRateErrorPerS: 0.1, PrefixShare: 0.45, BlockSize: 512, WindowS: 1}
		for k := range int(100/speed) + 1 {
			tt.Windows = append(tt.Windows, sweep.TraceWindow{StartS: float64(k), Trace: 2, Achieved: 2 + k%2})
		}
		st.Trace = tt
	}
	md := string(Analysis(res))
	checkText(t, "analysis.md", md, md, []string{
		"## Trace replay\n\nTrace `mooncake.jsonl` (mooncake format, sha256:ab), 512 tokens per hash id.",
		"| 0 | 1 | 200 | 200 | 100 | 100 | 100 | 0.2 / 0.9 / 3 | 0.4 | 0.1 | 45% | 42% |\n",
		"| 1 | 2 | 200 | 200 | 100 | 50 | 50 | 0.2 / 0.9 / 3 | 0.4 | 0.1 | 45% | 42% |\n",
		// 101 windows of 1 s merged 6 by 6 into 17 rows; 51 merged 3 by 3.
		"Rate over time, step 0 (trace-speed=1, windows of 6 s)",
		"| 0 | 2 | 2.5 |\n| 6 | 2 | 2.5 |\n",
		"Rate over time, step 1 (trace-speed=2, windows of 3 s)",
		"| 0 | 2 | 2.33 |\n| 3 | 2 | 2.67 |\n",
	}, nil)
	if i, j := strings.Index(md, "## Token distributions"), strings.Index(md, "## Trace replay"); i < 0 || j < i {
		t.Error("the trace section is not after the token distributions")
	}
}
