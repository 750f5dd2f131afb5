package sweep

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// laggingMetrics fronts upstream and answers each GET /metrics with the
// body the previous one read from upstream (the first with its own): a
// server whose counters trail the streams it has already ended, as vLLM's
// do between handing out an iteration's outputs and logging its stats.
func laggingMetrics(t *testing.T, upstream string) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := simtest.Proxy(u)
	var mu sync.Mutex
	var prev []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			// simtest.Proxy reads the body whole before passing it on.
			proxy.ServeHTTP(w, r)
			return
		}
		resp, err := http.Get(upstream + "/metrics")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		mu.Lock()
		out := prev
		if out == nil {
			out = body
		}
		prev = body
		mu.Unlock()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAfterSnapshotSettles: the after snapshot waits for the server's
// finished-request counter to count the step's completed requests, so the
// server's token deltas hold every request even when its /metrics trails
// the last stream.
func TestAfterSnapshotSettles(t *testing.T) {
	upstream, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, laggingMetrics(t, upstream))
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{40}, "40", 10
	res := runSweep(t, cfg, &memSink{})
	if len(res.Steps) != 1 {
		t.Fatalf("%d steps", len(res.Steps))
	}
	st := res.Steps[0]
	s := st.Server
	if s.Status != statusRecorded {
		t.Fatalf("server figures %s: %s", s.Status, s.Reason)
	}
	finished := 0.0
	for _, v := range s.FinishedReasons {
		finished += v
	}
	want := float64(st.Stats.Completed)
	if st.Stats.Completed == 0 || finished != want || !s.GenerationTokens.Known || s.GenerationTokens.Value != 4*want {
		t.Errorf("completed %d; the server finished %v and generated %+v tokens, want %v and %v",
			st.Stats.Completed, finished, s.GenerationTokens, want, 4*want)
	}
}
