package compare

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	kitlevel "github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// The sides of a comparison (Round.Side).
const (
	SideBaseline  = "baseline"
	SideCandidate = "candidate"
)

// Orders of the rounds (Procedure.Order).
const (
	// OrderABBA runs each pair of rounds A/B, then B/A: A B B A A B B A ...
	OrderABBA = "abba"
	// OrderRandom runs each pair A/B or B/A, drawn from the seed.
	OrderRandom = "random"
)

// RoundOrder returns the side of each of n rounds (n even) in order: pairs
// of one baseline and one candidate round, each pair A/B or B/A by order
// (OrderRandom draws it from seed, reproducibly).
func RoundOrder(order string, n int, seed int64) []string {
	out := make([]string, 0, n)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6f72646572)) // "order"
	for pair := 0; pair < n/2; pair++ {
		ab := pair%2 == 0
		if order == OrderRandom {
			ab = rng.IntN(2) == 0
		}
		if ab {
			out = append(out, SideBaseline, SideCandidate)
		} else {
			out = append(out, SideCandidate, SideBaseline)
		}
	}
	return out
}

// Procedure is an A/B comparison (DESIGN.md §9 points 8-10): the same
// workload and load run on a baseline and a candidate in Rounds rounds, in
// Order, each round one sweep of one side (sweep.Prepare + Run with Rounds
// 1) from an idle server with its warmups; then Compare on the rounds of
// each side pooled. Pair k of rounds (rounds 2k+1 and 2k+2) runs with seed
// Seed+k on both sides: the two rounds of a pair see the same prompt
// lengths and arrival times. Every round gets a prompt nonce of its own
// (RoundPromptNonce of the Baseline's PromptNonce, drawn by Run when 0), so
// that no round meets the prompts of another in the servers' prefix or
// prompt caches (a server compared with itself would else answer the
// second side of a pair from its cache). The zero value is not usable:
// give both configs, Order, Rounds and the thresholds.
type Procedure struct {
	// Baseline and Candidate are the sides' sweep configs (validated by
	// sweep.Prepare). Their Rounds, Name and Seed are set per round; the
	// baseline's SLO is the comparison's.
	Baseline, Candidate sweep.Config
	// Order is OrderABBA or OrderRandom; Rounds counts both sides'
	// rounds (even, >= 2) of each look; Seed is the first pair's seed.
	Order  string
	Rounds int
	Seed   int64
	// Budget, when set, makes the comparison sequential (sequential.go):
	// after each look of Rounds rounds every figure is judged at the
	// look's group-sequential boundary, and another look is added until
	// the verdict decides or the budget would be passed. The zero Budget:
	// one look (the fixed design).
	Budget Budget
	// Thresholds are the compared figures (ParseThresholds) and
	// MaxRegression their text as given; Vary the fingerprint fields
	// allowed to differ (DefaultVary when nil); Iters the bootstrap's
	// resamples (DefaultIters when 0).
	Thresholds    []Threshold
	MaxRegression string
	Vary          []string
	Iters         int
	// Decision and RollbackIf are the question the comparison serves
	// (Result.Decision, Result.RollbackIf; "": none).
	Decision, RollbackIf string
	// Logger receives the rounds' progress (nil: none); Args is the command
	// line (sweep.Options.Args).
	Logger log.Logger
	Args   []string
	// Observer, when set, returns the observer of a round's sweep
	// (progress bars; nil: none). Each finished step is also logged with
	// its round and side.
	Observer func(r Round, rounds int) sweep.Observer
	// RunRound runs one round (nil: the sweep in memory, no files: see
	// RoundRunner). internal/rundir runs each round into a sweep run
	// directory.
	RunRound RoundRunner
	// AnswerChecks, when set, is run against both sides after the rounds
	// (the quality section, Verdict.Quality); LowMargin is its low_margin
	// threshold in nats (DefaultLowMargin when 0) and QualityTolerance the
	// largest pass-rate drop allowed (DefaultQualityTolerance when 0);
	// AnswerRepeats sends the set that many times to each side
	// (DefaultAnswerRepeats when 0).
	AnswerChecks     *answer.Set
	LowMargin        float64
	QualityTolerance float64
	AnswerRepeats    int
}

// RoundRun is one round as the Procedure hands it to a RoundRunner.
type RoundRun struct {
	// Index counts the rounds from 0; Round has its number (from 1), side
	// and seed.
	Index int
	Round Round
	// Config is the side's sweep config for this round: Rounds 1, Seed the
	// pair's, Name "r<N>-<side>".
	Config sweep.Config
	// Logger and Observer are the round's (never nil).
	Logger   log.Logger
	Observer sweep.Observer
}

// RoundOutcome is what a RoundRunner measured.
type RoundOutcome struct {
	// Result is the round's sweep result (nil: it failed before its first
	// step); Complete is false when the sweep did not complete.
	Result   *sweep.Result
	Complete bool
	// Evidence is the round's evidence (FromSweep with its per-request
	// samples; nil: not read).
	Evidence *Evidence
	// Dir is where the round was written ("": nowhere; Round.Dir).
	Dir string
}

// RoundRunner runs the sweep of one round. Like sweep.Run, it returns what
// it measured with the error of a failure during the sweep; an Outcome
// without Result (or nil) when nothing was measured.
type RoundRunner func(ctx context.Context, r *RoundRun) (*RoundOutcome, error)

// Preflight prepares both sides' sweeps (sweep.Prepare) and closes them:
// both targets must answer, list the model and accept the workload before
// any load is sent. The error names the side ("baseline: ...").
func (p *Procedure) Preflight(ctx context.Context) error {
	for _, side := range []string{SideBaseline, SideCandidate} {
		sp, err := sweep.Prepare(ctx, *p.config(side), sweep.Options{Logger: log.With(p.logger(), "side", side), Args: p.Args})
		if err != nil {
			return fmt.Errorf("%s: %w", side, err)
		}
		sp.Close()
	}
	return nil
}

// Run runs the rounds in order and compares the sides. It stops at the
// first round that fails, is interrupted (ctx) or does not complete: the
// verdict is then inconclusive, naming that round. A round that completes
// with a client-side validity flag (ClientFlags: the client host could not
// keep its schedule, so its latencies measure the client too) is run once
// more at once, with the same seed (MaxRoundReruns per round, at most half
// the rounds in all); the first attempt stays listed, Discarded, and only the rerun's
// evidence counts. A rerun still flagged makes the verdict inconclusive
// (the client rule), naming the round; in a sequential comparison its pair
// is discarded instead, within a bound (discardPair). With a Budget the
// rounds come in looks of Rounds rounds, each judged at its
// group-sequential boundary, until the verdict decides or the budget
// would be passed (sequential.go; Result.Sequential records every look).
// The Result lists every round that measured something. Run does not call
// Preflight.
func (p *Procedure) Run(ctx context.Context) *Result {
	logger := p.logger()
	run := p.RunRound
	if run == nil {
		run = p.sweepRound
	}
	if p.Baseline.PromptNonce == 0 { // one nonce for the comparison; each round derives its own
		p.Baseline.PromptNonce = sweep.NewPromptNonce()
	}
	p.Candidate.PromptNonce = p.Baseline.PromptNonce
	cr := p.newResult()
	sides := map[string]*Evidence{}
	secrets := append(p.Baseline.Secrets(), p.Candidate.Secrets()...)
	complete, stopReason := true, ""
	var reruns []string
	rerunCount := 0
	var pending []pendingRound // the rounds of the pair under way
	discards := 0              // pairs discarded (sequential only)
	plan := p.newLookPlan(MaxSequentialRounds)
	var v *Verdict
	var z, zPass float64
	start := time.Now()
	for look := 1; ; look++ {
		lookStart := time.Now()
		order := RoundOrder(p.Order, look*p.Rounds, p.Seed)
		for i := (look - 1) * p.Rounds; i < len(order); i++ {
			side := order[i]
			rr := p.round(i, side, len(order))
			kitlevel.Info(logger).Log("msg", "compare round starting", "round", rr.Round.Round, "of", len(order), "side", side, "seed", rr.Round.Seed,
				"prompt_nonce", rr.Round.PromptNonce)
			out, err := run(ctx, rr)
			if flagged := clientFlagged(out); flagged != "" && err == nil && ctx.Err() == nil && out.Complete && rerunCount < maxReruns(len(order)) {
				rerunCount++
				kitlevel.Warn(logger).Log("msg", "compare round rerun: the client was flagged", "round", i+1, "side", side, "reason", flagged)
				cr.addRound(rr.Round, out, discardedClient+flagged)
				rr = p.rerun(rr, len(order))
				out, err = run(ctx, rr)
			}
			if out != nil && out.Result != nil {
				cr.addRound(rr.Round, out, "")
				pending = append(pending, pendingRound{index: len(cr.Rounds) - 1, side: side, round: rr.Round.Round, ev: out.Evidence,
					flagged: clientFlagged(out)})
			}
			switch {
			case ctx.Err() != nil:
				complete, stopReason = false, fmt.Sprintf("interrupted during round %d (%s)", i+1, side)
			case err != nil:
				complete, stopReason = false, fmt.Sprintf("round %d (%s) failed: %s", i+1, side, redact.Secrets(err.Error(), secrets...))
			case out == nil || !out.Complete:
				complete, stopReason = false, fmt.Sprintf("round %d (%s) did not complete", i+1, side)
			}
			if !complete {
				kitlevel.Error(logger).Log("msg", "compare stopped", "reason", stopReason)
				break
			}
			if i%2 == 1 { // a pair is complete: its evidence counts, or the pair is discarded
				if why := p.discardPair(cr, pending, discards, len(order)); why != "" {
					discards++
					kitlevel.Warn(logger).Log("msg", "compare pair discarded: the client was flagged after its rerun", "rounds", fmt.Sprintf("%d,%d", i, i+1), "reason", why)
				} else {
					for _, pr := range pending {
						addEvidence(sides, pr.side, pr.round, pr.ev)
					}
				}
				pending = pending[:0]
			}
		}
		for _, pr := range pending { // an incomplete pair counts as it is (the verdict is inconclusive)
			addEvidence(sides, pr.side, pr.round, pr.ev)
		}
		pending = pending[:0]
		reruns = cr.Reruns()
		if !complete || plan == nil {
			break
		}
		now := time.Now()
		l := plan.next(look, len(order), perSide(sides), now.Sub(start), now.Sub(lookStart))
		if l == nil { // no look after this block
			continue
		}
		z, zPass = l.Z, l.ZPass
		v = p.verdict(sides, reruns, z, zPass)
		stop := plan.judged(l, v)
		kitlevel.Info(logger).Log("msg", "compare look", "look", l.Look, "of", plan.seq.MaxLooks, "n_per_side", l.NPerSide,
			"z", fmt.Sprintf("%.3f", l.Z), "z_pass", fmt.Sprintf("%.3f", l.ZPass), "spent_alpha", fmt.Sprintf("%.4g", l.Spent), "verdict", v.Outcome, "final", l.Final,
			"figures", l.FiguresText())
		if stop {
			break
		}
	}
	if plan != nil {
		cr.Sequential = plan.seq
	}
	if v == nil || !complete {
		v = p.verdict(sides, reruns, z, zPass)
	}
	cr.Sequential.apply(v)
	if complete && p.AnswerChecks != nil {
		q, err := p.quality(ctx)
		switch {
		case ctx.Err() != nil:
			complete, stopReason = false, "interrupted during the answer checks"
		case err != nil:
			complete, stopReason = false, redact.Secrets(err.Error(), secrets...)
		}
		ApplyQuality(v, q)
	}
	cr.finish(v, complete, stopReason)
	return cr
}

// pendingRound is a round of the pair under way: its evidence counts once
// the pair is complete (Procedure.discardPair).
type pendingRound struct {
	index, round int // in Result.Rounds; the round's number
	side         string
	ev           *Evidence
	flagged      string // its client flags after any rerun ("": none)
}

// discardPair decides, in a sequential comparison, whether a complete pair
// of rounds is left out because a round of it was still client-flagged
// after its rerun (or past the reruns allowed): the looks can add rounds,
// so such a pair is discarded whole (both sides keep the same seeds and
// the A/B balance) and marked so in the Result, which analyze reads back.
// At most half the pairs run so far are discarded (at least one); past that
// the pair counts and the client rule fails, naming its flags. It returns
// why the pair was discarded ("": it counts). The fixed design never
// discards a pair.
func (p *Procedure) discardPair(cr *Result, pair []pendingRound, discards, rounds int) string {
	if p.Budget.IsZero() || len(pair) != 2 || discards >= max(1, rounds/4) {
		return ""
	}
	var why []string
	for _, pr := range pair {
		if pr.flagged != "" {
			why = append(why, fmt.Sprintf("round %d (%s) still flagged: %s", pr.round, pr.side, pr.flagged))
		}
	}
	if len(why) == 0 {
		return ""
	}
	text := discardedPair + strings.Join(why, "; ")
	for _, pr := range pair {
		cr.Rounds[pr.index].Discarded = discardedClient + text
	}
	return text
}

// discardedPair opens the reason of a pair discarded for its client, after
// discardedClient (Round.Discarded).
const discardedPair = "pair discarded: "

// discardedClient opens Round.Discarded of a round rerun for its client.
const discardedClient = "client flagged, rerun: "

// MaxRoundReruns is how many times a round whose client was flagged is run
// again (ClientFlags).
const MaxRoundReruns = 1

// maxReruns is the most reruns of a comparison of that many rounds: half
// its rounds, at least one, so that a client host that stays overloaded
// costs at most half as much again and then makes the verdict
// inconclusive.
func maxReruns(rounds int) int { return max(1, rounds/2) * MaxRoundReruns }

// ClientFlags are the sweep's validity flags that blame the client host
// rather than the server (prober/sweep validity.go: send lag, client CPU,
// Go scheduling latency):
// a round flagged so is rerun (Procedure.Run). A flag named "client-..."
// counts as one too (IsClientFlag), so that a client check the sweep adds
// later is guarded alike.
var ClientFlags = []string{sweep.FlagClientSaturated, sweep.FlagClientReadLag}

// IsClientFlag reports whether a validity flag blames the client host.
func IsClientFlag(flag string) bool {
	return slices.Contains(ClientFlags, flag) || strings.HasPrefix(flag, "client-")
}

// clientFlagged names the client-side flags of out's steps with their
// reasons ("": none, or nothing measured).
func clientFlagged(out *RoundOutcome) string {
	if out == nil || out.Result == nil {
		return ""
	}
	var parts []string
	for _, st := range out.Result.Steps {
		for i, f := range st.Validity.Flags {
			if IsClientFlag(f) && i < len(st.Validity.Reasons) {
				parts = append(parts, st.Label+": "+f+" ("+st.Validity.Reasons[i]+")")
			}
		}
	}
	return strings.Join(parts, "; ")
}

// rerun is the second attempt of round rr: the same round, side and seed,
// named "<name>-rerun" (its own run directory), with prompt texts of its
// own (a nonce derived from the round's and the attempt), so the server's
// prompt cache does not answer the discarded attempt's prompts.
func (p *Procedure) rerun(rr *RoundRun, n int) *RoundRun {
	again := p.round(rr.Index, rr.Round.Side, n)
	again.Config.Name += "-rerun"
	again.Round.Attempt = 2
	again.Config.PromptNonce = RoundPromptNonce(again.Config.PromptNonce, again.Round.Attempt)
	again.Round.PromptNonce = again.Config.PromptNonce
	return again
}

// addRound lists one round that measured something; discarded, when set,
// says why its evidence does not count (Round.Discarded).
func (r *Result) addRound(round Round, out *RoundOutcome, discarded string) {
	round.Dir, round.Complete, round.Start, round.End = out.Dir, out.Complete, out.Result.Fingerprint.Start, out.Result.Fingerprint.End
	round.Discarded = discarded
	r.Rounds = append(r.Rounds, round)
	if s := r.Side(round.Side); s.Model == "" {
		s.Model = out.Result.ModelID
	}
}

// addEvidence pools a round's evidence into its side's (nil: not read).
func addEvidence(sides map[string]*Evidence, side string, round int, ev *Evidence) {
	if ev == nil {
		return
	}
	for j := range ev.Steps {
		ev.Steps[j].Order = round
	}
	ev.Name = side
	if sides[side] == nil {
		sides[side] = ev
	} else {
		sides[side].Merge(ev)
	}
}

// verdict compares the sides' pooled evidence (inconclusive when a side
// has none).
func (p *Procedure) verdict(sides map[string]*Evidence, reruns []string, z, zPass float64) *Verdict {
	if sides[SideBaseline] == nil || sides[SideCandidate] == nil {
		return &Verdict{Outcome: OutcomeInconclusive, Rules: []Rule{}, Figures: []Figure{},
			Reasons: []string{"no round of one side was measured"}, Missing: []string{}}
	}
	return Compare(sides[SideBaseline], sides[SideCandidate], Options{
		Thresholds: p.Thresholds, Vary: p.Vary, SLO: p.Baseline.SLO, Iters: p.Iters, Seed: uint64(p.Seed), Reruns: reruns, Z: z, ZPass: zPass,
	})
}

func (p *Procedure) logger() log.Logger {
	if p.Logger == nil {
		return log.NewNopLogger()
	}
	return p.Logger
}

func (p *Procedure) config(side string) *sweep.Config {
	if side == SideCandidate {
		return &p.Candidate
	}
	return &p.Baseline
}

// round plans round i (from 0) of n, on side.
func (p *Procedure) round(i int, side string, n int) *RoundRun {
	cfg := *p.config(side)
	cfg.Rounds = 1
	cfg.Name = fmt.Sprintf("r%d-%s", i+1, side)
	cfg.Seed = p.Seed + int64(i/2)
	cfg.PromptNonce = RoundPromptNonce(p.Baseline.PromptNonce, i)
	cfg.AnswerChecks = nil // the quality section sends them, once, after the rounds
	r := Round{Round: i + 1, Side: side, Seed: cfg.Seed, PromptNonce: cfg.PromptNonce}
	logger := log.With(p.logger(), "round", r.Round, "side", side)
	var obs sweep.Observer
	if p.Observer != nil {
		obs = p.Observer(r, n)
	}
	if obs == nil {
		obs = sweep.NopObserver{}
	}
	return &RoundRun{Index: i, Round: r, Config: cfg, Logger: logger, Observer: stepLogger{Observer: obs, logger: logger}}
}

// RoundPromptNonce is the prompt nonce of round i (from 0) of a
// comparison whose nonce is base, in [1, 2^63-1]: a SplitMix64 finaliser
// of both (a bijection before its last bit is dropped), so the rounds of a
// comparison, and of comparisons with other nonces, differ but for a 2^-63
// chance.
func RoundPromptNonce(base int64, i int) int64 {
	x := uint64(base) ^ (uint64(i)+1)*0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x = (x ^ (x >> 31)) >> 1
	if x == 0 {
		x = 1
	}
	return int64(x)
}

// sweepRound is the default RoundRunner: the round's sweep run in memory,
// its per-request samples kept for the evidence.
func (p *Procedure) sweepRound(ctx context.Context, r *RoundRun) (*RoundOutcome, error) {
	sp, err := sweep.Prepare(ctx, r.Config, sweep.Options{Logger: r.Logger, Args: p.Args})
	if err != nil {
		return nil, err
	}
	sink := &requestSink{reqs: map[int][]Request{}}
	res, err := sp.Run(ctx, sink, r.Observer)
	if res == nil {
		return nil, err
	}
	return &RoundOutcome{Result: res, Complete: res.Complete, Evidence: FromSweep(r.Config.Name, res, sink.reqs)}, err
}

// requestSink keeps each measured request's sample by step index.
type requestSink struct {
	sweep.DiscardSink
	mu   sync.Mutex
	reqs map[int][]Request
}

// Record implements sweep.RecordSink.
func (s *requestSink) Record(r sweep.StepRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs[r.Step] = append(s.reqs[r.Step], RequestOf(r.Record))
	return nil
}

// stepLogger logs each finished step of a round, then hands it on.
type stepLogger struct {
	sweep.Observer
	logger log.Logger
}

// StepDone implements sweep.Observer.
func (o stepLogger) StepDone(st *sweep.Step) {
	o.Observer.StepDone(st)
	valid := "valid"
	if !st.Validity.Valid {
		valid = "invalid: " + strings.Join(st.Validity.Flags, ", ")
	}
	kitlevel.Info(o.logger).Log("msg", "compare step done", "step", st.Label, "requests", st.Stats.Requests,
		"failed", st.Stats.Failed, "ttft_p99_ms", Num(st.Stats.TTFT.P99), "tpot_p99_ms", Num(st.Stats.TPOT.P99), "validity", valid)
}
