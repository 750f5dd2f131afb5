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
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/proccpu"
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
	TargetSeedShare       = 0.9  // share of the seeds of a drawn-only law that pass z and KS
	ArrivalSeeds          = 100  // seeds a drawn-only law is drawn with
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
	// Realtime runs the prober and the simulator under `chrt -f 1`
	// (SCHED_FIFO; needs the privilege to) so that other load on the
	// machine cannot delay them: the read-delay tails are then llmprobe's
	// and the runtime's own (--realtime).
	Realtime bool

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
	// Seeds judges a law that was drawn only: over many seeds, not the
	// one above.
	Seeds *SeedSweep `json:"seed_sweep,omitempty"`
}

// SeedSweep is how many of Seeds draws of a process (N arrivals each, seeds
// 1..Seeds) had |z| < TargetZ and a KS p-value above TargetKSP. One draw of
// a random process misses a 5 % test one time in twenty by construction,
// so a law drawn only is judged over many: a sound one passes each test in
// about 95 of 100, and fewer than TargetSeedShare of them (90 %) happens
// about once in a hundred sweeps.
type SeedSweep struct {
	Seeds    int `json:"seeds"`
	ZWithin  int `json:"z_within"`
	KSPassed int `json:"ks_passed"`
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
	self0, _ := proccpu.Used()
	pl := placement(o.Pin, m.Cores)
	pl.Realtime, pl.RealtimeNote = realtime(o.Realtime, pl)
	b := &bench{o: o, hc: &http.Client{Timeout: 5 * time.Second}, started: time.Now(), rep: &Report{
		Start: time.Now().UTC(), Quick: o.Quick, Machine: m, Placement: pl,
		Server: ServerShape{TTFTMS: ms(o.TTFT), GapMS: ms(o.Gap), Tokens: o.Tokens, InputTokens: o.InputTokens},
	}}
	defer b.hc.CloseIdleConnections()
	err := b.run(ctx)
	b.rep.Machine.LoadEnd = loadAverage()
	b.rep.Machine.BusyPct, b.rep.Machine.OthersPct = -1, -1
	busy1, total1, ticksOK1 := cpuTicks()
	self1, _ := proccpu.Used()
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
	b.sim, err = start("simulator", b.rep.Placement.argv(b.rep.Placement.ServerCPU, b.o.Exe,
		"simulate", "--light", "--light.ttft="+b.o.TTFT.String(), "--light.gap="+b.o.Gap.String(),
		"--light.tokens="+strconv.Itoa(b.o.Tokens), "--trace-file="+tracePath, "--web.listen-address="+addr,
		"--log.level=warn"), filepath.Join(b.o.Dir, "simulator.log"), b.rep.Placement.env(b.o.Env))
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
