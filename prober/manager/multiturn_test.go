package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// TestDaemonMultiTurnProbe: a multi-turn probe runs 3-turn sessions at its
// rate, each turn a record with the session id and its turn, turn k sending
// 2k-1 messages; max_concurrency bounds the sessions in flight; the
// server's prefix cache hits the resent context.
func TestDaemonMultiTurnProbe(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	rec := simtest.Record(t, base)
	m, _, col := start(t, parse(t, fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    api: chat
    probes:
      - name: chat
        rate: 20
        max_concurrency: 2
        workload:
          input_tokens: {dist: fixed, value: 32}
          output_tokens: {dist: fixed, value: 4}
          multi_turn: {turns: 3, think_time: 10ms}
`, rec.URL)))
	complete := func(evs []event) int {
		n := 0
		for _, e := range evs {
			if e.Record.Turn == 3 && e.Record.OK() {
				n++
			}
		}
		return n
	}
	col.waitFor(t, 20*time.Second, "4 complete sessions", func(evs []event) bool { return complete(evs) >= 4 })
	m.Stop()

	type span struct {
		turns      []int
		start, end time.Time
	}
	sessions := map[string]*span{}
	for _, e := range col.snapshot() {
		r := e.Record
		if r.SessionID == "" || r.Turn < 1 {
			t.Fatalf("record %s without session id or turn (%q, %d)", r.RequestID, r.SessionID, r.Turn)
		}
		if !r.OK() && r.Error != prober.ClassCanceled {
			t.Fatalf("record %s turn %d failed: %s", r.RequestID, r.Turn, r.ErrorMessage)
		}
		s := sessions[r.SessionID]
		if s == nil {
			s = &span{start: r.Scheduled}
			sessions[r.SessionID] = s
		}
		s.turns = append(s.turns, r.Turn)
		if end := r.Sent.Add(max(r.E2E, r.Done)); end.After(s.end) {
			s.end = end
		}
	}
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for id, s := range sessions {
		for i, k := range s.turns {
			if k != i+1 {
				t.Fatalf("session %s delivered turns %v, want 1, 2, ... in order", id, s.turns)
			}
		}
		edges = append(edges, edge{s.start, 1}, edge{s.end, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	cur, most := 0, 0
	for _, e := range edges {
		cur += e.delta
		most = max(most, cur)
	}
	if most > 2 {
		t.Errorf("%d sessions in flight at once, max_concurrency is 2", most)
	}
	for _, x := range rec.Exchanges() {
		if x.Path != "/v1/chat/completions" || x.Status != http.StatusOK {
			continue
		}
		if n := len(x.Messages()); n != 1 && n != 3 && n != 5 {
			t.Fatalf("a request with %d messages; turns send 1, 3 or 5", n)
		}
	}
	snap, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if hits, _ := snap.Sum("vllm:prefix_cache_hits_total", nil); hits <= 0 {
		t.Errorf("prefix-cache hits %v, want the resent context hit", hits)
	}
}
