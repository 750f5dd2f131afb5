package sweep

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestClosedLoopOnStaleConnections is issue 22 V8 as a sweep met it:
// against a server that closes each streamed response's connection while
// announcing keep-alive (llama-server; the simulator's on-reuse mode, in
// which every reuse of such a connection fails), closed loops of
// concurrency 4, 8 and 32 lost 13-23 % of their requests and every step was
// invalid. Each request put on a stale connection must be resent once on a
// new one: no request fails, no step is invalid for errors, and the resends
// are in the records. Every step reuses connections (the warmup's and its own), so
// without the resend each step would have failures.
func TestClosedLoopOnStaleConnections(t *testing.T) {
	sc := simtest.Fast()
	sc.CloseAfterStream = simulator.CloseOnReuse
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.Concurrency = nil, "", []int{4, 8, 32}
	cfg.NumPrompts = 96
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	if !res.Complete || len(res.Steps) != 3 {
		t.Fatalf("complete %v, %d steps", res.Complete, len(res.Steps))
	}
	retried := map[int]int{}
	for _, r := range sink.recs {
		if r.Record.Retry != prober.RetryNone {
			retried[r.Step]++
		}
	}
	for i, st := range res.Steps {
		// The step is not invalid for errors (a starved test machine may
		// still flag its send lag: that is the client, not this).
		if st.Stats.Failed != 0 || st.Stats.Requests != cfg.NumPrompts || slices.Contains(st.Validity.Flags, FlagErrors) ||
			retried[i] == 0 {
			t.Errorf("step %s: %d of %d requests failed %v, validity %v %v, %d resent; want none failed, no %s flag, some resent",
				st.Label, st.Stats.Failed, st.Stats.Requests, st.Stats.FailedByClass, st.Validity.Flags, st.Validity.Reasons,
				retried[i], FlagErrors)
		}
		t.Logf("step %s: %d requests, %d resent", st.Label, st.Stats.Requests, retried[i])
	}
}

// TestProbeClassifiesFailures is the throughput probe's half of issue 22
// V8: it read the failures of a server that closes kept-alive connections
// as "the server refuses more load" and recorded no class. Against that
// server (on-reuse) the resends leave no failure, only counted resends;
// connection failures that survive (resets at random) stop the probe
// without calling the server saturated; 429s are load. Each level's
// failures are counted by class, and the note names them.
func TestProbeClassifiesFailures(t *testing.T) {
	conc, dur := probeConcurrency, probeLevelDuration
	probeConcurrency, probeLevelDuration = []int{8, 32}, 300*time.Millisecond
	t.Cleanup(func() { probeConcurrency, probeLevelDuration = conc, dur })
	f := func(name string, closeMode string, faults simulator.Faults, check func(t *testing.T, p *ThroughputProbe)) {
		t.Run(name, func(t *testing.T) {
			sc := simtest.Fast()
			sc.CloseAfterStream = closeMode
			url, sim := simtest.Start(t, sc)
			cfg := testConfig(t, url)
			cfg.Rates, cfg.RatesText, cfg.Auto = nil, "auto", true
			p, err := Prepare(context.Background(), cfg, Options{Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			sim.SetFaults(faults)
			if p.r.prompts, err = newPromptSource(p.r); err != nil {
				t.Fatal(err)
			}
			pr := p.r.runProbe(context.Background())
			if len(pr.Levels) == 0 {
				t.Fatalf("no level: %+v", pr)
			}
			t.Logf("levels %+v; note: %s", pr.Levels, pr.Note)
			check(t, pr)
		})
	}
	f("stale connections", simulator.CloseOnReuse, simulator.DefaultFaults(), func(t *testing.T, p *ThroughputProbe) {
		lv := p.Levels[0]
		if lv.Failed != 0 || lv.FailedByClass != nil || lv.Retried == 0 || strings.Contains(p.Note, "refuses") {
			t.Errorf("level %+v, note %q: want no failure, resends counted", lv, p.Note)
		}
	})
	resets := simulator.DefaultFaults()
	resets.ConnectionReset = 0.5
	f("connection resets", "", resets, func(t *testing.T, p *ThroughputProbe) {
		lv := p.Levels[0]
		if len(p.Levels) != 1 || p.Saturated || lv.FailedByClass["connect"] != lv.Failed || lv.Failed == 0 ||
			!strings.Contains(p.Note, "(connect ") || !strings.Contains(p.Note, "do not say the server is full") {
			t.Errorf("probe %+v, level %+v: want a stop without saturation naming connect", p, lv)
		}
	})
	limited := simulator.DefaultFaults()
	limited.HTTP429 = 0.5
	f("rate limited", "", limited, func(t *testing.T, p *ThroughputProbe) {
		lv := p.Levels[0]
		if len(p.Levels) != 1 || !p.Saturated || lv.FailedByClass["http_429"] == 0 ||
			!strings.Contains(p.Note, "http_429 ") || !strings.Contains(p.Note, "refuses more load") {
			t.Errorf("probe %+v, level %+v: want saturation naming http_429", p, lv)
		}
	})
}
