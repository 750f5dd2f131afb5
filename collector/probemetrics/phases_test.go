package probemetrics

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// phaseCounts returns the observation count and sum of each phase of
// llmprobe_http_phase_seconds for (target, probe), and checks each phase's
// classic buckets.
func phaseCounts(t *testing.T, reg prometheus.Gatherer, target, probe string) (map[string]uint64, map[string]float64) {
	t.Helper()
	counts, sums := map[string]uint64{}, map[string]float64{}
	mf := gatherFamily(t, reg, NamePhase)
	if mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("family %s missing or not a histogram", NamePhase)
	}
	for _, m := range mf.GetMetric() {
		l := labelsOf(m)
		if l["target"] != target || l["probe"] != probe {
			continue
		}
		var bounds []float64
		for _, b := range m.GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if want := PhaseBuckets(prober.Phase(l["phase"])); !slices.Equal(bounds, want) {
			t.Errorf("phase %s: buckets %v, want %v", l["phase"], bounds, want)
		}
		counts[l["phase"]] = m.GetHistogram().GetSampleCount()
		sums[l["phase"]] = m.GetHistogram().GetSampleSum()
	}
	return counts, sums
}

// TestPhaseHistogramsHandComputed checks the fixture's phases: req-1 went
// through connect, request, wait, first_token and transfer on a new
// connection; the connect failure through resolve (a failed request
// observes the phases it went through); no other request had phases, and
// tls never happened.
func TestPhaseHistogramsHandComputed(t *testing.T) {
	reg, _ := newFixtureRegistry(t)
	counts, sums := phaseCounts(t, reg, "sim", "small")
	want := map[string]float64{"resolve": 0.004, "connect": 0.0003, "tls": 0, "request": 0.00005, "wait": 0.002,
		"first_token": 0.117, "transfer": 0.075}
	if len(counts) != len(prober.Phases) {
		t.Fatalf("phases %v, want every one of %v pre-created", counts, prober.Phases)
	}
	for p, sum := range want {
		wantN := uint64(1)
		if sum == 0 {
			wantN = 0
		}
		if counts[p] != wantN || sums[p] != sum {
			t.Errorf("phase %s: count %d sum %g, want %d and %g", p, counts[p], sums[p], wantN, sum)
		}
	}
	counts, _ = phaseCounts(t, reg, "sim", "large")
	for p, n := range counts {
		if n != 0 {
			t.Errorf("probe large: phase %s observed %d times, it had none", p, n)
		}
	}
}

// TestPhaseHistogramsOverHTTP sends requests through the client over real
// HTTP to the simulator and observes them: after the first request connect
// and wait have observations; the requests after it reuse the kept-alive
// connection, so connect stops growing while wait, first_token and
// transfer grow by one per request.
func TestPhaseHistogramsOverHTTP(t *testing.T) {
	cfg := simtest.Fast()
	base, _ := simtest.Start(t, cfg)
	c, err := client.New(client.Options{BaseURL: base, Model: cfg.Model, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	reg, m := newMetrics()
	send := func() {
		t.Helper()
		rec := prober.Record{Target: "sim", Probe: "p", Scheduled: time.Now()}
		c.Do(context.Background(), client.Request{ID: "phase-test", Prompt: "hello there", MaxTokens: 8, IgnoreEOS: true}, &rec)
		if !rec.OK() {
			t.Fatalf("request: %s %s", rec.Error, rec.ErrorMessage)
		}
		m.Observe(&rec, slo.Verdict{Good: true})
	}
	send()
	counts, _ := phaseCounts(t, reg, "sim", "p")
	if counts["connect"] != 1 || counts["wait"] != 1 || counts["request"] != 1 {
		t.Fatalf("after the first request: %v, want connect, request and wait observed once", counts)
	}
	for range 4 {
		send()
	}
	counts, _ = phaseCounts(t, reg, "sim", "p")
	want := map[string]uint64{"resolve": 0, "connect": 1, "tls": 0, "request": 5, "wait": 5, "first_token": 5, "transfer": 5}
	for p, n := range want {
		if counts[p] != n {
			t.Errorf("after 5 requests on one kept-alive connection: phase %s observed %d times, want %d (all: %v)", p, counts[p], n, counts)
		}
	}
}
