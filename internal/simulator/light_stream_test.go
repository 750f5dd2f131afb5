package simulator_test

import (
	"bufio"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestLightClientLeaves: a client that goes away in the middle of a light
// stream (the event loop sleeps between events and sees it at its next
// write) ends the stream as an abort, with the events written so far.
func TestLightClientLeaves(t *testing.T) {
	cfg := lightConfig(t)
	base, sim := simtest.Start(t, cfg)
	resp := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":100000,"stream":true}`, "X-Request-Id", "leaver")
	br := bufio.NewReader(resp.Body)
	for range 3 { // three events: "data: ...\n" and a blank line each
		for range 2 {
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	resp.Body.Close() // leaves; the connection is not reused
	recs := readTrace(t, cfg.TraceFile, 1)
	tr := recs["leaver"]
	if tr.FinishReason != "abort" || tr.CompletionTokens < 3 || tr.CompletionTokens >= 100000 ||
		len(tr.EventsNS) != tr.CompletionTokens || tr.DoneNS != 0 {
		t.Errorf("trace record of the client that left: finish %q, %d tokens, %d events, done %d",
			tr.FinishReason, tr.CompletionTokens, len(tr.EventsNS), tr.DoneNS)
	}
	if st := sim.LightStats(); st.Active != 0 || st.Requests != 1 {
		t.Errorf("light stats after the client left: %+v", st)
	}
}

// TestLightLongWaitWatchesTheRequest: a wait longer than a plain sleep
// (a long --light.ttft) ends as soon as the client goes away.
func TestLightLongWaitWatchesTheRequest(t *testing.T) {
	cfg := lightConfig(t)
	cfg.Light.TTFT = time.Hour
	base, sim := simtest.Start(t, cfg)
	resp := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":2,"stream":true}`, "X-Request-Id", "waiter") // the headers come at once
	resp.Body.Close()
	recs := readTrace(t, cfg.TraceFile, 1)
	if tr := recs["waiter"]; tr.FinishReason != "abort" || len(tr.EventsNS) != 0 {
		t.Errorf("trace record of the client that left during the first wait: %+v", tr)
	}
	var st simulator.LightStats
	getJSON(t, base+"/light/stats", &st)
	if st.Active != 0 || sim.LightStats().Active != 0 {
		t.Errorf("light stats after the client left: %+v", st)
	}
}
