package sweep

import (
	"math"
	"time"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// ResultSchemaVersion is the version of result.json's llmprobe extras. 2:
// knee.level only when found, knee.bracket_low and bracket_high, a step's
// search verdict (DecodeResult reads 1 too).
const ResultSchemaVersion = 2

// Step is one measured step: one level, one round (result.json: one of
// "steps", stepKeys in resultjson.go).
type Step struct {
	// Index is the step's position in run order (0-based); Label names it
	// ("rate=4", "rate=inf", "concurrency=8"), with "/round=N" when the
	// sweep has several rounds.
	Index int
	Label string
	// Level is the requested rate (req/s; +Inf for a burst) or the
	// concurrency; Round counts from 1.
	Level float64
	Round int
	// Attempt counts the runs of this level and round from 1: the knee
	// search reruns a level that came out invalid.
	Attempt int
	// Mode is the step's load mode (ModeOpen, ModeClosed, ModeBoth,
	// ModeBurst).
	Mode string
	// Concurrency is the closed-loop level; MaxConcurrency the open-loop
	// cap (0 = none).
	Concurrency    int
	MaxConcurrency int
	// Start and End are the UTC wall-clock window of the measured part.
	Start time.Time
	End   time.Time
	// Warmups is the number of warmup requests sent and WarmupFailed how
	// many of them failed.
	Warmups      int
	WarmupFailed int
	// PrefixGeneration numbers the step's shared prefix: 0 for the sweep's
	// one prefix, a new number per step with --fresh-prefix.
	PrefixGeneration uint64
	// DistinctPrompts is the number of distinct prompts among the step's
	// measured requests, as the workload generator counted them
	// (workload.Generator.DistinctPrompts); it equals Stats.Requests unless
	// prompts repeated (inputs too short for a full nonce). 0 in a result
	// written before it was recorded.
	DistinctPrompts int64
	// Stats are the client-side statistics, Server the server-side deltas,
	// Validity the verdict.
	Stats    Stats
	Server   ServerStats
	Validity Validity
	// Interrupted is true when the step was cut short.
	Interrupted bool
	// Search is what the adaptive search made of the step's run (nil for
	// a ladder): result.json's "search".
	Search *StepVerdict
	// MultiTurn is what a multi-turn step's sessions did (nil for a
	// single-turn workload): result.json's "multi_turn".
	MultiTurn *MultiTurnStats
	// Trace compares a trace replay's achieved send times with the
	// trace's (nil unless --trace): result.json's "trace".
	Trace *TraceTiming
	// Background is what a background sweep's step measured of the
	// server's production traffic (nil for an isolated sweep):
	// result.json's "background".
	Background *StepBackground
	// Energy is the step's GPU energy (energy.go): result.json's "energy".
	Energy *StepEnergy
}

// StepVerdict is the adaptive search's verdict on one run of a level.
type StepVerdict struct {
	// Verdict is a Verdict* constant (VerdictPass, VerdictTooShort, ...).
	Verdict string `json:"verdict"`
	// Why says why, in words (and, for a too-short run, how long its rerun
	// is); empty for a plain pass.
	Why string `json:"why,omitempty"`
}

// Spread summarizes one figure over the rounds of a level.
type Spread struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Std  float64 `json:"std"`
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := Spread{Mean: stats.Mean(xs), Std: stats.Std(xs), Min: xs[0], Max: xs[0]}
	for _, x := range xs {
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	return s
}

// Level aggregates the rounds of one level for the knee (result.json: one
// of "levels", levelKeys in resultjson.go).
type Level struct {
	Label string
	Level float64
	// Rounds is the number of rounds run, ValidRounds how many were valid.
	Rounds      int
	ValidRounds int
	// Goodput, Throughput, TTFTP99MS and TPOTP99MS spread over the valid
	// rounds (over all rounds when none was valid).
	Goodput    Spread
	Throughput Spread
	TTFTP99MS  Spread
	TPOTP99MS  Spread
	// KneeGoodput and GoodputRatio spread the figures the knee uses (see
	// Stats.GoodputRatio).
	KneeGoodput  Spread
	GoodputRatio Spread
	// Passes says whether the level kept up: valid, every valid round's SLO
	// p99s held, and mean goodput >= 90 % of the offered rate.
	Passes bool
	// Outcome is what the knee logic saw.
	Outcome StepOutcome
}

// aggregate builds the Level of a level's rounds: the spread of its
// figures over the valid rounds and the outcome the knee logic sees (a
// burst level is never valid for the knee).
func aggregate(label string, level float64, mode string, rounds []*Step, ratio float64) Level {
	l := Level{Label: label, Level: level, Rounds: len(rounds)}
	use := make([]*Step, 0, len(rounds))
	for _, s := range rounds {
		if s.Validity.Valid {
			use = append(use, s)
		}
	}
	l.ValidRounds = len(use)
	if len(use) == 0 {
		use = rounds
	}
	var good, tp, ttft, tpot, kgood, ktp, ratios []float64
	held := true
	requests, samples, need := 0, 0, 0
	for i, s := range use {
		if i == 0 || s.Stats.Requests < requests {
			requests = s.Stats.Requests
		}
		if n, ok := s.Stats.sloSamples(); ok {
			if need == 0 || n < samples {
				samples = n
			}
			need = MinSLOSamples
		}
		good = append(good, s.Stats.RequestGoodput)
		tp = append(tp, s.Stats.RequestThroughput)
		ttft = append(ttft, s.Stats.TTFT.P99)
		tpot = append(tpot, s.Stats.TPOT.P99)
		kgood = append(kgood, s.Stats.KneeGoodput)
		ktp = append(ktp, s.Stats.KneeThroughput)
		ratios = append(ratios, s.Stats.GoodputRatio)
		held = held && s.Stats.SLOHeld
	}
	l.Goodput, l.Throughput = spreadOf(good), spreadOf(tp)
	l.TTFTP99MS, l.TPOTP99MS = spreadOf(ttft), spreadOf(tpot)
	l.KneeGoodput, l.GoodputRatio = spreadOf(kgood), spreadOf(ratios)
	// The knee compares the goodput ratio with the required ratio: Offered
	// is the level scaled so that Goodput/Offered is the mean ratio. A
	// shard of a sharded sweep sent its share of the level (Stats
	// RequestedRate = level / shard count): it is judged on that share,
	// as its served throughput is its share's (issue 22 V5).
	offered := level * shareOf(use, level)
	l.Outcome = StepOutcome{
		Level:           level,
		Offered:         offered,
		Goodput:         l.GoodputRatio.Mean * offered,
		Throughput:      spreadOf(ktp).Mean,
		Served:          l.Throughput.Mean,
		Requests:        requests,
		Samples:         samples,
		NeedSamples:     need,
		SLOHeld:         held,
		Valid:           l.ValidRounds > 0 && !math.IsInf(level, 1),
		MeasuredGoodput: l.Goodput.Mean,
	}
	if !l.Outcome.Valid && len(rounds) > 0 {
		last := rounds[len(rounds)-1]
		for i, f := range last.Validity.Flags {
			l.Outcome.Invalid = append(l.Outcome.Invalid, f+": "+last.Validity.Reasons[i])
		}
		if math.IsInf(level, 1) {
			l.Outcome.Invalid = append(l.Outcome.Invalid, "burst: rate inf is not an open loop")
		}
	}
	if mode == ModeClosed {
		// The served-throughput rule does not apply: the offered rate is
		// what was served.
		l.Outcome.Offered, l.Outcome.Served = l.Throughput.Mean, 0
		l.Outcome.Goodput = l.Goodput.Mean
		l.Outcome.Throughput = l.Throughput.Mean
	}
	l.Passes = l.Outcome.Passes(ratio)
	return l
}

// shareOf is the share of level the rounds were sent at: their requested
// rate over the level when that is below it (a shard's rate / shard count),
// else 1 (an unsharded or merged sweep, a closed loop, a burst).
func shareOf(rounds []*Step, level float64) float64 {
	if len(rounds) == 0 || !(level > 0) || math.IsInf(level, 1) {
		return 1
	}
	if r := rounds[0].Stats.RequestedRate; r > 0 && r < level {
		return r / level
	}
	return 1
}

// Result is result.json: the sweep's settings, every step, the levels and
// the knee. Its codec is the tables of resultjson.go (MarshalJSON,
// DecodeResult).
type Result struct {
	// Date, Backend, ModelID and TokenizerID are vllm bench serve's
	// identification keys, shared by every step; Metadata holds the
	// --metadata pairs, written in MetadataOrder.
	Date          string
	Backend       string
	ModelID       string
	TokenizerID   string
	Metadata      map[string]string
	MetadataOrder []string
	// Mode, Arrival, Burstiness, Rates (as given), SLO (ms by vLLM key)
	// and Percentiles restate the settings.
	Mode        string
	Arrival     string
	Burstiness  float64
	Rates       string
	SLO         map[string]float64
	Percentiles []float64
	// Steps in run order, Levels sorted by level, and the Knee.
	Steps  []*Step
	Levels []Level
	Knee   Knee
	// KneeUnit is "req/s" or "concurrency".
	KneeUnit string
	// Complete is false for an interrupted sweep.
	Complete bool
	// Notes are sentences for the reader (warnings such as the burst
	// warning, or why the knee could not be decided).
	Notes []string
	// Probe is the throughput probe that chose the adaptive search's first
	// rate (nil when none ran); SearchEnd says why the search ended
	// (SearchBracketed, SearchMaxSteps, ...; "" for a ladder).
	Probe     *ThroughputProbe
	SearchEnd string
	// ReferenceCapacity is Config.ReferenceCapacity (0: not written).
	ReferenceCapacity float64
	// CostPerHour is Config.CostPerHour, the price in USD per hour
	// (result.json cost_per_hour_usd; 0: no price, not written).
	CostPerHour float64
	// SweepMode is Config.SweepMode (result.json sweep_mode; "" for an
	// isolated sweep: not written) and Background a background sweep's
	// knee in total requests/s (result.json background; nil otherwise).
	SweepMode  string
	Background *BackgroundKnee
	// PromptNonce is the nonce the prompt texts were drawn with
	// (Config.PromptNonce, or the one Prepare drew; result.json
	// prompt_nonce; 0 for a dataset, whose texts are the file's).
	PromptNonce int64
	// Answers are the answer checks sent after the last step
	// (Config.AnswerChecks; result.json answers; nil: none were sent).
	Answers *Answers

	// The fields below are not written to result.json (the manifest and
	// the command line hold them); reports read them.

	// Name is Config.Name (--name).
	Name string
	// InterruptedReason says why an incomplete sweep stopped ("" when
	// complete), as in manifest.json.
	InterruptedReason string
	// MaxConcurrency is the open loop's concurrency cap (0: none, and
	// always 0 in closed-loop mode).
	MaxConcurrency int
	// Rounds is Config.Rounds.
	Rounds int
	// Fingerprint is the experiment fingerprint, as in manifest.json.
	Fingerprint fingerprint.Fingerprint

	// Dataset describes the workload's dataset as measured at preflight
	// (nil for a drawn workload): result.json "dataset", the entries'
	// input and output token distributions beside the steps' server-
	// reported ones. It holds no prompt text.
	Dataset *workload.DatasetInfo
}
