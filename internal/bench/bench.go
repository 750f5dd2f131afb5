// Package bench owns `llmprobe bench`: a benchmark of llmprobe's own
// accuracy and capacity on loopback. It starts the simulator in light
// streaming mode (pre-encoded events at a fixed gap, its own CPU reported
// apart) and runs llmprobe against it as separate processes — `llmprobe
// sweep` per measurement and `llmprobe serve` for the daemon's footprint —
// pinned to their own CPUs with taskset when it is available. It measures:
//
//   - accuracy: llmprobe's timestamp of every token event against the
//     simulator's write time of it (--trace-file, matched by x-request-id)
//     at several closed-loop concurrencies;
//   - capacity: the highest open-loop rate whose send-lag p99 and read
//     delay p99 stay within bounds, and llmprobe's CPU per 1,000 streamed
//     tokens beside the simulator's;
//   - arrival fidelity: the drawn schedules against the requested rate and
//     law (z-score, Kolmogorov–Smirnov, coefficient of variation) and the
//     achieved sends against the drawn schedule;
//   - the daemon's footprint: RSS and CPU of `llmprobe serve` with a few
//     slow probes.
//
// docs/performance.md documents the figures, their definitions and the
// latest results.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/arrival"
)

// Sections of a benchmark, in the order they run.
const (
	SectionAccuracy = "accuracy"
	SectionCapacity = "capacity"
	SectionArrival  = "arrival"
	SectionDaemon   = "daemon"
)

// Sections lists every section in run order.
var Sections = []string{SectionAccuracy, SectionCapacity, SectionArrival, SectionDaemon}

// Targets of the benchmark (issue 13), on a 2-core machine.
const (
	TargetReadDelayP99    = 0.3  // ms, at TargetStreams concurrent streams
	TargetStreams         = 256  // streams
	TargetSendLagP99      = 1.0  // ms
	TargetCPUPerToken     = 4.0  // µs of llmprobe CPU per streamed token...
	TargetTokensPerSecond = 50e3 // ...at this many tokens/s or more
	TargetRate            = 2000 // req/s open loop
	TargetRateDeviation   = 0.5  // % achieved vs drawn
	TargetZ               = 2.0  // |z| of the drawn rate
	TargetKSP             = 0.05 // KS p-value above
	TargetDaemonRSS       = 30.0 // MB
	TargetDaemonCPU       = 1.0  // % of a core
)

// Options configure a benchmark. Zero fields take the defaults of
// DefaultOptions (or QuickOptions).
type Options struct {
	// Exe is the llmprobe executable the children run (default: this
	// process's executable); Env is added to their environment.
	Exe string
	Env []string
	// Dir holds the children's run directories, logs and the trace; it
	// must exist. Progress receives one line per measurement (nil: none).
	Dir      string
	Progress io.Writer
	// Quick is recorded in the report (QuickOptions sets the figures).
	Quick bool
	// Sections to run (default: all).
	Sections []string
	// Pin places the prober and the simulator on CPUs of their own with
	// taskset when available.
	Pin bool

	// The light simulator's stream: first token after TTFT, one event per
	// Gap, Tokens tokens per request (one per event); prompts of
	// InputTokens tokens.
	TTFT        time.Duration
	Gap         time.Duration
	Tokens      int
	InputTokens int

	// Concurrency lists the accuracy levels; StepDuration is the measured
	// time of one accuracy or capacity step.
	Concurrency  []int
	StepDuration time.Duration
	// Rates is the capacity ladder (req/s, ascending); it stops after
	// two failing rates in a row once a rate streamed TargetTokensPerSecond.
	Rates []float64
	// ArrivalCount arrivals per arrival run, at each of ArrivalRates
	// (Poisson); the gamma runs use the last rate.
	ArrivalCount int
	ArrivalRates []float64
	// DaemonTargets targets of one probe each at DaemonRate req/s,
	// measured for DaemonDuration after DaemonWarmup.
	DaemonTargets  int
	DaemonRate     float64
	DaemonDuration time.Duration
	DaemonWarmup   time.Duration
}

// DefaultOptions are the full benchmark's settings (about 9 minutes).
func DefaultOptions() Options {
	return Options{
		Pin: true, TTFT: 20 * time.Millisecond, Gap: 5 * time.Millisecond, Tokens: 64, InputTokens: 16,
		Concurrency: []int{1, 64, 256, 1024}, StepDuration: 5 * time.Second,
		Rates:        []float64{250, 500, 1000, 1500, 2000, 2500, 3000, 4000},
		ArrivalCount: 10000, ArrivalRates: []float64{50, 500},
		DaemonTargets: 10, DaemonRate: 0.1, DaemonDuration: 2 * time.Minute, DaemonWarmup: 10 * time.Second,
	}
}

// QuickOptions are DefaultOptions shortened to about two minutes: shorter
// steps, fewer arrivals, a 20 s daemon window.
func QuickOptions() Options {
	o := DefaultOptions()
	o.Quick = true
	o.StepDuration = 2 * time.Second
	o.Rates = []float64{500, 1000, 2000, 3000}
	o.ArrivalCount = 2000
	o.DaemonDuration = 20 * time.Second
	o.DaemonWarmup = 3 * time.Second
	return o
}

// ServerShape is the light simulator's stream.
type ServerShape struct {
	TTFTMS      float64 `json:"ttft_ms"`
	GapMS       float64 `json:"gap_ms"`
	Tokens      int     `json:"tokens"`
	InputTokens int     `json:"input_tokens"`
}

// Report is everything a benchmark measured.
type Report struct {
	Start     time.Time   `json:"start"`
	Quick     bool        `json:"quick"`
	Machine   Machine     `json:"machine"`
	Placement Placement   `json:"placement"`
	Server    ServerShape `json:"server"`

	Accuracy []Accuracy `json:"accuracy,omitempty"`
	Capacity []Capacity `json:"capacity,omitempty"`
	Arrival  []Arrival  `json:"arrival,omitempty"`
	Daemon   *Daemon    `json:"daemon,omitempty"`
	// Notes are warnings met on the way (a failed step, a missing trace).
	Notes []string `json:"notes,omitempty"`
}

// Accuracy is one closed-loop level of the accuracy section.
type Accuracy struct {
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Failed      int     `json:"failed"`
	TokensPerS  float64 `json:"tokens_per_s"`
	Delay       Delay   `json:"read_delay"`
	// ClientCPU is llmprobe's CPU over the step in cores.
	ClientCPU float64 `json:"client_cpu_cores"`
}

// Capacity is one open-loop rate of the capacity section.
type Capacity struct {
	Rate       float64 `json:"rate"`
	Achieved   float64 `json:"achieved_rate"`
	Requests   int     `json:"requests"`
	Failed     int     `json:"failed"`
	TokensPerS float64 `json:"tokens_per_s"`
	SendLagP99 float64 `json:"send_lag_p99_ms"`
	Delay      Delay   `json:"read_delay"`
	// ClientCPUPer1k and ServerCPUPer1k are CPU-seconds per 1,000 streamed
	// tokens of llmprobe (over the step) and of the simulator (over the
	// sweep process's life, warmups included); ClientCores llmprobe's CPU
	// over the step in cores.
	ClientCPUPer1k float64 `json:"client_cpu_s_per_1k_tokens"`
	ServerCPUPer1k float64 `json:"server_cpu_s_per_1k_tokens"`
	ClientCores    float64 `json:"client_cpu_cores"`
	// OK: no failure, send-lag p99 <= 1 ms, read delay p99 <= 0.3 ms.
	OK bool `json:"ok"`
}

// Arrival is one arrival-fidelity run.
type Arrival struct {
	Kind       string  `json:"kind"`
	Burstiness float64 `json:"burstiness"`
	Rate       float64 `json:"rate"`
	N          int     `json:"n"`
	// Sent is true when the schedule was sent (llmprobe sweep against
	// the simulator); false for a draw of the process alone.
	Sent bool `json:"sent"`
	// DrawnRate is the drawn schedule's rate ((n-1)/span), Z its
	// deviation from Rate in standard errors; AchievedRate the actual
	// sends' rate and AchievedDev its deviation from DrawnRate in %.
	DrawnRate    float64 `json:"drawn_rate"`
	Z            float64 `json:"z"`
	AchievedRate float64 `json:"achieved_rate,omitempty"`
	AchievedDev  float64 `json:"achieved_dev_pct,omitempty"`
	// KS, KSP, CV, WantCV: the drawn gaps against the law; SentKSP and
	// SentCV: the actual send gaps.
	KS      float64 `json:"ks"`
	KSP     float64 `json:"ks_p"`
	CV      float64 `json:"cv"`
	WantCV  float64 `json:"want_cv"`
	SentKSP float64 `json:"sent_ks_p,omitempty"`
	SentCV  float64 `json:"sent_cv,omitempty"`
	// SendLagP99 is the sends' lag p99 in ms.
	SendLagP99 float64 `json:"send_lag_p99_ms,omitempty"`
}

// Daemon is the daemon-footprint section.
type Daemon struct {
	Targets  int     `json:"targets"`
	Rate     float64 `json:"rate"`
	Seconds  float64 `json:"seconds"`
	RSSMB    float64 `json:"rss_mb"`
	PeakMB   float64 `json:"peak_rss_mb"`
	CPUPct   float64 `json:"cpu_pct_of_core"`
	Requests float64 `json:"requests"`
	// Measured is false where /proc is not available.
	Measured bool `json:"measured"`
}

// bench is one benchmark run's state.
type bench struct {
	o       Options
	rep     *Report
	base    string
	sim     *child
	trace   *traceReader
	runs    int
	hc      *http.Client
	started time.Time
	// own is the CPU time of the children that ended (sweeps, serve).
	own time.Duration
}

// Run runs the benchmark. It returns the report of what it measured so
// far also when it fails or ctx ends.
func Run(ctx context.Context, o Options) (*Report, error) {
	d := DefaultOptions()
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the llmprobe executable: %w", err)
		}
		o.Exe = exe
	}
	if o.Dir == "" {
		return nil, errors.New("bench: no work directory")
	}
	if len(o.Sections) == 0 {
		o.Sections = Sections
	}
	for _, s := range o.Sections {
		if !slices.Contains(Sections, s) {
			return nil, fmt.Errorf("unknown section %q, want some of %s", s, strings.Join(Sections, ", "))
		}
	}
	setDefault(&o.TTFT, d.TTFT)
	setDefault(&o.Gap, d.Gap)
	setDefault(&o.Tokens, d.Tokens)
	setDefault(&o.InputTokens, d.InputTokens)
	setDefault(&o.StepDuration, d.StepDuration)
	setDefault(&o.ArrivalCount, d.ArrivalCount)
	setDefault(&o.DaemonTargets, d.DaemonTargets)
	setDefault(&o.DaemonRate, d.DaemonRate)
	setDefault(&o.DaemonDuration, d.DaemonDuration)
	setDefault(&o.DaemonWarmup, d.DaemonWarmup)
	if len(o.Concurrency) == 0 {
		o.Concurrency = d.Concurrency
	}
	if len(o.Rates) == 0 {
		o.Rates = d.Rates
	}
	if len(o.ArrivalRates) == 0 {
		o.ArrivalRates = d.ArrivalRates
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "runs")); err == nil {
		return nil, fmt.Errorf("work directory %s already holds a benchmark (runs/): give an empty one", o.Dir)
	}
	m := machine()
	busy0, total0, ticksOK := cpuTicks()
	self0, _ := selfCPU()
	b := &bench{o: o, hc: &http.Client{Timeout: 5 * time.Second}, started: time.Now(), rep: &Report{
		Start: time.Now().UTC(), Quick: o.Quick, Machine: m, Placement: placement(o.Pin, m.Cores),
		Server: ServerShape{TTFTMS: ms(o.TTFT), GapMS: ms(o.Gap), Tokens: o.Tokens, InputTokens: o.InputTokens},
	}}
	defer b.hc.CloseIdleConnections()
	err := b.run(ctx)
	b.rep.Machine.LoadEnd = loadAverage()
	b.rep.Machine.BusyPct, b.rep.Machine.OthersPct = -1, -1
	busy1, total1, ticksOK1 := cpuTicks()
	self1, _ := selfCPU()
	if ticksOK && ticksOK1 && total1 > total0 && b.sim != nil {
		if simCPU, ok := b.sim.cpuTime(); ok {
			elapsed := time.Duration(total1-total0) * time.Second / clockTick // all cores
			busy := time.Duration(busy1-busy0) * time.Second / clockTick
			own := b.own + simCPU + self1 - self0
			b.rep.Machine.BusyPct = 100 * busy.Seconds() / elapsed.Seconds()
			b.rep.Machine.OthersPct = max(0, 100*(busy-own).Seconds()/elapsed.Seconds())
		}
	}
	return b.rep, err
}

func setDefault[T comparable](p *T, d T) {
	var zero T
	if *p == zero {
		*p = d
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (b *bench) progress(format string, args ...any) {
	if b.o.Progress != nil {
		fmt.Fprintf(b.o.Progress, "bench %5.0fs  %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
	}
}

func (b *bench) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.rep.Notes = append(b.rep.Notes, msg)
	b.progress("note: %s", msg)
}

func (b *bench) run(ctx context.Context) error {
	if err := b.startSimulator(ctx); err != nil {
		return err
	}
	defer b.sim.stop(10 * time.Second) // before Run reads the simulator's CPU
	for _, s := range Sections {
		if !slices.Contains(b.o.Sections, s) {
			continue
		}
		var err error
		switch s {
		case SectionAccuracy:
			err = b.accuracy(ctx)
		case SectionCapacity:
			err = b.capacity(ctx)
		case SectionArrival:
			err = b.arrivals(ctx)
		case SectionDaemon:
			err = b.daemon(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func (b *bench) startSimulator(ctx context.Context) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	tracePath := filepath.Join(b.o.Dir, "trace.jsonl")
	b.sim, err = start("simulator", b.o.Exe, b.rep.Placement.ServerCPU, filepath.Join(b.o.Dir, "simulator.log"), b.o.Env,
		"simulate", "--light", "--light.ttft="+b.o.TTFT.String(), "--light.gap="+b.o.Gap.String(),
		"--light.tokens="+strconv.Itoa(b.o.Tokens), "--trace-file="+tracePath, "--web.listen-address="+addr,
		"--log.level=warn")
	if err != nil {
		return err
	}
	b.base = "http://" + addr
	b.trace = newTraceReader(tracePath)
	if err := waitHTTP(ctx, b.sim, b.base+"/light/stats", 30*time.Second); err != nil {
		b.sim.stop(time.Second)
		return err
	}
	b.progress("simulator (light: ttft %s, gap %s, %d tokens) at %s; %s", b.o.TTFT, b.o.Gap, b.o.Tokens, b.base, b.rep.Placement)
	return nil
}

// lightStats reads the simulator's /light/stats.
func (b *bench) lightStats() (simulator.LightStats, error) {
	var st simulator.LightStats
	resp, err := b.hc.Get(b.base + "/light/stats")
	if err != nil {
		return st, fmt.Errorf("simulator stats: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("simulator stats: %w", err)
	}
	return st, nil
}

// sweepRun runs one `llmprobe sweep` child with the common flags plus
// extra, and reads its run directory; server is the simulator's stats
// delta over the child's life.
func (b *bench) sweepRun(ctx context.Context, name string, extra ...string) (*run, simulator.LightStats, error) {
	b.runs++
	out := filepath.Join(b.o.Dir, "runs", fmt.Sprintf("%02d-%s", b.runs, name))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, simulator.LightStats{}, err
	}
	args := append([]string{"sweep", "--target=" + b.base, "--input-len=" + strconv.Itoa(b.o.InputTokens),
		"--output-len=" + strconv.Itoa(b.o.Tokens), "--warmups=2", "--idle-timeout=10s", "--timeout=60s",
		"--out=" + out, "--name=" + name, "--no-progress", "--log.level=warn"}, extra...)
	before, err := b.lightStats()
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	c, err := start("sweep "+name, b.o.Exe, b.rep.Placement.ProberCPU, out+".log", b.o.Env, args...)
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	err = c.wait(ctx)
	if cpu, ok := c.cpuTime(); ok {
		b.own += cpu
	}
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	after, err := b.lightStats()
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	r, err := readRun(out)
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	if err := b.trace.match(r.records); err != nil {
		b.note("%s: %v", name, err)
	}
	delta := simulator.LightStats{CPUNS: after.CPUNS - before.CPUNS, Requests: after.Requests - before.Requests,
		Events: after.Events - before.Events, Tokens: after.Tokens - before.Tokens}
	if before.CPUNS < 0 || after.CPUNS < 0 {
		delta.CPUNS = -1
	}
	return r, delta, nil
}

func (b *bench) accuracy(ctx context.Context) error {
	for _, c := range b.o.Concurrency {
		r, _, err := b.sweepRun(ctx, "accuracy-c"+strconv.Itoa(c), "--concurrency="+strconv.Itoa(c),
			"--duration="+b.o.StepDuration.String())
		if err != nil {
			return err
		}
		st := r.step.Stats
		a := Accuracy{Concurrency: c, Requests: st.Requests, Failed: st.Failed, TokensPerS: st.OutputThroughput,
			Delay: b.trace.readDelays(r.records), ClientCPU: r.step.Validity.ClientCPU}
		b.rep.Accuracy = append(b.rep.Accuracy, a)
		b.progress("accuracy c=%d: %d requests, %.0f tokens/s, read delay p50 %.3f p99 %.3f max %.3f ms",
			c, a.Requests, a.TokensPerS, a.Delay.P50, a.Delay.P99, a.Delay.Max)
	}
	return nil
}

func (b *bench) capacity(ctx context.Context) error {
	fails, reached := 0, false
	for _, rate := range b.o.Rates {
		r, srv, err := b.sweepRun(ctx, "capacity-r"+strconv.FormatFloat(rate, 'f', -1, 64),
			"--rates="+strconv.FormatFloat(rate, 'f', -1, 64), "--duration="+b.o.StepDuration.String())
		if err != nil {
			return err
		}
		st := r.step.Stats
		cp := Capacity{Rate: rate, Achieved: st.AchievedRate, Requests: st.Requests, Failed: st.Failed,
			TokensPerS: st.OutputThroughput, SendLagP99: st.SendLag.P99, Delay: b.trace.readDelays(r.records),
			ClientCores: r.step.Validity.ClientCPU, ClientCPUPer1k: -1, ServerCPUPer1k: -1}
		if tok := float64(st.TotalOutputTokens); tok > 0 && cp.ClientCores >= 0 {
			cp.ClientCPUPer1k = cp.ClientCores * st.Duration / tok * 1000
		}
		if srv.Tokens > 0 && srv.CPUNS >= 0 {
			cp.ServerCPUPer1k = float64(srv.CPUNS) / 1e9 / float64(srv.Tokens) * 1000
		}
		cp.OK = cp.Failed == 0 && cp.SendLagP99 <= TargetSendLagP99 && cp.Delay.Events > 0 && cp.Delay.P99 <= TargetReadDelayP99
		b.rep.Capacity = append(b.rep.Capacity, cp)
		b.progress("capacity %g req/s: %.0f tokens/s, send lag p99 %.3f ms, read delay p99 %.3f ms, llmprobe %.1f µs/token, server %.1f µs/token, ok %v",
			rate, cp.TokensPerS, cp.SendLagP99, cp.Delay.P99, cp.ClientCPUPer1k*1000, cp.ServerCPUPer1k*1000, cp.OK)
		// Stop after two failing rates in a row, once a rate has streamed
		// the tokens/s the CPU-per-token figure is judged at.
		if cp.OK {
			fails = 0
		} else {
			fails++
		}
		if cp.TokensPerS >= TargetTokensPerSecond {
			reached = true
		}
		if fails >= 2 && reached {
			break
		}
	}
	return nil
}

// arrivals runs the arrival-fidelity section: Poisson schedules sent at
// each of ArrivalRates, gamma (burstiness 0.5 and 4) sent at the last one,
// and draws of gamma at the other rates.
func (b *bench) arrivals(ctx context.Context) error {
	last := b.o.ArrivalRates[len(b.o.ArrivalRates)-1]
	type spec struct {
		kind       string
		burstiness float64
		rate       float64
		send       bool
	}
	var specs []spec
	for _, r := range b.o.ArrivalRates {
		specs = append(specs, spec{arrival.KindPoisson, 1, r, true})
	}
	for _, bu := range []float64{0.5, 4} {
		for _, r := range b.o.ArrivalRates {
			specs = append(specs, spec{arrival.KindGamma, bu, r, r == last})
		}
	}
	for i, s := range specs {
		var a Arrival
		var err error
		if s.send {
			a, err = b.sentArrival(ctx, s.kind, s.burstiness, s.rate)
		} else {
			a, err = drawnArrival(s.kind, s.burstiness, s.rate, b.o.ArrivalCount, uint64(i+1))
		}
		if err != nil {
			return err
		}
		b.rep.Arrival = append(b.rep.Arrival, a)
		b.progress("arrival %s(%g) at %g req/s, n %d, sent %v: drawn %.2f req/s (z %.2f), achieved dev %.3f%%, KS p %.3f, CV %.3f (want %.3f)",
			a.Kind, a.Burstiness, a.Rate, a.N, a.Sent, a.DrawnRate, a.Z, a.AchievedDev, a.KSP, a.CV, a.WantCV)
	}
	return nil
}

// drawnArrival draws n arrivals of a process without sending them.
func drawnArrival(kind string, burstiness, rate float64, n int, seed uint64) (Arrival, error) {
	p, err := arrival.New(kind, rate, burstiness, seed)
	if err != nil {
		return Arrival{}, err
	}
	offsets := make([]time.Duration, n)
	for i := range offsets {
		offsets[i] = p.Next()
	}
	a := Arrival{Kind: kind, Burstiness: burstiness, Rate: rate, N: n}
	return a, fillDrawn(&a, offsets)
}

// fillDrawn sets the drawn-schedule figures of a from its offsets.
func fillDrawn(a *Arrival, offsets []time.Duration) error {
	gaps := diffs(offsets)
	c, err := arrival.Check(gaps, a.Kind, a.Rate, a.Burstiness)
	if err != nil {
		return err
	}
	span := (offsets[len(offsets)-1] - offsets[0]).Seconds()
	a.DrawnRate = float64(len(gaps)) / span
	se := c.WantCV * c.WantMean / math.Sqrt(float64(c.N))
	a.Z = (c.WantMean - c.Mean) / se // positive: drawn faster than requested
	a.KS, a.KSP, a.CV, a.WantCV = c.KS, c.KSPValue, c.CV, c.WantCV
	return nil
}

func diffs(ts []time.Duration) []time.Duration {
	g := make([]time.Duration, 0, len(ts))
	for i := 1; i < len(ts); i++ {
		g = append(g, ts[i]-ts[i-1])
	}
	return g
}

// sentArrival sends ArrivalCount arrivals of the process at rate with
// llmprobe sweep (unscaled: the process's own schedule) and compares the
// drawn and the actual send times.
func (b *bench) sentArrival(ctx context.Context, kind string, burstiness, rate float64) (Arrival, error) {
	name := fmt.Sprintf("arrival-%s%g-r%g", kind, burstiness, rate)
	r, _, err := b.sweepRun(ctx, name, "--rates="+strconv.FormatFloat(rate, 'f', -1, 64),
		"--num-prompts="+strconv.Itoa(b.o.ArrivalCount), "--unscaled-arrivals", "--arrival="+kind,
		"--burstiness="+strconv.FormatFloat(burstiness, 'f', -1, 64), "--max-send-lag=1s")
	if err != nil {
		return Arrival{}, err
	}
	recs := slices.Clone(r.records)
	slices.SortFunc(recs, func(x, y record) int { return x.Scheduled.Compare(y.Scheduled) })
	sched := make([]time.Duration, len(recs))
	sent := make([]time.Duration, len(recs))
	for i := range recs {
		sched[i] = recs[i].Scheduled.Sub(recs[0].Scheduled)
		sent[i] = recs[i].Sent.Sub(recs[0].Sent)
	}
	slices.Sort(sent)
	a := Arrival{Kind: kind, Burstiness: burstiness, Rate: rate, N: len(recs), Sent: true,
		SendLagP99: r.step.Stats.SendLag.P99}
	if len(recs) < 3 {
		return a, fmt.Errorf("%s: %d records", name, len(recs))
	}
	if err := fillDrawn(&a, sched); err != nil {
		return a, err
	}
	a.AchievedRate = float64(len(recs)-1) / (sent[len(sent)-1] - sent[0]).Seconds()
	a.AchievedDev = 100 * (a.AchievedRate/a.DrawnRate - 1)
	if c, err := arrival.Check(diffs(sent), kind, rate, burstiness); err == nil {
		a.SentKSP, a.SentCV = c.KSPValue, c.CV
	}
	return a, nil
}

// daemon measures `llmprobe serve` with DaemonTargets targets of one slow
// probe each against the simulator.
func (b *bench) daemon(ctx context.Context) error {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "targets:\n")
	for i := range b.o.DaemonTargets {
		fmt.Fprintf(&cfg, `  - name: t%d
    base_url: %s
    probes:
      - name: p
        rate: %g
        arrival: poisson
        workload:
          input_tokens: {dist: fixed, value: %d}
          output_tokens: {dist: fixed, value: %d}
`, i, b.base, b.o.DaemonRate, b.o.InputTokens, b.o.Tokens)
	}
	path := filepath.Join(b.o.Dir, "daemon.yml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	c, err := start("serve", b.o.Exe, b.rep.Placement.ProberCPU, filepath.Join(b.o.Dir, "serve.log"), b.o.Env,
		"serve", "--config.file="+path, "--web.listen-address="+addr, "--log.level=warn")
	if err != nil {
		return err
	}
	defer func() {
		c.stop(15 * time.Second)
		if cpu, ok := c.cpuTime(); ok {
			b.own += cpu
		}
	}()
	if err := waitHTTP(ctx, c, "http://"+addr+"/metrics", 30*time.Second); err != nil {
		return err
	}
	b.progress("daemon: %d targets x 1 probe at %g req/s; warm-up %s, then %s", b.o.DaemonTargets, b.o.DaemonRate,
		b.o.DaemonWarmup, b.o.DaemonDuration)
	if !sleepCtx(ctx, b.o.DaemonWarmup) {
		return ctx.Err()
	}
	d := &Daemon{Targets: b.o.DaemonTargets, Rate: b.o.DaemonRate}
	req0 := b.daemonRequests(addr)
	cpu0, ok0 := c.cpuTime()
	t0 := time.Now()
	if !sleepCtx(ctx, b.o.DaemonDuration) {
		return ctx.Err()
	}
	cpu1, ok1 := c.cpuTime()
	d.Seconds = time.Since(t0).Seconds()
	rss, peak, okm := procMemory(c.pid())
	d.Requests = b.daemonRequests(addr) - req0
	if ok0 && ok1 && okm {
		d.Measured = true
		d.CPUPct = 100 * (cpu1 - cpu0).Seconds() / d.Seconds
		d.RSSMB, d.PeakMB = float64(rss)/1e6, float64(peak)/1e6
	} else {
		b.note("daemon: RSS and CPU need /proc (Linux); not measured")
	}
	b.rep.Daemon = d
	b.progress("daemon: RSS %.1f MB (peak %.1f), CPU %.2f%% of a core, %.0f requests in %.0fs", d.RSSMB, d.PeakMB, d.CPUPct,
		d.Requests, d.Seconds)
	return nil
}

// daemonRequests sums llmprobe_requests_total on the daemon's /metrics.
func (b *bench) daemonRequests(addr string) float64 {
	resp, err := b.hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	var sum float64
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "llmprobe_requests_total{") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
