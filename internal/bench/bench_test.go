package bench

import (
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

func TestReadDelays(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	tr := &traceReader{recs: map[string]simulator.TraceRecord{
		// Written at t0+10ms, +12ms, +14ms; llmprobe saw them 0.1, 0.2 and
		// 0.3 ms later.
		"a": {RequestID: "a", EventsNS: []int64{t0.Add(10 * time.Millisecond).UnixNano(),
			t0.Add(12 * time.Millisecond).UnixNano(), t0.Add(14 * time.Millisecond).UnixNano()}},
		"b": {RequestID: "b", EventsNS: []int64{1, 2}},
	}}
	recs := []record{
		{RequestID: "a", WallStart: t0, TTFT: 10100 * time.Microsecond, ITL: []time.Duration{2100 * time.Microsecond, 2100 * time.Microsecond}, Events: 3},
		{RequestID: "b", WallStart: t0, Events: 3, ITL: make([]time.Duration, 2)}, // count differs: skipped
		{RequestID: "c", Error: "stream"}, // failed: ignored
	}
	d := tr.readDelays(recs)
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if d.Events != 3 || d.Requests != 1 || d.Skipped != 1 || !near(d.Min, 0.1) || !near(d.Max, 0.3) || !near(d.P50, 0.2) ||
		!near(d.FirstP99, 0.1) || !(d.P99 > 0.29 && d.P99 < 0.3) {
		t.Errorf("delays %+v", d)
	}
}

func TestDrawnArrival(t *testing.T) {
	for _, tc := range []struct {
		kind       string
		burstiness float64
	}{{"poisson", 1}, {"gamma", 0.5}, {"gamma", 4}} {
		a, err := drawnArrival(tc.kind, tc.burstiness, 500, 10000, 7)
		if err != nil {
			t.Fatal(err)
		}
		// Seeded: deterministic; a sound process passes at these bounds
		// (|z| < 4, p > 0.001 would fail one seed in thousands).
		if a.N != 10000 || math.Abs(a.Z) > 4 || a.KSP < 0.001 || math.Abs(a.CV-a.WantCV) > 0.1*a.WantCV ||
			math.Abs(a.DrawnRate/500-1) > 0.05 {
			t.Errorf("%s(%g): %+v", tc.kind, tc.burstiness, a)
		}
	}
	// A schedule drawn at the wrong rate shows in z.
	a := Arrival{Kind: "poisson", Burstiness: 1, Rate: 500}
	offsets := make([]time.Duration, 1000)
	for i := range offsets {
		offsets[i] = time.Duration(i) * 1900 * time.Microsecond // 526 req/s, constant gaps
	}
	if err := fillDrawn(&a, offsets); err != nil {
		t.Fatal(err)
	}
	if a.Z < 1 || a.CV > 0.01 || a.KSP > 0.001 {
		t.Errorf("constant gaps at 526 req/s judged as Poisson(500): %+v", a)
	}
}

func TestWriteTable(t *testing.T) {
	rep := &Report{
		Start:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Machine:   Machine{CPUModel: "Test CPU", Cores: 2, OS: "linux", Arch: "amd64", Go: "go1.26", LoadStart: 0.5, LoadEnd: -1, BusyPct: 80, OthersPct: 30},
		Placement: Placement{Pinned: true, ProberCPU: "0", ServerCPU: "1"},
		Server:    ServerShape{TTFTMS: 20, GapMS: 5, Tokens: 64, InputTokens: 16},
		Accuracy:  []Accuracy{{Concurrency: 256, Requests: 100, TokensPerS: 51000, Delay: Delay{Events: 6400, P50: 0.05, P99: 0.25, Max: 1}}},
		Capacity: []Capacity{
			{Rate: 1000, TokensPerS: 64000, SendLagP99: 0.5, Delay: Delay{Events: 1, P99: 0.2}, ClientCPUPer1k: 0.003, ServerCPUPer1k: 0.002, OK: true},
			{Rate: 2000, TokensPerS: 128000, SendLagP99: 3, Delay: Delay{Events: 1, P99: 2}, ClientCPUPer1k: 0.0025},
		},
		Arrival: []Arrival{{Kind: "gamma", Burstiness: 4, Rate: 500, N: 10000, Sent: true, DrawnRate: 499, Z: -0.4,
			AchievedRate: 499.1, AchievedDev: 0.02, KSP: 0.5, CV: 0.5, WantCV: 0.5, SentKSP: 0.4, SentCV: 0.5}},
		Daemon: &Daemon{Targets: 10, Rate: 0.1, Seconds: 120, RSSMB: 20, PeakMB: 21, CPUPct: 0.4, Requests: 120, Measured: true},
		Notes:  []string{"something"},
	}
	var b strings.Builder
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Test CPU, 2 cores", "load average 0.50 at start, unknown at end", "80 % busy (all cores), of which 30 % by other processes", "taskset -c 0: llmprobe",
		"| accuracy      | 256 concurrent streams, 51.0k tokens/s",
		"read delay p99 ≤ 0.3 ms", "| highest rate within both bounds", "1000 req/s, 64.0k tokens/s", "≥ 2000 req/s",
		"llmprobe 3.00 µs per token at 64.0k tokens/s", "gamma (burstiness 4) at 500 req/s, 10000 arrivals sent",
		"RSS 20.0 MB (peak 21.0), CPU 0.40 % of a core", "- something",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	var widths []int
	for _, l := range lines {
		if strings.HasPrefix(l, "|") {
			widths = append(widths, len([]rune(l)))
		}
	}
	for _, w := range widths {
		if w != widths[0] {
			t.Errorf("table rows of different widths: %v\n%s", widths, out)
			break
		}
	}
}

func TestProcReaders(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc")
	}
	// Spin a little so the process has CPU time to show.
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
	}
	cpu, ok := procCPU(os.Getpid())
	if !ok || cpu <= 0 {
		t.Errorf("procCPU = %v, %v", cpu, ok)
	}
	rss, peak, ok := procMemory(os.Getpid())
	if !ok || rss <= 0 || peak < rss {
		t.Errorf("procMemory = %d, %d, %v", rss, peak, ok)
	}
	if m := machine(); m.Cores != runtime.NumCPU() || m.CPUModel == "" {
		t.Errorf("machine %+v", m)
	}
}

// TestSeedSweep: a sound process passes the z and KS tests in about 95 of
// 100 seeds, and the table judges a drawn-only law by that share; a
// process drawn at the wrong rate fails nearly every seed.
func TestSeedSweep(t *testing.T) {
	for _, b := range []float64{0.5, 4} {
		sw, err := seedSweep("gamma", b, 50, 10000, 100)
		if err != nil {
			t.Fatal(err)
		}
		// Binomial(100, 0.05) misses: more than 15 has probability < 1e-4.
		if sw.Seeds != 100 || sw.ZWithin < 85 || sw.KSPassed < 85 {
			t.Errorf("gamma(%g): %+v", b, sw)
		}
	}
	var out strings.Builder
	r := &Report{Arrival: []Arrival{
		{Kind: "gamma", Burstiness: 4, Rate: 50, N: 10000, Z: 2.4, KSP: 0.009, Seeds: &SeedSweep{Seeds: 100, ZWithin: 96, KSPassed: 95}},
		{Kind: "gamma", Burstiness: 0.5, Rate: 50, N: 10000, Z: 0.1, KSP: 0.5, Seeds: &SeedSweep{Seeds: 100, ZWithin: 80, KSPassed: 95}},
	}}
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(l, "| arrival") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 2 || !strings.Contains(rows[0], "over 100 seeds: z within ±2 in 96, KS p > 0.05 in 95") ||
		!strings.HasSuffix(rows[0], "| yes |") || !strings.HasSuffix(rows[1], "| no  |") {
		t.Errorf("rows:\n%s", strings.Join(rows, "\n"))
	}
}
