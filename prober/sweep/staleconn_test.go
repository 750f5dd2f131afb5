package sweep

import (
	"context"
	"testing"

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
// new one: no request fails, every step is valid, and the resends are in
// the records. Every step reuses connections (the warmup's and its own), so
// without the resend each step would have failures.
func TestClosedLoopOnStaleConnections(t *testing.T) {
	sc := simtest.Fast()
	sc.CloseAfterStream = simulator.CloseOnReuse
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.Concurrency = nil, "", []int{4, 8, 32}
	cfg.NumPrompts = 96
	p, err := Prepare(context.Background(), cfg, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	res, err := p.Run(context.Background(), sink, NopObserver{})
	if err != nil {
		t.Fatal(err)
	}
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
		if st.Stats.Failed != 0 || st.Stats.Requests != cfg.NumPrompts || !st.Validity.Valid || retried[i] == 0 {
			t.Errorf("step %s: %d of %d requests failed %v, valid %v %v, %d resent; want none failed, valid, some resent",
				st.Label, st.Stats.Failed, st.Stats.Requests, st.Stats.FailedByClass, st.Validity.Valid, st.Validity.Reasons, retried[i])
		}
		t.Logf("step %s: %d requests, %d resent", st.Label, st.Stats.Requests, retried[i])
	}
}
