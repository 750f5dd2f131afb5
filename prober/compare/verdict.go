package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/slo"
)

// Status is the state of one rule or figure.
type Status string

// Rule and figure statuses.
const (
	StatusOK          Status = "ok"
	StatusFailed      Status = "failed"
	StatusNotRecorded Status = "not-recorded"
	// StatusUndecided is a figure's whose interval reaches its limit
	// without showing a regression beyond it: the evidence decides
	// neither way (Figure.NeedPerSide estimates what would).
	StatusUndecided Status = "undecided"
)

// Outcomes of a comparison (Verdict.Outcome) and of a single-input check.
const (
	OutcomePass         = "pass"
	OutcomeFail         = "fail"
	OutcomeInconclusive = "inconclusive"
)

// Exit codes of compare and analyze.
const (
	ExitPass         = 0
	ExitFail         = 1
	ExitBadInput     = 2
	ExitInconclusive = 3
)

// Validity limits of the comparison rules.
const (
	// MaxCountDiff is the largest relative difference of the sides'
	// success counts at a level.
	MaxCountDiff = 0.05
	// KSAlpha and KSMinD: output-token distributions differ when the
	// Kolmogorov–Smirnov test rejects at KSAlpha and the distance exceeds
	// KSMinD (so that a trivial difference over huge samples is not
	// flagged).
	KSAlpha = 0.01
	KSMinD  = 0.05
	// MaxFinishTVD is the largest total-variation distance of the sides'
	// finish-reason shares.
	MaxFinishTVD = 0.05
)

// Rule names, in report order.
const (
	RuleFingerprint  = "fingerprint"
	RuleSuccess      = "success counts"
	RuleOutputTokens = "output tokens"
	RuleFinish       = "finish reasons"
	RuleErrors       = "error classes"
	RuleClient       = "client not saturated"
	RuleIdle         = "idle proof"
	RuleRounds       = "rounds valid"
	RuleSamples      = "samples per percentile"
	RuleSummaries    = "summaries match samples"
	RuleSpread       = "spread between rounds"
)

// Rule is one validity rule's outcome.
type Rule struct {
	Name   string `json:"rule"`
	Status Status `json:"status"`
	// Detail says what was seen; Next, for a rule that is not ok, the
	// evidence to add.
	Detail string `json:"detail"`
	Next   string `json:"next,omitempty"`
}

// Figure is one compared figure at one level.
type Figure struct {
	// Name is the threshold's name ("tpot_p99"), Level the level label.
	Name  string `json:"figure"`
	Level string `json:"level"`
	// Status: ok (the whole interval lies below the limit), failed (a
	// regression beyond the limit: the interval excludes no change and the
	// change is beyond the limit), undecided (the interval reaches the
	// limit without such a regression), not-recorded (it could not be
	// computed).
	Status Status `json:"status"`
	// Unit is "ms" or "req/s".
	Unit string `json:"unit"`
	// Baseline and Candidate are the figure over each side's rounds pooled;
	// Change is (candidate - baseline) / baseline and CILo, CIHi its
	// interval (Conf, two-level bootstrap: rounds, then requests).
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	Change    float64 `json:"change"`
	CILo      float64 `json:"ci_lo"`
	CIHi      float64 `json:"ci_hi"`
	Conf      float64 `json:"conf"`
	// Limit is the largest regression allowed (a fraction).
	Limit float64 `json:"limit"`
	// BaselineRounds and CandidateRounds are the figure of each round.
	BaselineRounds  []float64 `json:"baseline_rounds"`
	CandidateRounds []float64 `json:"candidate_rounds"`
	// NBaseline and NCandidate are the samples (requests) behind it.
	NBaseline  int `json:"n_baseline"`
	NCandidate int `json:"n_candidate"`
	// NeedPerSide, for an undecided figure, estimates the requests per
	// side that would decide it (0: none, or no amount of the same
	// evidence would: evidenceToDecide).
	NeedPerSide int `json:"need_per_side,omitempty"`
	// Detail says it in words.
	Detail string `json:"detail"`
}

// Verdict is the outcome of a comparison.
type Verdict struct {
	// Outcome is OutcomePass, OutcomeFail or OutcomeInconclusive.
	Outcome string `json:"verdict"`
	// Rules are the validity rules, Fields the fingerprint fields, Figures
	// the compared figures.
	Rules   []Rule      `json:"rules"`
	Fields  []FieldDiff `json:"fingerprint"`
	Figures []Figure    `json:"figures"`
	// Reasons explain the outcome (each regression for a fail; each rule
	// not ok for an inconclusive verdict); Missing lists the evidence still
	// to add.
	Reasons []string `json:"reasons"`
	Missing []string `json:"missing"`
	// Quality is the quality section (compare --answer-checks; nil: no
	// check set was run).
	Quality *Quality `json:"quality,omitempty"`
	// Energy is the joules per good output token of both sides at each
	// level, reported beside the figures and never judged (energy.go);
	// absent in a result.json written before it was.
	Energy []Energy `json:"energy,omitempty"`
	// ServerTiming is both sides' TTFT split (server queue, server TTFT,
	// client overhead) at each level, reported beside the figures and
	// never judged (servertiming.go); absent in a result.json written
	// before it was.
	ServerTiming []ServerTiming `json:"server_timing,omitempty"`
}

// ExitCode is the process exit code of the verdict: pass 0, fail 1,
// inconclusive 3.
func (v *Verdict) ExitCode() int {
	switch v.Outcome {
	case OutcomePass:
		return ExitPass
	case OutcomeFail:
		return ExitFail
	}
	return ExitInconclusive
}

// Options configure Compare.
type Options struct {
	// Thresholds are the compared figures (ParseThresholds). A goodput
	// figure needs SLO.
	Thresholds []Threshold
	// Vary names the fingerprint fields allowed to differ (DefaultVary when
	// nil).
	Vary []string
	// SLO decides which requests are good (goodput).
	SLO slo.SLO
	// Iters, Conf and Seed tune the bootstrap (DefaultIters, DefaultConf,
	// 0).
	Iters int
	Conf  float64
	Seed  uint64
	// Z, when > 0, is a sequential look's boundary (Boundaries): each
	// interval is the bootstrap's at Conf widened around the change by
	// Z / ZOfConf(Conf), a two-sided level of ConfOfZ(Z) (Figure.Conf).
	// 0: the bootstrap's interval at Conf as it is (one look).
	Z float64
	// ZPass, when > 0 with Z, is the pass decision's boundary: the
	// interval's worse end (a latency's upper, a rate's lower) is widened
	// by ZPass / ZOfConf(Conf) instead, its better end by Z; the two ends
	// are then one-sided bounds at the two decisions' levels (PassAlpha,
	// SeqAlpha) and Figure.Conf their joint two-sided level.
	ZPass float64
	// Reruns names the rounds rerun because their client was flagged
	// ("round 2 (candidate) rerun: ..."; Procedure.Run), for the client
	// rule's detail.
	Reruns []string

	// prices are the baseline's and the candidate's CostPerHour (Compare
	// sets them from the evidence).
	prices [2]float64
}

// level is one level's steps of both sides.
type level struct {
	label string
	b, c  []*Step
}

// Compare applies every validity rule to the evidence of baseline and
// candidate and compares each threshold's figure at every level both sides
// ran. The verdict is inconclusive when a rule failed or is not recorded,
// or a figure is not recorded (listing what to add); else fail when a
// figure regressed beyond its limit with an interval that excludes no
// change; else inconclusive when a figure's interval reaches its limit
// (undecided: the evidence cannot rule out a regression beyond it; Missing
// estimates the requests per side that would decide); pass only when
// every figure's whole interval lies below its limit.
func Compare(baseline, candidate *Evidence, o Options) *Verdict {
	if o.Vary == nil {
		o.Vary = DefaultVary
	}
	if o.Iters <= 0 {
		o.Iters = DefaultIters
	}
	if !(o.Conf > 0 && o.Conf < 1) {
		o.Conf = DefaultConf
	}
	o.prices = [2]float64{baseline.CostPerHour, candidate.CostPerHour}
	v := &Verdict{Rules: []Rule{}, Figures: []Figure{}, Reasons: []string{}, Missing: []string{}}
	levels, only := pairLevels(baseline, candidate)

	v.Fields = DiffFields(baseline.Fields, candidate.Fields, o.Vary)
	v.Rules = applyRules(&ruleEvidence{levels: levels, only: only, fields: v.Fields, vary: o.Vary, ths: o.Thresholds, reruns: o.Reruns})

	for i, l := range levels {
		for j, t := range o.Thresholds {
			v.Figures = append(v.Figures, compareFigure(l, t, o, o.Seed+uint64(i*len(o.Thresholds)+j)))
		}
		v.Energy = append(v.Energy, compareEnergy(l, o, o.Seed^energySeed+uint64(3*i)))
		v.ServerTiming = append(v.ServerTiming, compareServerTiming(l))
	}

	inconclusive := false
	for _, r := range v.Rules {
		if r.Status == StatusOK {
			continue
		}
		inconclusive = true
		v.Reasons = append(v.Reasons, r.Name+" "+string(r.Status)+": "+r.Detail)
		addMissing(v, r.Next)
	}
	if len(levels) == 0 {
		inconclusive = true
		v.Reasons = append(v.Reasons, "no level was measured on both sides")
	}
	regressed, undecided, notRecorded := figureReasons(v, o)
	if len(notRecorded) > 0 {
		inconclusive = true
		v.Reasons = append(v.Reasons, notRecorded...)
	}
	switch {
	case inconclusive || len(regressed) == 0 && len(undecided) > 0:
		v.Outcome = OutcomeInconclusive
		// Regressions seen on invalid evidence are still worth reading.
		for _, r := range regressed {
			v.Reasons = append(v.Reasons, "regression on evidence that is not valid: "+r)
		}
		v.Reasons = append(v.Reasons, undecided...)
		if need, names := evidenceNeeded(v.Figures); need > 0 {
			addMissing(v, fmt.Sprintf("about %d requests per side, all rounds together, to decide %s (raise --num-prompts or, "+
				"surer, --rounds: the spread between rounds narrows only with more rounds)", need, names))
		}
		if undecidedWithout(v.Figures) {
			addMissing(v, "more rounds per side (--rounds): an undecided figure's change rests on one round, or sits so close "+
				"to its limit that more requests alone do not decide it")
		}
	case len(regressed) > 0:
		v.Outcome = OutcomeFail
		v.Reasons = append(v.Reasons, regressed...)
	default:
		v.Outcome = OutcomePass
		v.Reasons = append(v.Reasons, "every rule holds and every figure's interval lies below its limit")
	}
	return v
}

// figureReasons adds the evidence to add for each figure that is not
// recorded and returns the regressions, the undecided figures and those
// not recorded, in words.
func figureReasons(v *Verdict, o Options) (regressed, undecided, notRecorded []string) {
	for _, f := range v.Figures {
		switch f.Status {
		case StatusNotRecorded:
			notRecorded = append(notRecorded, f.Name+" @ "+f.Level+" not-recorded: "+f.Detail)
			next := "per-request samples of both sides (llmprobe records.jsonl, or vllm bench serve --save-detailed)"
			switch {
			case f.Name == FigureGoodput && o.SLO.IsZero():
				next = "an SLO (--goodput) to count good requests"
			case f.Name == FigureCost && !(o.prices[0] > 0 && o.prices[1] > 0):
				next = "the price per hour of both sides (--cost-per-hour, or --baseline-cost-per-hour and --candidate-cost-per-hour)"
			case f.Name == FigureEnergy:
				next = "the GPU energy of both sides (--baseline-gpu-metrics-url and --candidate-gpu-metrics-url: each side's DCGM exporter)"
			}
			addMissing(v, next)
		case StatusUndecided:
			undecided = append(undecided, f.Name+" @ "+f.Level+" "+f.Detail)
		case StatusFailed:
			regressed = append(regressed, f.Name+" @ "+f.Level+": "+f.Detail)
		}
	}
	return regressed, undecided, notRecorded
}

// evidenceNeeded is the largest estimate of the undecided figures (0 when
// none has one) and their names.
func evidenceNeeded(figs []Figure) (need int, names string) {
	var ns []string
	for _, f := range figs {
		if f.Status == StatusUndecided && f.NeedPerSide > 0 {
			need = max(need, f.NeedPerSide)
			ns = append(ns, f.Name+" @ "+f.Level)
		}
	}
	return need, strings.Join(ns, ", ")
}

// undecidedWithout reports whether an undecided figure has no estimate of
// the requests that would decide it.
func undecidedWithout(figs []Figure) bool {
	for _, f := range figs {
		if f.Status == StatusUndecided && f.NeedPerSide == 0 {
			return true
		}
	}
	return false
}

func addMissing(v *Verdict, next string) {
	if next != "" && !slices.Contains(v.Missing, next) {
		v.Missing = append(v.Missing, next)
	}
}

// pairLevels groups both sides' steps by level label, in the baseline's
// order; only lists the labels of one side. When each side ran exactly one
// level under different labels, those are paired (the fingerprint rule then
// names the rate).
func pairLevels(b, c *Evidence) (levels []level, only []string) {
	bl, cl := labels(b), labels(c)
	if len(bl) == 1 && len(cl) == 1 && bl[0] != cl[0] {
		l := level{label: bl[0] + " vs " + cl[0]}
		for i := range b.Steps {
			l.b = append(l.b, &b.Steps[i])
		}
		for i := range c.Steps {
			l.c = append(l.c, &c.Steps[i])
		}
		return []level{l}, nil
	}
	for _, lab := range bl {
		if !slices.Contains(cl, lab) {
			only = append(only, lab+" (baseline only)")
			continue
		}
		l := level{label: lab}
		for i := range b.Steps {
			if b.Steps[i].Label == lab {
				l.b = append(l.b, &b.Steps[i])
			}
		}
		for i := range c.Steps {
			if c.Steps[i].Label == lab {
				l.c = append(l.c, &c.Steps[i])
			}
		}
		levels = append(levels, l)
	}
	for _, lab := range cl {
		if !slices.Contains(bl, lab) {
			only = append(only, lab+" (candidate only)")
		}
	}
	return levels, only
}

func labels(e *Evidence) []string {
	var out []string
	for _, s := range e.Steps {
		if !slices.Contains(out, s.Label) {
			out = append(out, s.Label)
		}
	}
	return out
}
