package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestTableBackgroundKnee: a background sweep's table states its knee in
// total requests/s with the production beside it; an isolated one does not.
func TestTableBackgroundKnee(t *testing.T) {
	res := &sweep.Result{KneeUnit: "req/s", Complete: true, Knee: sweep.Knee{Found: true, Level: 14.5, Low: 14.5, Upper: 17},
		SweepMode: sweep.SweepBackground, Background: &sweep.BackgroundKnee{Decided: true, KneeTotal: 22.5, ProductionAtKnee: 8, ProductionShare: 8 / 22.5}}
	var b bytes.Buffer
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	if want := "total knee (background sweep): 22.5 req/s of server load, production 8 req/s of it (35.6%)"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	res.Background, res.SweepMode = nil, ""
	b.Reset()
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "total knee") {
		t.Errorf("isolated table names a total knee:\n%s", b.String())
	}
}
