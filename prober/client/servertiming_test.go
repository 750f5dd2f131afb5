package client

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
)

// TestServerTimingOverSimulator asks the simulator (vLLM persona,
// --enable-per-request-metrics, one sequence at a time so that concurrent
// requests queue) for its per-request timing over real HTTP and holds every
// request's split of its TTFT to the simulator's truth (its trace file):
// the server queue and server TTFT within 1 ms of what the simulator's
// clock measured, and the remainder (client TTFT − queue − server TTFT) at
// least the part of it the simulator can see (the request's time before the
// engine queued it plus the first event's time from the first token to its
// flush), minus 1 ms. Streamed and non-streamed, chat and completions;
// without IncludeMetrics, or without the simulator's flag, nothing is
// reported.
func TestServerTimingOverSimulator(t *testing.T) {
	const requests = 4
	for _, tt := range []struct {
		name     string
		api      string
		noStream bool
		ask      bool // IncludeMetrics
		serve    bool // the simulator's --enable-per-request-metrics
	}{
		{name: "chat streamed", api: APIChat, ask: true, serve: true},
		{name: "completions streamed", api: APICompletions, ask: true, serve: true},
		{name: "chat not streamed", api: APIChat, noStream: true, ask: true, serve: true},
		{name: "not asked", api: APIChat, serve: true},
		{name: "asked, not served", api: APIChat, ask: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simtest.Fast()
			cfg.MaxNumSeqs = 1 // the others wait in the queue
			cfg.StepBase = 2 * time.Millisecond
			cfg.EnablePerRequestMetrics = tt.serve
			cfg.TraceFile = filepath.Join(t.TempDir(), "trace.jsonl")
			url, _ := simtest.Start(t, cfg)
			o := Options{BaseURL: url, API: tt.api}
			if tt.ask {
				o.IncludeMetrics = func() bool { return true }
			}
			c := newClient(t, o)
			recs := make([]prober.Record, requests)
			var wg sync.WaitGroup
			for i := range recs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := Request{ID: fmt.Sprintf("st-%d", i), MaxTokens: 6, IgnoreEOS: true, NoStream: tt.noStream}
					setInput(&req, tt.api, "where did the time go")
					recs[i] = prober.Record{Target: "t", Probe: "p", Scheduled: time.Now()}
					c.Do(context.Background(), req, &recs[i])
				}()
			}
			wg.Wait()
			truth := simTrace(t, cfg.TraceFile, requests)
			queued := false
			for i, rec := range recs {
				if !rec.OK() {
					t.Fatalf("request %d: %s (%s)", i, rec.Error, rec.ErrorMessage)
				}
				tr := truth[rec.RequestID]
				if !tt.ask || !tt.serve {
					if rec.HasServerQueue || rec.HasServerTTFT || rec.HasServerGenerationTime || tr.QueueNS != 0 {
						t.Errorf("request %d: server timing %+v reported (simulator sent queue %d ns)", i, rec, tr.QueueNS)
					}
					if _, _, ok := rec.TTFTOverhead(); ok {
						t.Errorf("request %d: an overhead without server timing", i)
					}
					continue
				}
				if !rec.HasServerQueue || !rec.HasServerTTFT || !rec.HasServerGenerationTime {
					t.Fatalf("request %d: server timing not reported: queue %v ttft %v generation %v",
						i, rec.HasServerQueue, rec.HasServerTTFT, rec.HasServerGenerationTime)
				}
				within := func(what string, got time.Duration, want int64) {
					if d := got - time.Duration(want); d > time.Millisecond || d < -time.Millisecond {
						t.Errorf("request %d: %s %v, the simulator's truth %v", i, what, got, time.Duration(want))
					}
				}
				within("server queue", rec.ServerQueueTime, tr.QueueNS)
				within("server TTFT", rec.ServerTTFT, tr.ServerTTFTNS)
				if rec.ServerQueueTime > 2*cfg.StepBase {
					queued = true
				}
				if tt.noStream {
					continue // no TTFT: the split is the streamed requests'
				}
				over, negative, ok := rec.TTFTOverhead()
				if !ok || negative {
					t.Fatalf("request %d: overhead %v negative %v ok %v", i, over, negative, ok)
				}
				if sum := rec.ServerQueueTime + rec.ServerTTFT + over; sum != rec.TTFT {
					t.Errorf("request %d: queue %v + server TTFT %v + overhead %v = %v, TTFT %v", i, rec.ServerQueueTime, rec.ServerTTFT, over, sum, rec.TTFT)
				}
				// What the simulator surely spent outside its own timing:
				// the request before the engine queued it. (The first
				// token's flush is outside it too, but the simulator stamps
				// an event after its flush returned: on a busy host its
				// goroutine may wait to run longer than the client took to
				// read the event, and CI saw that stamp 2 ms after the
				// client's own.)
				// The server's figures are its exact nanoseconds in float
				// milliseconds, so 100 µs covers the rounding and the wall
				// clock's slew against the monotonic one.
				before := time.Duration(tr.ArrivalNS - rec.Sent.UnixNano())
				if over < before-100*time.Microsecond || over > rec.TTFT {
					t.Errorf("request %d: overhead %v, the request reached the simulator %v after it was sent (TTFT %v)", i, over, before, rec.TTFT)
				}
			}
			if tt.ask && tt.serve && !queued {
				t.Errorf("no request waited in the queue: the split is not exercised (queues %v)", func() []time.Duration {
					var q []time.Duration
					for _, r := range recs {
						q = append(q, r.ServerQueueTime)
					}
					return q
				}())
			}
		})
	}
}

// TestServerFiguresNonStreamed holds the non-streamed reader to the
// streamed decoder's rule: each figure a finite non-negative number in a
// metrics object, anything else ignored without an error.
func TestServerFiguresNonStreamed(t *testing.T) {
	for raw, want := range map[string][3]bool{
		`{"queue_time_ms":1.5,"time_to_first_token_ms":2,"generation_time_ms":30.25,"mean_itl_ms":null}`: {true, true, true},
		`{"queue_time_ms":null,"time_to_first_token_ms":"2","generation_time_ms":-1}`:                    {},
		`{"queue_time_ms":0,"time_to_first_token_ms":1e400}`:                                             {true, false, false},
		`{"queue_time_ms":2e9}`: {}, // beyond MaxServerMillis
		`[{"queue_time_ms":1}]`: {},
		`null`:                  {},
		``:                      {},
	} {
		var rec prober.Record
		serverFigures(json.RawMessage(raw), &rec)
		if got := [3]bool{rec.HasServerQueue, rec.HasServerTTFT, rec.HasServerGenerationTime}; got != want {
			t.Errorf("%s: known %v, want %v", raw, got, want)
		}
		if want[0] && raw[1] == 'q' && rec.ServerQueueTime != 1500*time.Microsecond && rec.ServerQueueTime != 0 {
			t.Errorf("%s: queue %v", raw, rec.ServerQueueTime)
		}
	}
}

// TestDecodeChunkServerMetricsAllocs: reading vLLM's metrics object keeps
// the per-event decoder free of allocations.
func TestDecodeChunkServerMetricsAllocs(t *testing.T) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],` +
		`"usage":{"prompt_tokens":42,"completion_tokens":128,"total_tokens":170},` +
		`"metrics":{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12.3,"mean_itl_ms":9.1,"tokens_per_second":103.2}}`)
	c := decodeChunkNoAllocs(t, data)
	if !c.hasSrvQueue || c.srvQueue != 12.3 || !c.hasSrvTTFT || c.srvTTFT != 85.2 || !c.hasSrvGen || c.srvGen != 1240.5 {
		t.Errorf("server figures %v %v, %v %v, %v %v", c.hasSrvQueue, c.srvQueue, c.hasSrvTTFT, c.srvTTFT, c.hasSrvGen, c.srvGen)
	}
}

// TestIncludeMetricsPayload: include_metrics is sent on completions and
// chat only while IncludeMetrics says so, and extra_body may not set it
// then.
func TestIncludeMetricsPayload(t *testing.T) {
	on := true
	for _, api := range []string{APICompletions, APIChat, APIResponses} {
		c := newClient(t, Options{BaseURL: "http://127.0.0.1:1", API: api, IncludeMetrics: func() bool { return on },
			ExtraBody: map[string]any{"temperature": 0}})
		for _, ask := range []bool{true, false} {
			on = ask
			b, err := c.payload(&Request{Prompt: "p", Messages: []Message{{Role: "user", Content: "p"}}, MaxTokens: 1})
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v: %s", api, err, b)
			}
			_, sent := m["include_metrics"]
			if want := ask && api != APIResponses; sent != want || m["temperature"] == nil {
				t.Errorf("%s ask=%v: %s", api, ask, b)
			}
		}
	}
	_, err := New(Options{BaseURL: "http://127.0.0.1:1", IncludeMetrics: func() bool { return true },
		ExtraBody: map[string]any{"include_metrics": false}})
	if err == nil || !strings.Contains(err.Error(), `extra body may not set "include_metrics"`) {
		t.Errorf("extra body include_metrics with server timing: %v", err)
	}
}

// simTrace waits until the simulator's trace file at path holds n
// requests, and returns them by request id.
func simTrace(t *testing.T, path string, n int) map[string]simulator.TraceRecord {
	t.Helper()
	truth := map[string]simulator.TraceRecord{}
	testutil.Eventually(t, "every request in the simulator's trace file", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			var tr simulator.TraceRecord
			if json.Unmarshal([]byte(line), &tr) == nil {
				truth[tr.RequestID] = tr
			}
		}
		return len(truth) >= n
	})
	return truth
}
