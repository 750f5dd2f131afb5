package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestTableBackgroundKnee: a background sweep's table states its knee in
// total requests/s with the production beside it; an isolated one does not.
func TestTableBackgroundKnee(t *testing.T) {
	res := &sweep.Result{KneeUnit: "req/s", Complete: true, Knee: sweep.Knee{Found: true, Level: 14.5, Low: 14.5, Upper: 17},
		SweepMode: sweep.SweepBackground, Background: &sweep.BackgroundKnee{Decided: true, KneeTotal: 22.5, ProductionAtKnee: 8, ProductionShare: 8 / 22.5}}
	out := tableText(t, res)
	checkText(t, "table", out, out, []string{"total knee (background sweep): 22.5 req/s of server load, production 8 req/s of it (35.6%)"}, nil)
	res.Background, res.SweepMode = nil, ""
	if out := tableText(t, res); strings.Contains(out, "total knee") {
		t.Errorf("isolated table names a total knee:\n%s", out)
	}
}
