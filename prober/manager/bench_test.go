package manager_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// BenchmarkDaemonSendLag1000 runs the daemon's whole request path (open-loop
// schedule, workload, streaming client, SLO, metrics) at 1,000 req/s against
// the simulator for 3 s per iteration and reports the send lag (actual −
// scheduled send) percentiles: how late the prober itself was.
func BenchmarkDaemonSendLag1000(b *testing.B) {
	sc := simulator.DefaultConfig()
	sc.StepBase = time.Millisecond
	sc.StepPerSeq = time.Microsecond
	sc.StepPerPrefillToken = 0
	sc.MaxNumSeqs = 1024
	base, _ := simtest.Start(b, sc)
	for b.Loop() {
		var mu sync.Mutex
		var lags []time.Duration
		var failed int
		m := manager.New(manager.Options{
			Observers: []manager.Observer{probemetrics.New(prometheus.NewRegistry()), manager.ObserverFunc(func(r *prober.Record, _ slo.Verdict) {
				mu.Lock()
				defer mu.Unlock()
				if r.Error == prober.ClassCanceled {
					return
				}
				lags = append(lags, r.SendLag)
				if !r.OK() {
					failed++
				}
			})},
		})
		cfg := parseB(b, fmt.Sprintf(`
global:
  max_rate: 1000
targets:
  - name: sim
    base_url: %s
    probes:
      - name: fast
        rate: 1000
        arrival: poisson
        max_concurrency: 2000
        workload:
          input_tokens: {dist: fixed, value: 16}
          output_tokens: {dist: fixed, value: 4}
`, base))
		if err := m.Apply(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		m.Stop()
		mu.Lock()
		slices.Sort(lags)
		n := len(lags)
		if n == 0 {
			b.Fatal("no requests")
		}
		q := func(p float64) float64 { return float64(lags[int(p*float64(n-1))].Microseconds()) }
		b.ReportMetric(float64(n)/3, "req/s")
		b.ReportMetric(q(0.5), "p50-lag-µs")
		b.ReportMetric(q(0.99), "p99-lag-µs")
		b.ReportMetric(float64(lags[n-1].Microseconds()), "max-lag-µs")
		b.ReportMetric(float64(failed), "failed")
		mu.Unlock()
	}
}

func parseB(b *testing.B, yml string) *configT {
	b.Helper()
	c, err := parseConfig(yml)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
