package compare

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Budget bounds a sequential comparison (compare --budget): the rounds
// are added a look at a time until every figure decides or the next look
// would not fit. Time is the wall time of the rounds (0: no bound);
// Requests the measured requests per side (0: no bound). The zero Budget
// is the fixed design: one look after Procedure.Rounds rounds.
type Budget struct {
	Time     time.Duration
	Requests int
}

// IsZero reports whether b bounds nothing (the fixed design).
func (b Budget) IsZero() bool { return b.Time <= 0 && b.Requests <= 0 }

// String spells b as --budget takes it ("20m0s,2000"; "off").
func (b Budget) String() string {
	var parts []string
	if b.Time > 0 {
		parts = append(parts, b.Time.String())
	}
	if b.Requests > 0 {
		parts = append(parts, fmt.Sprint(b.Requests))
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ",")
}

// DefaultBudget is compare's --budget (the settings table's
// sweep.DefaultCompareBudget).
const DefaultBudget = sweep.DefaultCompareBudget

// ParseBudget reads --budget: "off" (the fixed design), or a duration
// (the rounds' wall time), a count of requests per side, or both, comma
// separated ("20m", "2000", "20m,2000").
func ParseBudget(s string) (Budget, error) {
	var b Budget
	if strings.TrimSpace(s) == "off" {
		return b, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		var n int
		if _, err := fmt.Sscanf(part, "%d", &n); err == nil && fmt.Sprint(n) == part {
			if n < 1 || b.Requests != 0 {
				return b, fmt.Errorf("requests per side must be given once and be >= 1, got %q", part)
			}
			b.Requests = n
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil || d <= 0 || b.Time != 0 {
			return b, fmt.Errorf("want off, a duration (20m), a count of requests per side (2000) or both (20m,2000), got %q", part)
		}
		b.Time = d
	}
	if b.IsZero() {
		return b, fmt.Errorf("want off, a duration, a count of requests per side or both, got %q", s)
	}
	return b, nil
}

// Sequential is the record of a sequential comparison in result.json
// (Result.Sequential): its design and every look.
type Sequential struct {
	// Design is DesignOBF; Alpha the one-sided error of each decision
	// (SeqAlpha).
	// PassAlpha is the pass decision's one-sided error (PassAlpha; 0 in a
	// result.json written before it: Alpha for both).
	Design    string  `json:"design"`
	Alpha     float64 `json:"alpha"`
	PassAlpha float64 `json:"pass_alpha,omitempty"`
	// Budget is --budget as given ("20m0s,2000"); RoundsPerLook the rounds
	// of each look (--rounds); MaxLooks the looks the budget allows,
	// planned after the first look from its requests and wall time.
	Budget        string `json:"budget"`
	RoundsPerLook int    `json:"rounds_per_look"`
	MaxLooks      int    `json:"max_looks"`
	// Looks are the looks taken, in order; Stopped says why there was no
	// other.
	Looks   []Look `json:"looks"`
	Stopped string `json:"stopped"`
}

// Look is one interim analysis of a sequential comparison.
type Look struct {
	Look int `json:"look"`
	// Rounds counts the rounds so far, both sides; NPerSide the fewest
	// measured requests of either side.
	Rounds   int `json:"rounds"`
	NPerSide int `json:"n_per_side"`
	// Fraction is the information fraction (look / MaxLooks; 1 at the
	// final look); Z the boundary (Boundaries) of the fail decision (the
	// interval's better end), ZPass that of the pass decision (its worse
	// end, at PassAlpha), Conf the two-sided level of the intervals at
	// them, Spent the fail decision's alpha spent so far (SpentOBF).
	Fraction float64 `json:"fraction"`
	Z        float64 `json:"z"`
	ZPass    float64 `json:"z_pass,omitempty"`
	Conf     float64 `json:"conf"`
	Spent    float64 `json:"spent_alpha"`
	Final    bool    `json:"final"`
	// Elapsed is the wall time of the rounds so far in seconds.
	Elapsed float64 `json:"elapsed_s"`
	// Outcome is the verdict at this look; Figures each figure's state.
	Outcome string       `json:"verdict"`
	Figures []LookFigure `json:"figures"`
}

// LookFigure is one figure at one look.
type LookFigure struct {
	Name   string  `json:"figure"`
	Level  string  `json:"level"`
	Status Status  `json:"status"`
	Change float64 `json:"change"`
	CILo   float64 `json:"ci_lo"`
	CIHi   float64 `json:"ci_hi"`
}

// FiguresText is each figure's state at the look in a few words:
// "ttft_p99 @ rate=4 undecided +2.0 % [-8.1, +12.6]".
func (l *Look) FiguresText() string {
	parts := make([]string, 0, len(l.Figures))
	for _, f := range l.Figures {
		parts = append(parts, fmt.Sprintf("%s @ %s %s %+.1f %% [%+.1f, %+.1f]", f.Name, f.Level, f.Status, 100*f.Change, 100*f.CILo, 100*f.CIHi))
	}
	return strings.Join(parts, ", ")
}

// fractions are the information fractions of the looks taken.
func (s *Sequential) fractions() []float64 {
	out := make([]float64, len(s.Looks))
	for i, l := range s.Looks {
		out[i] = l.Fraction
	}
	return out
}

// Z is the boundary of the last look (0: none taken), recomputed from the
// looks' fractions, as analyze re-derives it.
func (s *Sequential) Z() float64 {
	if s == nil || len(s.Looks) == 0 {
		return 0
	}
	zs, err := Boundaries(s.fractions(), s.Alpha)
	if err != nil {
		return 0
	}
	return zs[len(zs)-1]
}

// ZPass is the pass decision's boundary at the last look (0: none taken,
// or a result.json written before PassAlpha: the pass decision at Z),
// recomputed from the looks' fractions.
func (s *Sequential) ZPass() float64 {
	if s == nil || len(s.Looks) == 0 || !(s.PassAlpha > 0) {
		return 0
	}
	zs, err := Boundaries(s.fractions(), s.PassAlpha)
	if err != nil {
		return 0
	}
	return zs[len(zs)-1]
}

// apply adds to an inconclusive verdict why the looks stopped (what the
// next evidence is: a larger budget), as Procedure.Run and Reapply do.
func (s *Sequential) apply(v *Verdict) {
	if s == nil || len(s.Looks) == 0 || v.Outcome != OutcomeInconclusive || s.Stopped == "" {
		return
	}
	last := s.Looks[len(s.Looks)-1]
	v.Reasons = append(v.Reasons, fmt.Sprintf("sequential: no decision after look %d (%d requests per side): %s", last.Look, last.NPerSide, s.Stopped))
	if strings.HasPrefix(s.Stopped, stoppedBudget) {
		addMissing(v, "a larger --budget (time, requests per side): the looks stopped at the budget before every figure decided")
	}
}

// Why a sequential comparison took no other look (Sequential.Stopped).
const (
	stoppedDecided = "decided"
	stoppedBudget  = "budget spent: "
	stoppedRule    = "a rule that more rounds do not mend: "
)

// MaxSequentialRounds bounds the rounds of a sequential comparison, both
// sides together (a fixed design is bounded by sweep.MaxRounds): enough
// that the default --budget's time, not the count of rounds, ends a
// comparison of short rounds (the README's --rates 4: about 20 requests
// per round and 6–9 s per round with its warmups and idle proof, so its
// 20 minutes end after 130–200 rounds, where 100 ended it after 11).
const MaxSequentialRounds = 400

// MaxLooks bounds the looks of a sequential comparison: past it, a look is
// taken every few blocks of --rounds rounds (lookPlan), so that the
// boundaries, which O'Brien-Fleming spending keeps high until the last
// looks whatever their number, are not recomputed for looks that could
// not decide, and the final boundary stays near the fixed design's (2.12
// for the fail decision at 20 looks, 2.03 at 5, 1.96 at one).
const MaxLooks = 20

// lookPlan is the state of a sequential comparison between blocks of
// rounds: a block is --rounds rounds (an A/B/B/A block by default); a look
// is taken after the first block (a plain difference decides there), then
// every `every` blocks, and after the block that ends the budget.
type lookPlan struct {
	seq       *Sequential
	budget    Budget
	maxBlocks int // MaxSequentialRounds / rounds per block
	blocks    int // the blocks the budget allows, planned after the first
	every     int // blocks between looks
	blockDur  time.Duration
}

// newLookPlan is the plan of p's looks (nil: the fixed design).
func (p *Procedure) newLookPlan(maxRounds int) *lookPlan {
	if p.Budget.IsZero() {
		return nil
	}
	return &lookPlan{seq: &Sequential{Design: DesignOBF, Alpha: SeqAlpha, PassAlpha: PassAlpha, Budget: p.Budget.String(), RoundsPerLook: p.Rounds, Looks: []Look{}},
		budget: p.Budget, maxBlocks: max(1, maxRounds/p.Rounds), every: 1}
}

// next is called after block k (from 1) with its rounds so far, n
// requests per side so far, elapsed the rounds' wall time and took that of
// this block's rounds: it plans the blocks and looks after the first (the
// information fraction of a look is its blocks over the blocks planned:
// calendar information, set before any figure is seen), decides whether
// this block is final (the next would not fit the budget) and returns the
// look taken after it, with its boundaries, or nil when no look is taken
// there.
func (lp *lookPlan) next(k, rounds, n int, elapsed, took time.Duration) *Look {
	lp.blockDur = max(lp.blockDur, took)
	if k == 1 {
		blocks := lp.maxBlocks
		if lp.budget.Requests > 0 && n > 0 {
			blocks = min(blocks, lp.budget.Requests/n)
		}
		if lp.budget.Time > 0 && took > 0 {
			blocks = min(blocks, int(lp.budget.Time/took))
		}
		lp.blocks = max(1, blocks)
		lp.every = (lp.blocks + MaxLooks - 2) / (MaxLooks - 1) // look 1, then at most MaxLooks-1 more
		lp.every = max(1, lp.every)
		lp.seq.MaxLooks = 1 + (lp.blocks-1+lp.every-1)/lp.every
		if lp.blocks == 1 {
			lp.seq.MaxLooks = 1
		}
		lp.seq.RoundsPerLook = lp.seq.RoundsPerLook * lp.every
	}
	final, why := false, ""
	switch {
	case k >= lp.blocks:
		final, why = true, fmt.Sprintf("%s%d looks planned, %d blocks of %d rounds (--budget %s)", stoppedBudget, lp.seq.MaxLooks, lp.blocks,
			lp.seq.RoundsPerLook/lp.every, lp.seq.Budget)
	case lp.budget.Time > 0 && elapsed+lp.blockDur > lp.budget.Time:
		final, why = true, fmt.Sprintf("%sanother block of rounds (about %s) would pass the time budget %s", stoppedBudget, lp.blockDur.Round(time.Second), lp.budget.Time)
	case lp.budget.Requests > 0 && n+n/k > lp.budget.Requests:
		final, why = true, fmt.Sprintf("%sanother block of rounds would pass %d requests per side", stoppedBudget, lp.budget.Requests)
	}
	if !final && k != 1 && (k-1)%lp.every != 0 {
		return nil
	}
	l := Look{Look: len(lp.seq.Looks) + 1, Rounds: rounds, NPerSide: n, Fraction: float64(k) / float64(lp.blocks), Final: final, Elapsed: elapsed.Seconds()}
	if final {
		l.Fraction = 1
	}
	lp.seq.Looks = append(lp.seq.Looks, l)
	zs, err := Boundaries(lp.seq.fractions(), lp.seq.Alpha)
	if err != nil { // fractions always increase: k < blocks until final
		panic(err)
	}
	zp, err := Boundaries(lp.seq.fractions(), lp.seq.PassAlpha)
	if err != nil {
		panic(err)
	}
	last := &lp.seq.Looks[len(lp.seq.Looks)-1]
	last.Z, last.ZPass = zs[len(zs)-1], zp[len(zp)-1]
	last.Conf, last.Spent = confOfZs(last.Z, last.ZPass), SpentOBF(last.Fraction, lp.seq.Alpha)
	if final {
		lp.seq.Stopped = why
	}
	return last
}

// judged records the verdict at look l and reports whether the looks stop
// there: the verdict decided, or is inconclusive for a reason more rounds
// do not mend (a fingerprint, error classes, a figure not recorded), or l
// is final.
func (lp *lookPlan) judged(l *Look, v *Verdict) (stop bool) {
	l.Outcome = v.Outcome
	l.Figures = make([]LookFigure, 0, len(v.Figures))
	for _, f := range v.Figures {
		l.Figures = append(l.Figures, LookFigure{Name: f.Name, Level: f.Level, Status: f.Status, Change: f.Change, CILo: f.CILo, CIHi: f.CIHi})
	}
	switch {
	case v.Outcome != OutcomeInconclusive:
		lp.seq.Stopped = stoppedDecided
		return true
	case l.Final:
		return true
	}
	if why := unmendable(v); why != "" {
		lp.seq.Stopped = stoppedRule + why
		return true
	}
	return false
}

// mendable are the rules that more rounds can turn ok.
var mendable = []string{RuleSamples, RuleSpread}

// unmendable names what makes v inconclusive that more rounds of the same
// sides do not change ("": only undecided figures and mendable rules).
func unmendable(v *Verdict) string {
	for _, r := range v.Rules {
		if r.Status != StatusOK && !slices.Contains(mendable, r.Name) {
			return r.Name + " " + string(r.Status)
		}
	}
	for _, f := range v.Figures {
		if f.Status == StatusNotRecorded {
			return f.Name + " @ " + f.Level + " not recorded"
		}
	}
	return ""
}

// perSide is the fewest requests measured by either side.
func perSide(sides map[string]*Evidence) int {
	n := -1
	for _, side := range []string{SideBaseline, SideCandidate} {
		c := 0
		if ev := sides[side]; ev != nil {
			for _, s := range ev.Steps {
				c += len(s.Requests)
			}
		}
		if n < 0 || c < n {
			n = c
		}
	}
	return max(n, 0)
}

// confOfZs is the two-sided level of an interval whose better end sits at
// z standard errors and its worse end at zPass (0: at z as well).
func confOfZs(z, zPass float64) float64 {
	if !(zPass > 0) {
		return ConfOfZ(z)
	}
	return normCDF(z) + normCDF(zPass) - 1
}
