package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestCmpText: a value and its threshold never read equal when they
// differ, nor in the wrong order.
func TestCmpText(t *testing.T) {
	f := func(v, th float64, wantV, wantTh string) {
		t.Helper()
		gv, gth := cmpText(v, th)
		if gv != wantV || gth != wantTh {
			t.Errorf("cmpText(%v, %v) = %s, %s; want %s, %s", v, th, gv, gth, wantV, wantTh)
		}
	}
	f(35.0129, 35, "35.01", "35")
	f(34.99, 35, "34.99", "35")
	f(910, 800, "910", "800")
	f(35, 35, "35", "35")
	f(35.00004, 35, "35.00004", "35")
	f(12.34, 50, "12.3", "50")
}

// TestWhyFailsDigits: a step's failing SLO line never reads "35 ms > 35 ms".
func TestWhyFailsDigits(t *testing.T) {
	st := &sweep.Step{Validity: sweep.Validity{Valid: true}}
	st.Stats.SLOChecks = []sweep.SLOCheck{{Metric: "tpot", ThresholdMS: 35, P99MS: 35.0129}}
	got := strings.Join(whyFails(st), "; ")
	if !strings.Contains(got, "TPOT p99 35.01 ms > 35 ms") {
		t.Errorf("whyFails = %q", got)
	}
}
