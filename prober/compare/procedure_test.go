package compare

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

func TestRoundOrder(t *testing.T) {
	if got := strings.Join(RoundOrder(OrderABBA, 8, 0), " "); got != "baseline candidate candidate baseline baseline candidate candidate baseline" {
		t.Errorf("abba: %s", got)
	}
	r := RoundOrder(OrderRandom, 20, 7)
	nb := 0
	for i := 0; i < len(r); i += 2 {
		if r[i] == r[i+1] {
			t.Fatalf("pair %d runs one side twice: %v", i/2, r)
		}
		if r[i] == SideBaseline {
			nb++
		}
	}
	if nb == 0 || nb == 10 {
		t.Errorf("random order never swaps a pair: %v", r)
	}
	if strings.Join(r, " ") != strings.Join(RoundOrder(OrderRandom, 20, 7), " ") {
		t.Error("random order is not reproducible from its seed")
	}
}

// burstRunner is a RoundRunner without network: each round's evidence is
// drawn from defaultShape, and the rounds flagged(round, attempt) says
// come out with the client flagged (a load burst on the client host),
// their latencies doubled.
func burstRunner(flagged func(round, attempt int) bool) (RoundRunner, *[]string) {
	var names []string
	return func(_ context.Context, r *RoundRun) (*RoundOutcome, error) {
		names = append(names, r.Config.Name)
		attempt := max(r.Round.Attempt, 1)
		burst := flagged(r.Round.Round, attempt)
		x := 1.0
		if burst {
			x = 2
		}
		rng := rand.New(rand.NewPCG(uint64(r.Round.Round), uint64(attempt)))
		shape := defaultShape
		shape.rounds = 1
		ev := synthSide(shape, x, x, rng)
		v := sweep.Validity{Valid: true, Flags: []string{}, Reasons: []string{}, Idle: sweep.IdleProof{Status: sweep.IdleProven}}
		if burst {
			v.Valid, v.Flags, v.Reasons = false, []string{sweep.FlagClientSaturated}, []string{"send-lag p99 40 ms > 10 ms"}
		}
		ev.Steps[0].Validity = &v
		res := &sweep.Result{ModelID: "m", Steps: []*sweep.Step{{Label: "rate=4", Validity: v}}}
		return &RoundOutcome{Result: res, Complete: true, Evidence: ev, Dir: r.Config.Name}, nil
	}, &names
}

// TestProcedureRerunsClientFlaggedRounds: a round whose client was flagged
// (both candidate rounds of an A/B/B/A pair meeting a burst on the client
// host, V1) is rerun once with the same seed, its first attempt listed but
// not counted; a round still flagged after the reruns allowed makes the
// verdict inconclusive through the client rule, naming the reruns.
func TestProcedureRerunsClientFlaggedRounds(t *testing.T) {
	th, err := ParseThresholds("tpot_p99=10%")
	if err != nil {
		t.Fatal(err)
	}
	proc := func(run RoundRunner) *Procedure {
		return &Procedure{Order: OrderABBA, Rounds: 4, Seed: 5, Thresholds: th, Iters: 500, RunRound: run}
	}
	// Candidate rounds 2 and 3 meet the burst on their first attempt only.
	run, names := burstRunner(func(round, attempt int) bool { return (round == 2 || round == 3) && attempt == 1 })
	cr := proc(run).Run(context.Background())
	if got := strings.Join(*names, " "); got != "r1-baseline r2-candidate r2-candidate-rerun r3-candidate r3-candidate-rerun r4-baseline" {
		t.Errorf("rounds run: %s", got)
	}
	if len(cr.Rounds) != 6 || cr.Rounds[1].Discarded == "" || cr.Rounds[2].Attempt != 2 || cr.Rounds[2].Seed != cr.Rounds[1].Seed ||
		cr.Rounds[2].Discarded != "" {
		t.Fatalf("rounds %+v", cr.Rounds)
	}
	if cr.Verdict == OutcomeFail {
		t.Errorf("verdict %s: the discarded burst rounds were counted: %v", cr.Verdict, cr.Result.Reasons)
	}
	if r := rule(cr.Result, RuleClient); r.Status != StatusOK || !strings.Contains(r.Detail, "round 2 (candidate) rerun: rate=4: client-saturated (send-lag p99 40 ms > 10 ms)") {
		t.Errorf("client rule %+v", r)
	}
	// analyze rebuilds the same reruns from result.json's rounds.
	if got := cr.Options(Options{}, Given{}).Reruns; len(got) != 2 || got[0] != "round 2 (candidate) rerun: rate=4: client-saturated (send-lag p99 40 ms > 10 ms)" {
		t.Errorf("stored reruns %q", got)
	}

	// A client host that stays loaded: every attempt is flagged. Half the
	// rounds are rerun, then the verdict is inconclusive.
	run, names = burstRunner(func(int, int) bool { return true })
	cr = proc(run).Run(context.Background())
	if len(*names) != 6 || cr.Verdict != OutcomeInconclusive {
		t.Fatalf("%d rounds run (%v), verdict %s", len(*names), *names, cr.Verdict)
	}
	if r := rule(cr.Result, RuleClient); r.Status != StatusFailed || !strings.Contains(r.Detail, "still flagged after the reruns allowed") ||
		!strings.Contains(strings.Join(cr.Result.Reasons, "\n"), "client not saturated failed: client saturated in baseline round 1") {
		t.Errorf("client rule %+v\nreasons %v", r, cr.Result.Reasons)
	}
}
