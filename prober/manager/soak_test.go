//go:build soak

package manager_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// The soak (docs/reliability.md): the daemon (a Manager with the real probe
// metrics, the /metrics handler scraped over HTTP, a logger) probes the
// simulator at an accelerated rate while the simulator's faults change
// every phase and every cycle reloads the config; goroutines, heap and RSS
// are sampled. Run it with
//
//	go test -tags soak -run TestSoak -timeout 40m -v ./prober/manager/ -soak.duration=30m
//
// (or LLMPROBE_SOAK_DURATION=30m); CI runs 20s of the same code.
var (
	soakDuration = flag.Duration("soak.duration", envDuration("LLMPROBE_SOAK_DURATION", 30*time.Minute),
		"how long TestSoak runs (env LLMPROBE_SOAK_DURATION)")
	soakSample = flag.Duration("soak.sample", 0, "sampling interval of TestSoak (default duration/100, 1s..5s)")
)

// Bounds of the soak. A quiet sample is taken at the end of each cycle's
// fault-free phase, when every request of the faulty phases has ended
// (that phase lasts longer than the targets' timeout): the last quiet
// sample is compared with the first.
//
// Goroutines serving HTTP connections (net/http's persistConn loops on the
// client side, conn.serve on the simulator's) are counted apart: how many
// keep-alive connections are idle at a sample depends on the concurrency
// of the phases before it, and the transport closes them after 90 s; they
// have their own bound.
const (
	// soakGoroutineGrowth bounds last quiet - first quiet goroutines,
	// connection goroutines excluded.
	soakGoroutineGrowth = 25
	// soakMaxConnGoroutines bounds the connection goroutines of any
	// sample: 3 per connection (client read and write loops, server), at
	// most one connection per in-flight request (max_concurrency 16 + 16
	// + the default 40) plus the idle ones of the pool.
	soakMaxConnGoroutines = 600
	// soakHeapGrowth bounds last quiet - first quiet HeapAlloc (after GC).
	soakHeapGrowth = 16 << 20
	// soakMaxGoroutines and soakMaxHeap bound every sample: in-flight
	// requests are bounded by max_concurrency whatever the fault.
	soakMaxGoroutines = 1000
	soakMaxHeap       = 256 << 20
)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// soakPhase is one fault setting of the simulator.
type soakPhase struct {
	name string
	set  func(f *simulator.Faults)
}

var soakPhases = []soakPhase{
	{"none", func(*simulator.Faults) {}},
	{"429 and 5xx", func(f *simulator.Faults) { f.HTTP429, f.HTTP500, f.HTTP503 = 0.2, 0.1, 0.1 }},
	{"stalls", func(f *simulator.Faults) { f.StallBeforeFirstToken, f.StallMidStream = 0.3, 0.3 }},
	{"cut and malformed", func(f *simulator.Faults) { f.CutStream, f.MalformedEvent = 0.3, 0.3 }},
	{"resets", func(f *simulator.Faults) { f.ConnectionReset = 0.5 }},
	{"slow drip", func(f *simulator.Faults) { f.SlowDrip, f.SlowDripInterval = 0.5, 200*time.Microsecond }},
	{"hang", func(f *simulator.Faults) { f.Hang = 0.5 }},
	{"everything", func(f *simulator.Faults) {
		f.HTTP429, f.HTTP500, f.StallBeforeFirstToken, f.StallMidStream = 0.05, 0.05, 0.05, 0.05
		f.CutStream, f.MalformedEvent, f.ConnectionReset, f.SlowDrip, f.Hang = 0.05, 0.05, 0.05, 0.05, 0.05
	}},
}

const soakConfig = `
global: {timeout: 2s, ttft_timeout: 400ms, stall_timeout: 300ms}
targets:
  - name: completions
    base_url: %[1]s
    slo: {ttft: 200ms, tpot: 50ms}
    probes:
      - name: fast
        rate: %[2]d
        max_concurrency: 16
        workload: {input_tokens: {dist: uniform, value: 64, range_ratio: 0.5}, output_tokens: {dist: fixed, value: 8}}
      - name: steady
        rate: 10
        arrival: constant
        workload: {input_tokens: {dist: fixed, value: 16}, output_tokens: {dist: fixed, value: 4}}
  - name: chat
    base_url: %[1]s
    api: chat
    probes:
      - name: p
        rate: 20
        arrival: gamma
        burstiness: 0.5
        max_concurrency: 16
        workload: {input_tokens: {dist: fixed, value: 32}, output_tokens: {dist: fixed, value: 4}}
`

type soakSampleRow struct {
	at         time.Duration
	phase      string
	quiet      bool
	goroutines int // connection goroutines excluded
	conns      int // goroutines serving HTTP connections
	heap, rss  uint64
	records    uint64
}

func TestSoak(t *testing.T) {
	d := *soakDuration
	phase := min(max(d/40, 500*time.Millisecond), 10*time.Second)
	quietPhase := max(phase, 3*time.Second) // longer than the 2s timeout
	sample := *soakSample
	if sample <= 0 {
		sample = min(max(d/100, time.Second), 5*time.Second)
	}
	t.Logf("soak for %v: fault phases of %v (fault-free phase %v), sample every %v", d, phase, quietPhase, sample)

	cfg := fastSim()
	cfg.Faults.StallDuration = time.Second
	base, sim := simtest.Start(t, cfg)
	reg := prometheus.NewRegistry()
	var (
		mu      sync.Mutex
		classes = map[prober.ErrorClass]uint64{}
		total   uint64
		okSince = map[string]uint64{} // successes per phase name
		current = "none"
	)
	m := manager.New(manager.Options{
		Logger: level.NewFilter(log.NewLogfmtLogger(io.Discard), level.AllowDebug()),
		Observers: []manager.Observer{probemetrics.New(reg), manager.ObserverFunc(func(r *prober.Record, _ slo.Verdict) {
			mu.Lock()
			classes[r.Error]++
			total++
			if r.OK() {
				okSince[current]++
			}
			mu.Unlock()
		})},
	})
	defer m.Stop()
	metrics := httptest.NewServer(web.NewHandler(web.Options{Gatherer: reg}))
	defer metrics.Close()

	rates := []int{40, 30}
	apply := func(cycle int) {
		t.Helper()
		if err := m.Apply(context.Background(), parse(t, fmt.Sprintf(soakConfig, base, rates[cycle%2]))); err != nil {
			t.Fatal(err)
		}
	}
	apply(0)

	start := time.Now()
	var rows []soakSampleRow
	takeSample := func(quiet bool) soakSampleRow {
		// Scrape /metrics as Prometheus would: the exposition must stay
		// answerable and bounded throughout.
		resp, err := http.Get(metrics.URL + "/metrics")
		if err != nil {
			t.Fatalf("scrape /metrics: %v", err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 || n > 4<<20 {
			t.Fatalf("/metrics answered %d with %d bytes", resp.StatusCode, n)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		r := soakSampleRow{at: time.Since(start).Round(time.Millisecond), phase: current, quiet: quiet,
			heap: ms.HeapAlloc, rss: rss(), records: total}
		mu.Unlock()
		r.goroutines, r.conns = goroutines()
		rows = append(rows, r)
		if r.goroutines+r.conns > soakMaxGoroutines || r.conns > soakMaxConnGoroutines || r.heap > soakMaxHeap {
			t.Fatalf("sample at %v (%s): %d goroutines (%d of them serving connections), heap %s: over the bounds %d (%d), %s",
				r.at, r.phase, r.goroutines+r.conns, r.conns, mib(r.heap), soakMaxGoroutines, soakMaxConnGoroutines, mib(soakMaxHeap))
		}
		return r
	}

	// Run the phases: the fault-free one first in every cycle, then the
	// faults; the config is reloaded (a probe's rate changes) every cycle.
	tick := time.NewTicker(sample)
	defer tick.Stop()
	cycle := 0
	for time.Since(start) < d || cycle < 2 {
		for _, ph := range soakPhases {
			f := simulator.DefaultFaults()
			f.StallDuration = time.Second
			ph.set(&f)
			sim.SetFaults(f)
			mu.Lock()
			current = ph.name
			okSince[ph.name] = 0
			mu.Unlock()
			length := phase
			if ph.name == "none" {
				length = quietPhase
			}
			end := time.After(length)
		wait:
			for {
				select {
				case <-tick.C:
					takeSample(false)
				case <-end:
					break wait
				}
			}
			if ph.name == "none" {
				takeSample(true)
				mu.Lock()
				ok := okSince["none"]
				mu.Unlock()
				if ok == 0 {
					t.Fatalf("cycle %d: no success in the fault-free phase: the daemon stopped probing", cycle)
				}
			}
		}
		cycle++
		apply(cycle)
	}
	m.Stop()

	var quiet []soakSampleRow
	var maxG, maxC int
	var maxHeap, maxRSS uint64
	for _, r := range rows {
		if r.quiet {
			quiet = append(quiet, r)
		}
		maxG, maxC = max(maxG, r.goroutines+r.conns), max(maxC, r.conns)
		maxHeap, maxRSS = max(maxHeap, r.heap), max(maxRSS, r.rss)
	}
	first, last := quiet[0], quiet[len(quiet)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "soak %v, %d cycles, %d records, %.0f records/s; classes %v\n", time.Since(start).Round(time.Second),
		cycle, total, float64(total)/time.Since(start).Seconds(), classes)
	fmt.Fprintf(&b, "quiet samples (end of each fault-free phase):\n  at        goroutines  conn-goroutines  heap      rss\n")
	for _, r := range quiet {
		fmt.Fprintf(&b, "  %-9v %-11d %-16d %-9s %s\n", r.at.Round(time.Second), r.goroutines, r.conns, mib(r.heap), mib(r.rss))
	}
	fmt.Fprintf(&b, "all %d samples: max goroutines %d (connections %d), max heap %s, max rss %s\n", len(rows), maxG, maxC, mib(maxHeap), mib(maxRSS))
	fmt.Fprintf(&b, "growth first->last quiet: goroutines %+d (bound %d), heap %+.1fMiB (bound %s)",
		last.goroutines-first.goroutines, soakGoroutineGrowth, (float64(last.heap)-float64(first.heap))/(1<<20), mib(soakHeapGrowth))
	t.Log(b.String())
	if last.goroutines > first.goroutines+soakGoroutineGrowth {
		t.Errorf("goroutines grew from %d to %d over the soak", first.goroutines, last.goroutines)
	}
	if last.heap > first.heap+soakHeapGrowth {
		t.Errorf("heap grew from %s to %s over the soak", mib(first.heap), mib(last.heap))
	}
	for _, c := range []prober.ErrorClass{prober.ClassNone, prober.ClassHTTP429, prober.ClassHTTP5xx, prober.ClassStream, prober.ClassTTFTTimeout} {
		if classes[c] == 0 {
			t.Errorf("no record of class %q: the faults did not reach the daemon", c)
		}
	}
}

// goroutines counts the live goroutines, those serving HTTP connections
// apart.
func goroutines() (other, conns int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "net/http.(*persistConn).") || strings.Contains(g, "net/http.(*conn).serve") {
			conns++
		} else {
			other++
		}
	}
	return other, conns
}

// rss is the process' resident set size from /proc/self/statm (0 where
// there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
