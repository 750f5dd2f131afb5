package rundir

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestSweepRecordsAttribution: a sweep with --attribution-header against
// a simulator answering x-served-by writes the header, the backend and the
// echo of the x-request-id it sent into every line of records.jsonl.
func TestSweepRecordsAttribution(t *testing.T) {
	sim := simtest.Fast()
	sim.ServedBy = "pod-z"
	url, _ := simtest.Start(t, sim)
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{20}, "20", 5
	cfg.AttributionHeaders = []string{"x-served-by"}
	out, _ := runSweep(t, cfg, "")
	n := 0
	err := artifacts.ReadRecords(filepath.Join(out.Dir, artifacts.RecordsFile), func(l artifacts.RecordLine, _ []byte) error {
		r := l.Record
		n++
		if r.Attribution["x-served-by"] != "pod-z" || r.Backend != "pod-z" || r.RequestIDEcho == "" || r.RequestIDEcho != r.RequestID {
			t.Errorf("record %s: attribution %v backend %q echo %q", r.RequestID, r.Attribution, r.Backend, r.RequestIDEcho)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("%d records, want 5", n)
	}
}

// TestSweepAttributionHeaderRefused: a bad header name is refused by
// Validate, naming the setting and the header.
func TestSweepAttributionHeaderRefused(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.AttributionHeaders = []string{"x served by"}
	err := cfg.Validate()
	var fe *sweep.FieldError
	if !errors.As(err, &fe) || fe.Field != "AttributionHeaders" || !strings.Contains(err.Error(), `header name "x served by"`) {
		t.Errorf("Validate = %v, want a FieldError of AttributionHeaders naming the header", err)
	}
}
