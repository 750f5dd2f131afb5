package compare

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// recordSink keeps a round's requests and its whole records.
type recordSink struct {
	requestSink
	rmu  sync.Mutex
	recs []prober.Record
}

func (s *recordSink) Record(r sweep.StepRecord) error {
	s.rmu.Lock()
	s.recs = append(s.recs, *r.Record)
	s.rmu.Unlock()
	return s.requestSink.Record(r)
}

// readTrace reads a simulator's trace file by request id.
func readTrace(t *testing.T, path string) map[string]simulator.TraceRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]simulator.TraceRecord{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var tr simulator.TraceRecord
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil {
			t.Fatal(err)
		}
		out[tr.RequestID] = tr
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompareServerTimingOverHTTP is issue 36 Deliver 2's compare test: two
// simulators serving vLLM's per-request metrics object, the candidate with
// one sequence at a time (its requests wait in its queue), compared in two
// rounds per side. Per request, the compare sample's server queue and
// server TTFT are the simulator's truth (its trace file) within 1 ms, so
// each side's split (queue + server TTFT + overhead) sums to the client
// TTFT within 1 ms; the verdict reports each side's medians and p99 over
// every request (n), the same as the truth's, and the candidate's queue is
// where its TTFT grew. result.json carries the split.
func TestCompareServerTimingOverHTTP(t *testing.T) {
	traces := map[string]string{}
	side := func(name string, seqs int) sweep.Config {
		sc := simtest.Fast()
		sc.StepBase = 2 * time.Millisecond
		sc.MaxNumSeqs = seqs
		sc.EnablePerRequestMetrics = true
		sc.TraceFile = filepath.Join(t.TempDir(), "trace.jsonl")
		traces[name] = sc.TraceFile
		url, _ := simtest.Start(t, sc)
		return sweep.Config{
			Target: url, API: "chat", Timeout: 30 * time.Second,
			Workload:       workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(8)},
			WorkloadSource: "flags", Rates: []float64{200}, RatesText: "200", Arrival: "poisson", Burstiness: 1,
			NumPrompts: 12, Warmups: 0, Rounds: 1, MetricsInterval: 100 * time.Millisecond, IdleTimeout: 2 * time.Second,
			OutDir: t.TempDir(), Name: name, Embedded: true,
			Validity: sweep.ValidityOptions{MaxSendLag: 100 * time.Millisecond, MaxSchedLatency: 100 * time.Millisecond},
		}
	}
	var mu sync.Mutex
	recs := map[string][]prober.Record{}
	run := func(ctx context.Context, r *RoundRun) (*RoundOutcome, error) {
		sp, err := sweep.Prepare(ctx, r.Config, sweep.Options{Logger: r.Logger})
		if err != nil {
			return nil, err
		}
		sink := &recordSink{requestSink: requestSink{reqs: map[int][]Request{}}}
		res, err := sp.Run(ctx, sink, r.Observer)
		if res == nil {
			return nil, err
		}
		mu.Lock()
		recs[r.Round.Side] = append(recs[r.Round.Side], sink.recs...)
		mu.Unlock()
		return &RoundOutcome{Result: res, Complete: res.Complete, Evidence: FromSweep(r.Config.Name, res, sink.reqs)}, err
	}
	th, err := ParseThresholds("ttft_p99=10%")
	if err != nil {
		t.Fatal(err)
	}
	p := &Procedure{Baseline: side(SideBaseline, 64), Candidate: side(SideCandidate, 1), Order: OrderABBA, Rounds: 4, Seed: 1,
		Thresholds: th, Vary: []string{FieldEndpoint}, Iters: 200, RunRound: run, Logger: log.NewNopLogger()}
	cr := p.Run(context.Background())
	if cr.Result == nil || len(cr.Result.ServerTiming) != 1 {
		t.Fatalf("complete %v, result %+v", cr.Complete, cr.Result)
	}
	st := cr.Result.ServerTiming[0]
	var queueP50 [2]float64
	for i, name := range []string{SideBaseline, SideCandidate} {
		got := st.Baseline
		if name == SideCandidate {
			got = st.Candidate
		}
		truth := readTrace(t, traces[name])
		var ttft, queue, srv, over []float64
		for _, rec := range recs[name] {
			if !rec.OK() {
				continue
			}
			q := RequestOf(&rec)
			tr, ok := truth[rec.RequestID]
			if !q.ServerTiming || !ok || tr.ServerTTFTNS == 0 {
				t.Fatalf("%s request %s: server timing %v, trace %+v", name, rec.RequestID, q.ServerTiming, tr)
			}
			tq, ts := float64(tr.QueueNS)/1e6, float64(tr.ServerTTFTNS)/1e6
			o := q.TTFT - q.ServerQueue - q.ServerTTFT
			// The split by the simulator's truth sums to the client's TTFT.
			if d := tq + ts + o - q.TTFT; math.Abs(d) > 1 {
				t.Errorf("%s request %s: truth queue %.3f + server TTFT %.3f + overhead %.3f = %.3f ms, client TTFT %.3f ms",
					name, rec.RequestID, tq, ts, o, tq+ts+o, q.TTFT)
			}
			ttft, queue, srv, over = append(ttft, q.TTFT), append(queue, tq), append(srv, ts), append(over, q.TTFT-tq-ts)
		}
		if got.NotRecorded != "" || got.N != len(ttft) || got.N < 2*p.Baseline.NumPrompts {
			t.Fatalf("%s split %+v, want n %d", name, got, len(ttft))
		}
		for _, c := range []struct {
			what string
			part *SplitPart
			xs   []float64
		}{{"client TTFT", got.ClientTTFT, ttft}, {"queue", got.Queue, queue}, {"server TTFT", got.ServerTTFT, srv}, {"overhead", got.Overhead, over}} {
			for _, q := range []struct {
				p   float64
				got float64
			}{{50, c.part.P50}, {99, c.part.P99}} {
				if want := stats.Percentile(c.xs, q.p); math.Abs(q.got-want) > 1 {
					t.Errorf("%s %s p%v: %.3f ms, the truth's %.3f ms", name, c.what, q.p, q.got, want)
				}
			}
		}
		queueP50[i] = got.Queue.P50
		pp := func(p *SplitPart) string { return Num(p.P50) + "/" + Num(p.P99) }
		t.Logf("%s: TTFT %s = queue %s + server TTFT %s + overhead %s ms p50/p99 (n %d)", name, pp(got.ClientTTFT), pp(got.Queue),
			pp(got.ServerTTFT), pp(got.Overhead), got.N)
	}
	if queueP50[1] <= queueP50[0] {
		t.Errorf("queue p50: baseline %.3f ms, candidate (one sequence at a time) %.3f ms", queueP50[0], queueP50[1])
	}
	b, err := json.Marshal(cr)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"server_timing":[{"level":"rate=200","baseline":{"n":`) || !strings.Contains(s, `"server_queue_ms":{"p50":`) {
		t.Errorf("result.json: %.3000s", b)
	}
}

// TestServerTimingSideNotRecorded: a side whose requests carry no server
// timing says why (the sweep's reason), and one without per-request
// samples says so.
func TestServerTimingSideNotRecorded(t *testing.T) {
	steps := []*Step{{Label: "rate=1", Requests: []Request{{OK: true, TTFT: 10}}, ServerTimingNote: "engine sglang returns no per-request timing"}}
	if s := serverTimingSide(steps); s.N != 0 || s.NotRecorded != "engine sglang returns no per-request timing" || s.Queue != nil {
		t.Errorf("no timing: %+v", s)
	}
	if s := serverTimingSide([]*Step{{Label: "rate=1"}}); s.NotRecorded != noServerTimingSamples {
		t.Errorf("no samples: %+v", s)
	}
	steps = []*Step{{Label: "rate=1", Requests: []Request{
		{OK: true, TTFT: 10, ServerTiming: true, ServerQueue: 2, ServerTTFT: 7},
		{OK: true, TTFT: 5, ServerTiming: true, ServerQueue: 3, ServerTTFT: 3},
		{OK: false, ServerTiming: true, ServerQueue: 100},
	}}}
	s := serverTimingSide(steps)
	if s.N != 2 || s.NegativeOverhead != 1 || s.Overhead.P50 != 0 || s.Queue.P50 != 2.5 {
		t.Errorf("split %+v, overhead %+v, queue %+v", s, s.Overhead, s.Queue)
	}
}
