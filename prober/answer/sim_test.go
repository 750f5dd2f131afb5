package answer

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
)

// runBuiltin sends every builtin check to a simulator with faults f over
// api and returns the results by check.
func runBuiltin(t *testing.T, api string, f simulator.Faults, o RequestOptions) map[string]Result {
	t.Helper()
	cfg := simtest.Fast()
	cfg.Faults = f
	return runBuiltinOn(t, api, cfg, o)
}

// runBuiltinOn is runBuiltin against a simulator configured as cfg.
func runBuiltinOn(t *testing.T, api string, cfg simulator.Config, o RequestOptions) map[string]Result {
	t.Helper()
	base, _ := simtest.Start(t, cfg)
	c, err := client.New(client.Options{BaseURL: base, API: api})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	out := map[string]Result{}
	for _, it := range Builtin().Items {
		req, err := it.Request(api, "check-"+it.ID, o)
		if err != nil {
			t.Fatal(err)
		}
		var rec prober.Record
		c.Do(context.Background(), req, &rec)
		out[it.ID] = Evaluate(it, &req, &rec, nil)
	}
	return out
}

// contentKinds are the expectations a wrong answer breaks; stop and length
// judge how a reply ends, not what it says.
var contentKinds = map[Kind]bool{KindExact: true, KindContains: true, KindRegex: true, KindNumber: true, KindJSONSchema: true}

func TestSimulatorAnswersBuiltin(t *testing.T) {
	for _, api := range []string{client.APICompletions, client.APIChat} {
		t.Run(api, func(t *testing.T) {
			res := runBuiltin(t, api, simulator.Faults{}, RequestOptions{})
			for id, r := range res {
				if r.Outcome != Pass {
					t.Errorf("%s: %s: %s (reply %q)", id, r.Outcome, r.Reason, r.Reply)
				}
				if !strings.HasPrefix(r.ReplyHash, "sha256:") || r.Logprobs != nil {
					t.Errorf("%s: hash %q logprobs %v", id, r.ReplyHash, r.Logprobs)
				}
			}
			// Deterministic: the same replies again.
			again := runBuiltin(t, api, simulator.Faults{}, RequestOptions{})
			for id, r := range res {
				if again[id].ReplyHash != r.ReplyHash {
					t.Errorf("%s: reply %q then %q", id, r.Reply, again[id].Reply)
				}
			}
		})
	}
}

func TestSimulatorFaultsBreakAnswers(t *testing.T) {
	t.Run("wrong answers", func(t *testing.T) {
		for id, r := range runBuiltin(t, client.APIChat, simulator.Faults{WrongAnswers: 1}, RequestOptions{}) {
			if want := map[bool]Outcome{true: Fail, false: Pass}[contentKinds[r.Kind]]; r.Outcome != want {
				t.Errorf("%s (%s): %s, want %s: %s (reply %q)", id, r.Kind, r.Outcome, want, r.Reason, r.Reply)
			}
		}
	})
	t.Run("template broken", func(t *testing.T) {
		fails := 0
		for id, r := range runBuiltin(t, client.APIChat, simulator.Faults{TemplateBroken: true}, RequestOptions{}) {
			if r.Outcome == Fail {
				fails++
			}
			if r.Kind == KindExact && (r.Outcome != Fail || !strings.Contains(r.Reply, "<|im_start|>")) {
				t.Errorf("%s: %s, reply %q", id, r.Outcome, r.Reply)
			}
		}
		if fails < len(Builtin().Items)/2 {
			t.Errorf("template broken: %d checks failed", fails)
		}
	})
	t.Run("truncate", func(t *testing.T) {
		res := runBuiltin(t, client.APICompletions, simulator.Faults{Truncate: 1}, RequestOptions{})
		for _, id := range []string{"copy-sentence", "json-extract", "sort-numbers", "reverse-words"} {
			if r := res[id]; r.Outcome != Fail {
				t.Errorf("%s: %s, reply %q", id, r.Outcome, r.Reply)
			}
		}
	})
}

func TestSimulatorNondeterministicLowMargin(t *testing.T) {
	o := RequestOptions{TopLogprobs: 2}
	for _, api := range []string{client.APICompletions, client.APIChat} {
		t.Run(api, func(t *testing.T) {
			good := runBuiltin(t, api, simulator.Faults{}, o)
			flipped := runBuiltin(t, api, simulator.Faults{Nondeterministic: 1}, o)
			differs := 0
			for id, g := range good {
				f := flipped[id]
				if len(g.Logprobs) == 0 {
					t.Fatalf("%s: no logprobs", id)
				}
				if g.ReplyHash == f.ReplyHash {
					continue
				}
				differs++
				// The first token that differs is one where the good
				// server's top-2 margin was small.
				i := 0
				for i < len(g.Logprobs) && i < len(f.Logprobs) && g.Logprobs[i].Token == f.Logprobs[i].Token {
					i++
				}
				if i >= len(g.Logprobs) || len(g.Logprobs[i].Top) != 2 {
					t.Fatalf("%s: differs at %d of %d", id, i, len(g.Logprobs))
				}
				top := g.Logprobs[i].Top
				if m := top[0].Logprob - top[1].Logprob; math.Abs(m-simulator.FragileMargin) > 1e-9 || top[1].Token != f.Logprobs[i].Token {
					t.Errorf("%s: margin %v at %d, candidates %+v, flipped to %q", id, m, i, top, f.Logprobs[i].Token)
				}
				for j := range i {
					if tj := g.Logprobs[j].Top; tj[0].Logprob-tj[1].Logprob < 1 {
						t.Errorf("%s: small margin at %d, before the fragile token", id, j)
					}
				}
			}
			if differs < len(good)/3 {
				t.Errorf("only %d of %d replies flipped", differs, len(good))
			}
		})
	}
}

// TestSimulatorModelSeed: the simulator with a model seed is another
// model: every builtin check passes as on the default model, yet every
// reply differs from the default model's (and another seed's) at the
// first token, where the default model's top 2 do not hold it.
func TestSimulatorModelSeed(t *testing.T) {
	o := RequestOptions{TopLogprobs: 2}
	def := runBuiltin(t, client.APIChat, simulator.Faults{}, o)
	other := map[int64]map[string]Result{}
	for _, seed := range []int64{1, 2} {
		cfg := simtest.Fast()
		cfg.ModelSeed = seed
		other[seed] = runBuiltinOn(t, client.APIChat, cfg, o)
		for id, r := range other[seed] {
			d := def[id]
			if r.Outcome != d.Outcome || r.Outcome != Pass {
				t.Errorf("seed %d: %s: %s (%s), the default model %s", seed, id, r.Outcome, r.Reason, d.Outcome)
			}
			if len(r.Logprobs) == 0 || len(d.Logprobs) == 0 || r.Logprobs[0].Token == d.Logprobs[0].Token {
				t.Fatalf("seed %d: %s: first tokens %v and %v, want them to differ", seed, id, r.Logprobs, d.Logprobs)
			}
			for _, alt := range d.Logprobs[0].Top {
				if alt.Token == r.Logprobs[0].Token {
					t.Errorf("seed %d: %s: first token %q among the default model's top 2 %v", seed, id, alt.Token, d.Logprobs[0].Top)
				}
			}
		}
	}
	for id, r := range other[1] {
		if r.ReplyHash == other[2][id].ReplyHash {
			t.Errorf("%s: seeds 1 and 2 reply alike: %q", id, r.Reply)
		}
	}
}
