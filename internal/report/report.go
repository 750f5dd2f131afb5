// Package report turns a finished (or interrupted) sweep into what people
// read: analysis.md (fingerprint summary, per-step table, spread over
// rounds, validity, knee and
// max goodput, latency and token distributions, server-side deltas,
// "not-recorded" explanations and a plain verdict), the SVG plots beside it
// (goodput.svg, latency.svg, drawn with gonum/plot), the terminal table, and
// a progress reporter for steps in flight.
//
// Its input is plain data defined here (Sweep, Step, ...), filled by the
// sweep engine from its own results; the package computes nothing that the
// sweep decides (statistics, validity, the knee) and only words and draws
// it. Latencies are in milliseconds, rates in requests per second.
package report

import (
	"math"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/fingerprint"
)

// Load modes of a Sweep.
const (
	ModeOpen   = "open"   // open loop: an arrival process at each rate
	ModeClosed = "closed" // closed loop: N requests always in flight
	ModeBoth   = "both"   // open loop capped by a max concurrency
	ModeBurst  = "burst"  // rate inf: every request at once
)

// Idle proof statuses of a Step (the same words the sweep uses).
const (
	IdleProven      = "idle"
	IdleNotIdle     = "not-idle"
	IdleNotRecorded = fingerprint.NotRecorded
)

// DefaultGoodputRatio is the fraction of the offered rate a step's goodput
// must reach to count as keeping up, when Sweep.GoodputRatio is zero.
const DefaultGoodputRatio = 0.9

// Sweep is everything the report shows about one sweep.
type Sweep struct {
	// Name is the run name (--name).
	Name string
	// Fingerprint is the experiment fingerprint, as in manifest.json.
	Fingerprint fingerprint.Fingerprint
	// Mode is ModeOpen, ModeClosed, ModeBoth or ModeBurst. In ModeClosed a
	// step's level is its Concurrency, otherwise its Rate.
	Mode string
	// SLO holds the --goodput thresholds (zero = not set).
	SLO SLO
	// GoodputRatio is the knee rule's ratio; 0 means DefaultGoodputRatio.
	GoodputRatio float64
	// Steps in run order.
	Steps []Step
	// Knee is the sweep's knee decision.
	Knee Knee
	// Complete is false for an interrupted sweep; InterruptedReason says why.
	Complete          bool
	InterruptedReason string
	// Notes are extra lines for the reader (warnings such as "rate inf is a
	// burst, not an open loop"), shown under the verdict.
	Notes []string
	// MaxConcurrency is the open loop's concurrency cap (--max-concurrency
	// with --rates; 0 = none): the tables then show client queue time.
	MaxConcurrency int
	// Probe is the throughput probe before an adaptive search (nil when
	// none ran).
	Probe *Probe
	// ReferenceCapacity is a capacity known independently of the sweep, in
	// req/s (the built-in simulator's, from its parameters); 0 = unknown.
	// The verdict and the table compare the knee with it.
	ReferenceCapacity float64
	// Spread holds, sorted by level, the spread over rounds of every level
	// run more than once with --rounds; empty with one round (analysis.md
	// and the table then show no spread).
	Spread []LevelSpread
}

// MaxReproducibleSpread is the relative spread (see Range.Rel) of TTFT p99
// or goodput over a level's rounds above which the report warns that the
// level is not reproducible at the sweep's step length.
const MaxReproducibleSpread = 0.10

// LevelSpread is the spread of one level's figures over its rounds.
type LevelSpread struct {
	// Level is the rate in req/s (+Inf for a burst), or the concurrency in
	// ModeClosed.
	Level float64
	// Rounds counts the steps run at the level (reruns of an invalid level
	// included); Used those the ranges are over: the valid ones, or every
	// one when none was valid (Valid is then false).
	Rounds int
	Used   int
	Valid  bool
	// Ranges over the Used steps: request throughput and goodput (vLLM's
	// request_goodput) in req/s, TTFT and TPOT p99 in ms.
	Throughput Range
	Goodput    Range
	TTFTP99    Range
	TPOTP99    Range
}

// Range is the minimum, median and maximum of one figure over rounds.
type Range struct {
	Min    float64
	Median float64
	Max    float64
}

// Rel returns the relative spread (Max − Min) / Median; NaN when the
// median is 0.
func (r Range) Rel() float64 {
	if r.Median == 0 {
		return math.NaN()
	}
	return (r.Max - r.Min) / math.Abs(r.Median)
}

// Probe is the closed-loop throughput probe that chose an adaptive
// search's first rate.
type Probe struct {
	// EstimateReqPerS is the highest throughput measured (0: none);
	// StartRate the search's first rate; Note why the probe stopped.
	EstimateReqPerS float64
	StartRate       float64
	Note            string
	// Levels are the closed loops run, in order.
	Levels []ProbeLevel
}

// ProbeLevel is one closed loop of the throughput probe.
type ProbeLevel struct {
	Concurrency int
	Completed   int
	Failed      int
	// ThroughputReqPerS is completed / duration; MeanE2ELMS the mean
	// latency; MaxWaiting the server's most waiting requests.
	ThroughputReqPerS float64
	MeanE2ELMS        float64
	MaxWaiting        Value
}

// SLO holds latency thresholds in milliseconds; zero means not set.
type SLO struct {
	TTFTMS float64
	TPOTMS float64
	E2ELMS float64
}

// Set reports whether any threshold is set.
func (s SLO) Set() bool { return s.TTFTMS > 0 || s.TPOTMS > 0 || s.E2ELMS > 0 }

// Knee is the knee decision. Its fields are those of prober/sweep.Knee, in
// the same order, so that one converts to the other. A level is a rate in
// req/s, or a concurrency in ModeClosed.
type Knee struct {
	// Found is true when the knee is bracketed: Level passed and Upper, the
	// next valid level, failed. With Found false, a Level above 0 is a lower
	// bound (everything passed) and 0 means no level passed.
	Found bool
	Level float64
	Upper float64
	// MaxGoodput is the highest goodput of any valid step (req/s), reached
	// at MaxGoodputLevel.
	MaxGoodput      float64
	MaxGoodputLevel float64
	// NonMonotonic is true when a level above the first failure passed again.
	NonMonotonic bool
	// Reason says how the knee was decided.
	Reason string
	// Stop says why an adaptive search ended early (empty otherwise).
	Stop string
}

// Step is one measured step (one level, one round).
type Step struct {
	// Index is the 0-based run order; Label names the step ("rate=4").
	Index int
	Label string
	// Round is the 1-based repetition of this level (0 or 1 for a single round).
	Round int
	// Attempt counts runs of this level and round from 1 (the knee search
	// reruns an invalid level); 0 or 1 for the first.
	Attempt int
	// Rate is the requested rate in req/s (+Inf for a burst, 0 in closed
	// loop); Concurrency the closed-loop level or the max concurrency (0 =
	// none); AchievedRate the rate of the actual sends.
	Rate         float64
	Concurrency  int
	AchievedRate float64
	// Start and End are the step's UTC wall-clock window; Duration its
	// benchmark duration in seconds.
	Start    time.Time
	End      time.Time
	Duration float64
	// Completed and Failed count requests; FailedByClass splits Failed by
	// error class.
	Completed     int
	Failed        int
	FailedByClass map[string]int
	// Throughputs in req/s and tokens/s. Goodput is vllm bench serve's
	// request_goodput (good requests per second of the step's duration).
	RequestThroughput    float64
	Goodput              float64
	OutputThroughput     float64
	TotalTokenThroughput float64
	// KeepUp is the knee's keep-up ratio (the sweep's goodput_ratio): a
	// level keeps up when it reaches Sweep.GoodputRatio. Shown capped at
	// 100 %.
	KeepUp float64
	// Latency summaries in ms over successful requests; SendLag and
	// QueueTime (the wait for a --max-concurrency slot) over all.
	TTFT      Summary
	TPOT      Summary
	ITL       Summary
	E2EL      Summary
	SendLag   Summary
	QueueTime Summary
	// Token distributions and finish reasons of the step.
	InputTokens           TokenDist
	RequestedOutputTokens TokenDist
	OutputTokens          TokenDist
	FinishReasons         map[string]int
	// SLOChecks compares each SLO's p99 with its threshold.
	SLOChecks []SLOCheck
	// Valid is false when a validity check excluded the step from the knee;
	// Invalid then holds one reason per failed check
	// ("client-saturated: send-lag p99 23 ms > 10 ms").
	Valid   bool
	Invalid []string
	// Idle is the idle proof before the step: IdleProven, IdleNotIdle or
	// IdleNotRecorded; IdleDetail says what was read or why not.
	Idle       string
	IdleDetail string
	// Server holds the server-side deltas; its zero value is not recorded.
	Server Server
}

// Level returns the step's load level in mode: its Concurrency in
// ModeClosed, its Rate otherwise.
func (st Step) Level(mode string) float64 {
	if mode == ModeClosed {
		return float64(st.Concurrency)
	}
	return st.Rate
}

// Summary describes one latency metric in milliseconds.
type Summary struct {
	N      int
	Mean   float64
	Median float64
	Std    float64
	P50    float64
	P90    float64
	P99    float64
	// P99CILow and P99CIHigh bound a 95 % bootstrap confidence interval of
	// the p99 when N < 100; both 0 when there is none.
	P99CILow  float64
	P99CIHigh float64
}

// MinP99Samples is the sample count below which a p99 is flagged unreliable.
const MinP99Samples = 100

// P99Reliable reports whether the p99 rests on at least MinP99Samples.
func (s Summary) P99Reliable() bool { return s.N >= MinP99Samples }

// TokenDist is a token-count distribution over requests. Its fields are
// those of prober/sweep.TokenDist, in the same order.
type TokenDist struct {
	N    int
	Mean float64
	P10  float64
	P50  float64
	P90  float64
	P99  float64
	Max  float64
}

// SLOCheck is one SLO's p99 against its threshold. Its fields are those of
// prober/sweep.SLOCheck, in the same order.
type SLOCheck struct {
	Metric      string
	ThresholdMS float64
	P99MS       float64
	Held        bool
	Reliable    bool
}

// Value is a number that may not have been recorded; the zero Value is not
// recorded. AtMost marks an upper bound ("≤ V"): a server-side quantile
// that falls into the histogram's first bucket, where interpolation from 0
// says nothing.
type Value struct {
	V      float64
	OK     bool
	AtMost bool
}

// Val returns a recorded Value (NaN and infinities are not recorded).
func Val(v float64) Value { return Value{V: v, OK: !math.IsNaN(v) && !math.IsInf(v, 0)} }

// Server holds the server-side view of a step, from the /metrics snapshots
// before and after it and the scrapes during it. The zero Server is not
// recorded.
type Server struct {
	// Recorded is false when there were no usable snapshots; Reason then
	// says why ("no /metrics at http://...: 404").
	Recorded bool
	Reason   string
	// Counter deltas over the step.
	PromptTokens     Value
	GenerationTokens Value
	Preemptions      Value
	// Prefix-cache hit rates (0..1) over the warmup (cold) and the measured
	// part (warm).
	WarmupPrefixHitRate Value
	PrefixHitRate       Value
	// Maxima seen during the step (KVCacheUsage is 0..1).
	MaxRunning      Value
	MaxWaiting      Value
	MaxKVCacheUsage Value
	// Server-side latency quantiles in ms from histogram deltas; QueueTime
	// is the server's own queue (vllm:request_queue_time_seconds).
	TTFT      Quantiles
	ITL       Quantiles
	E2EL      Quantiles
	QueueTime Quantiles
	// ClientMinusServerTTFTMeanMS is the client's mean TTFT minus the
	// server's (exact, from the histogram sum): the network and front-end
	// share.
	ClientMinusServerTTFTMeanMS Value
}

// Quantiles are server-side latency quantiles and the mean in ms.
type Quantiles struct {
	Mean Value
	P50  Value
	P90  Value
	P99  Value
}

// FileWriter is the part of *artifacts.Run that WriteFiles needs.
type FileWriter interface {
	WriteFile(name string, data []byte) error
}

var _ FileWriter = (*artifacts.Run)(nil)

// WriteFiles renders analysis.md, goodput.svg and latency.svg and writes
// them through w (atomically, with an *artifacts.Run).
func WriteFiles(w FileWriter, s Sweep) error {
	if err := w.WriteFile(artifacts.AnalysisFile, Analysis(s)); err != nil {
		return err
	}
	g, err := GoodputSVG(s)
	if err != nil {
		return err
	}
	if err := w.WriteFile(artifacts.GoodputPlotFile, g); err != nil {
		return err
	}
	l, err := LatencySVG(s)
	if err != nil {
		return err
	}
	return w.WriteFile(artifacts.LatencyPlotFile, l)
}

// ratio returns the knee rule's goodput ratio.
func (s Sweep) ratio() float64 {
	if s.GoodputRatio > 0 {
		return s.GoodputRatio
	}
	return DefaultGoodputRatio
}

// closed reports whether levels are concurrencies.
func (s Sweep) closed() bool { return s.Mode == ModeClosed }

// queued reports whether the tables show client queue time (--rates with
// --max-concurrency).
func (s Sweep) queued() bool { return s.MaxConcurrency > 0 && !s.closed() }

// hasValid reports whether any step is valid (a level the knee could use).
func (s Sweep) hasValid() bool {
	for _, st := range s.Steps {
		if st.Valid {
			return true
		}
	}
	return false
}

// levelText formats a level with its unit: "4 req/s", "concurrency 8".
func (s Sweep) levelText(v float64) string {
	if s.closed() {
		return "concurrency " + num(v)
	}
	if math.IsInf(v, 1) {
		return "rate inf (burst)"
	}
	return num(v) + " req/s"
}
