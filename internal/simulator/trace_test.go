package simulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// readTrace polls path until it holds want lines and decodes them by request id.
func readTrace(t *testing.T, path string, want int) map[string]simulator.TraceRecord {
	t.Helper()
	recs := map[string]simulator.TraceRecord{}
	testutil.Eventually(t, "trace lines", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
		if len(lines) < want || len(b) == 0 {
			return false
		}
		for _, l := range lines {
			var r simulator.TraceRecord
			if err := json.Unmarshal(l, &r); err != nil {
				t.Fatalf("trace line %q: %v", l, err)
			}
			recs[r.RequestID] = r
		}
		return true
	})
	return recs
}

func TestTraceFile(t *testing.T) {
	cfg := fastConfig()
	cfg.TraceFile = filepath.Join(t.TempDir(), "trace.jsonl")
	cfg.StepBase = 3 * time.Millisecond
	base, sim := simtest.Start(t, cfg)

	// A streaming completion, timed by the client.
	sendAt := time.Now()
	resp := post(t, base+"/v1/completions", `{"prompt":"a b c","max_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
		"X-Request-Id", "trace-stream")
	s := readSSE(t, resp)
	clientDone := time.Now()
	contentEvents := len(s.events) - 1 // all but the usage chunk

	// A chat stream (role chunk counts as a content event), a non-streaming
	// request, a bad request and a cut stream.
	s2 := readSSE(t, post(t, base+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"ignore_eos":true,"stream":true}`,
		"X-Request-Id", "trace-chat"))
	postJSON(t, base+"/v1/completions", `{"prompt":"a","max_tokens":3}`, 200, nil)
	r3 := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":0}`, "X-Request-Id", "trace-bad")
	r3.Body.Close()
	sim.SetFaults(faults(func(f *simulator.Faults) { f.CutStream = 1 }))
	_, _, cutEvents, _ := streamTimed(t, context.Background(), base+"/v1/completions", streamBody, "X-Request-Id", "trace-cut")
	sim.SetFaults(simulator.DefaultFaults())

	recs := readTrace(t, cfg.TraceFile, 5)
	r, ok := recs["trace-stream"]
	if !ok {
		t.Fatalf("no trace line for trace-stream: %v", recs)
	}
	if r.Endpoint != "/v1/completions" || !r.Stream || r.Status != 200 || r.PromptTokens != 3 ||
		r.CompletionTokens != 6 || r.FinishReason != "length" || len(r.Faults) != 0 {
		t.Errorf("record %+v", r)
	}
	if len(r.EventsNS) != contentEvents {
		t.Errorf("%d events traced, client saw %d content events", len(r.EventsNS), contentEvents)
	}
	// headers_ns is taken when the write + flush returned: an upper bound
	// on when the bytes left, so the client may see the headers a little
	// before it; it must fall between the send and the end of the stream.
	if r.HeadersNS < sendAt.UnixNano() || r.HeadersNS > clientDone.UnixNano() {
		t.Errorf("headers_ns %d outside the client's send..done window [%d, %d]", r.HeadersNS, sendAt.UnixNano(), clientDone.UnixNano())
	}

	if !slices.IsSorted(r.EventsNS) || len(r.EventsNS) == 0 || r.EventsNS[0] < r.HeadersNS || r.DoneNS < r.EventsNS[len(r.EventsNS)-1] ||
		r.DoneNS > clientDone.UnixNano() {
		t.Errorf("times out of order: headers %d events %v done %d (client done %d)", r.HeadersNS, r.EventsNS, r.DoneNS, clientDone.UnixNano())
	}
	// (Gaps between events are not asserted: after a host stall the engine
	// runs late steps back to back to keep its modeled clock, so on a busy
	// machine two events can be written microseconds apart.)

	c := recs["trace-chat"]
	if c.Endpoint != "/v1/chat/completions" || len(c.EventsNS) != len(s2.events) || c.CompletionTokens != 3 || c.DoneNS == 0 {
		t.Errorf("chat record %+v, client saw %d events", c, len(s2.events))
	}
	if b := recs["trace-bad"]; b.Status != 400 || b.HeadersNS == 0 || len(b.EventsNS) != 0 || b.FinishReason != "" {
		t.Errorf("bad request record %+v", b)
	}
	if cut := recs["trace-cut"]; cut.DoneNS != 0 || !slices.Equal(cut.Faults, []string{"cut-stream"}) ||
		len(cut.EventsNS) != len(cutEvents) || cut.FinishReason != "abort" {
		t.Errorf("cut record %+v, client saw %d events", cut, len(cutEvents))
	}
	nonStream := 0
	for id, rec := range recs {
		if !rec.Stream && rec.Status == 200 {
			nonStream++
			if len(id) != 32 || len(rec.EventsNS) != 0 || rec.HeadersNS == 0 || rec.CompletionTokens != 3 {
				t.Errorf("non-streaming record %+v", rec)
			}
		}
	}
	if nonStream != 1 {
		t.Errorf("%d non-streaming records, want 1", nonStream)
	}
}
