package web

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// feed adds n requests of target: ttft i ms and tpot i/10 ms for i in
// 1..n, every tenth failing its SLO (not good), and one canceled request.
func feed(w *Window, target string, n int) {
	for i := 1; i <= n; i++ {
		r := &prober.Record{Target: target, TTFT: time.Duration(i) * time.Millisecond, E2E: time.Duration(i)*time.Millisecond + time.Duration(i)*time.Millisecond/10*9,
			CompletionTokens: 10}
		w.Observe(r, slo.Verdict{Good: i%10 != 0})
	}
	w.Observe(&prober.Record{Target: target, Error: prober.ClassCanceled}, slo.Verdict{})
}

func TestWindowSummary(t *testing.T) {
	now := time.Unix(1700000000, 0)
	w := NewWindow()
	w.now = func() time.Time { return now }
	w.ProbeStarted("sim", "p", manager.ProbeSettings{GoodputObjective: 0.9})
	w.SLOChanged("sim", "p", slo.SLO{}, 0.95) // a reload changed it in place
	w.ProbeStarted("idle", "p", manager.ProbeSettings{GoodputObjective: 0.99})
	feed(w, "sim", 100)
	s := w.Summary("sim")
	if s.Requests != 100 || s.Good != 90 || s.GoodputRatio != 0.9 || s.Objective != 0.95 || s.SLOState != "violated" {
		t.Errorf("summary %+v", s)
	}
	// The linear percentiles of prober/stats (numpy's), as in the sweep
	// reports: of 1..100 ms, p50 50.5 ms and p99 99.01 ms.
	if s.TTFTP50 != 50500*time.Microsecond || s.TTFTP99 != 99010*time.Microsecond {
		t.Errorf("ttft p50 %v p99 %v", s.TTFTP50, s.TTFTP99)
	}
	if s.TPOTP50 != 5050*time.Microsecond || s.TPOTP99 != 9901*time.Microsecond {
		t.Errorf("tpot p50 %v p99 %v", s.TPOTP50, s.TPOTP99)
	}
	if s := w.Summary("idle"); s.Requests != 0 || s.SLOState != "no data" || s.TTFTP99 != 0 || s.Objective != 0.99 {
		t.Errorf("idle %+v", s)
	}
	// Five minutes later the requests are out of the window.
	now = now.Add(SummaryWindow + time.Second)
	if s := w.Summary("sim"); s.Requests != 0 {
		t.Errorf("after the window: %+v", s)
	}
	// The ring stays bounded.
	feed(w, "sim", maxWindowSamples+10)
	if n := len(w.targets["sim"].s); n != maxWindowSamples {
		t.Errorf("ring holds %d samples", n)
	}
	// Targets a reload removed are forgotten, requests and objective.
	w.DeleteTarget("sim")
	if _, ok := w.targets["sim"]; ok {
		t.Error("removed target kept")
	}
	if s := w.Summary("sim"); s.Objective != 0 || w.Summary("idle").Objective != 0.99 {
		t.Errorf("after DeleteTarget: sim objective %v, idle %v", s.Objective, w.Summary("idle").Objective)
	}
}
