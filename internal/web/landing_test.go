package web

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/html"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// fakeSweeps is a SweepService with fixed answers for the landing page.
type fakeSweeps struct {
	list    []sweepd.Status
	last    map[string]capacity.Last
	running map[string]string
}

func (f *fakeSweeps) Start(string, config.SweepSpec) (sweepd.Status, error) {
	return sweepd.Status{}, sweepd.ErrStopped
}
func (f *fakeSweeps) List() []sweepd.Status             { return f.list }
func (f *fakeSweeps) Get(string) (sweepd.Status, error) { return sweepd.Status{}, sweepd.ErrNotFound }
func (f *fakeSweeps) Cancel(string) (sweepd.Status, error) {
	return sweepd.Status{}, sweepd.ErrNotFound
}
func (f *fakeSweeps) File(string, string) (*os.File, error) { return nil, sweepd.ErrNotFound }
func (f *fakeSweeps) LastOf(t string) (string, capacity.Last, bool) {
	l, ok := f.last[t]
	return "nightly", l, ok
}
func (f *fakeSweeps) Running(t string) (string, bool) {
	id, ok := f.running[t]
	return id, ok
}

// onCallFixture is a Window with an hour of history on five targets: a
// canary pair (base healthy, cand with TPOT over its 5 ms SLO), a target
// whose every request fails (down), the same failing while a sweep runs
// (swept), and one only too_long-skipped (skips); and the sweeps of them.
func onCallFixture(t *testing.T) (*Window, *fakeSweeps, fixedStatus, time.Time) {
	t.Helper()
	now := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	clock := now.Add(-time.Hour)
	w := NewWindow()
	w.now = func() time.Time { return clock }
	sloTPOT := slo.SLO{TPOT: 5 * time.Millisecond}
	for _, n := range []string{"base", "cand", "down", "swept", "skips"} {
		w.ProbeStarted(n, "p", manager.ProbeSettings{GoodputObjective: 0.99, SLO: sloTPOT})
	}
	w.SetTargetLabels("base", map[string]string{"canary": "chat-v2", "role": "baseline", "team": "x"})
	w.SetTargetLabels("cand", map[string]string{"canary": "chat-v2", "role": "candidate"})
	w.SetTargetInfo("base", manager.TargetInfo{Engine: "vllm"})
	w.SetTargetInfo("cand", manager.TargetInfo{Engine: "sglang"})
	ok := func(target string, tpot time.Duration) {
		r := &prober.Record{Target: target, TTFT: 20 * time.Millisecond, E2E: 20*time.Millisecond + 9*tpot, CompletionTokens: 10}
		w.Observe(r, sloTPOT.Verdict(r))
	}
	fail := func(target string) {
		w.Observe(&prober.Record{Target: target, Error: prober.ClassConnect}, slo.Verdict{})
	}
	for ; !clock.After(now); clock = clock.Add(10 * time.Second) {
		ok("base", 4*time.Millisecond)
		ok("cand", 8*time.Millisecond)
		fail("down")
		fail("swept")
		w.Skipped("skips", "p", manager.SkipTooLong)
	}
	clock = now
	fs := &fakeSweeps{
		last: map[string]capacity.Last{
			"base": {Knee: 0, KneeFound: false, Decided: false, KneeUnit: "req/s", Finished: now.Add(-time.Hour)},
			"cand": {Knee: 40, KneeFound: true, Decided: true, KneeUnit: "req/s", Finished: now.Add(-2 * time.Hour)},
			"down": {Knee: 25, KneeFound: false, Decided: true, KneeUnit: "req/s", Finished: now.Add(-time.Hour)},
		},
		running: map[string]string{"swept": "abc123"},
		list: []sweepd.Status{
			{ID: "abc123", Target: "swept", Name: "api", Origin: "api", Status: sweepd.StatusRunning, Created: now.Add(-time.Minute)},
			{ID: "f00d", Target: "base", Name: "nightly", Origin: "schedule", Status: sweepd.StatusFailed, Created: now.Add(-30 * time.Minute),
				Error: "every step flagged unintended-prefix-cache"},
			{ID: "beef", Target: "base", Name: "nightly", Origin: "schedule", Status: sweepd.StatusDone, Created: now.Add(-2 * time.Hour),
				Result: &sweepd.ResultSummary{Complete: true, KneeUnit: "req/s", Reason: "no level had enough samples to decide"}},
		},
	}
	var ts fixedStatus
	for _, n := range []string{"swept", "skips", "down", "cand", "base"} {
		ts = append(ts, manager.TargetStatus{Name: n, BaseURL: "http://" + n, API: "completions", Probes: []manager.ProbeStatus{{Name: "p", Rate: 0.1}}})
	}
	return w, fs, ts, now
}

// landingDOM renders the landing page of the fixture and parses it.
func landingDOM(t *testing.T) (*html.Node, string) {
	t.Helper()
	w, fs, ts, _ := onCallFixture(t)
	h := NewHandler(Options{Gatherer: prometheus.NewRegistry(), Status: ts, Window: w, Sweeps: fs, EnableSweeps: true})
	code, body := do(t, h, "GET", "/")
	if code != 200 {
		t.Fatalf("GET /: %d %s", code, body)
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc, body
}

// TestLandingOnCall reads what on-call needs from the landing page's DOM
// (issue 21 Deliver 6, issue 22 V10): the alerts firing in the daemon's
// view, error budgets, error-rate and skipped columns, the engine, the
// sweep mark, canary pairs side by side, why a sweep failed, undecided
// knees, and an anchor per target.
func TestLandingOnCall(t *testing.T) {
	doc, body := landingDOM(t)
	firing := map[string]bool{}
	for _, n := range findAll(doc, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-alert") != "" }) {
		firing[attr(n, "data-alert")+" "+attr(n, "data-target")] = true
	}
	for _, want := range []string{
		"LLMProbeTargetFailing down", "LLMProbeGoodputBudgetBurnFast down",
		"LLMProbeTargetFailing swept", // not muted by a sweep, as in the rules
		"LLMProbeTPOTAboveSLO cand",
	} {
		if !firing[want] {
			t.Errorf("alert %s not firing; firing: %v", want, firing)
		}
	}
	for _, not := range []string{
		"LLMProbeGoodputBudgetBurnFast swept", // muted while swept
		"LLMProbeGoodputBudgetBurnSlow down",  // an hour is short of its 4h30m history
		"LLMProbeGoodputBudgetBurnFast base", "LLMProbeTPOTAboveSLO base",
		"LLMProbeTargetFailing skips", // too_long skips are the config's, not failures
	} {
		if firing[not] {
			t.Errorf("alert %s firing", not)
		}
	}

	cells := func(target string) map[string]string {
		row := find(doc, func(n *html.Node) bool {
			return n.Data == "tr" && attr(n, "data-target") == target && ancestorID(n) == "summary"
		})
		if row == nil {
			t.Fatalf("no summary row for %s", target)
		}
		out := map[string]string{}
		for c := row.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.Data == "td" {
				out[strings.Fields(attr(c, "class") + " x")[0]] = words(c)
			}
		}
		return out
	}
	// The last 5 minutes at one request per 10 s: 30 or 31 requests.
	for target, want := range map[string]map[string]string{
		"base":  {"engine": "vllm", "error-rate": "0.0 %", "skipped": "0", "knee": "undecided (nightly) latest sweep failed: every step flagged unintended-prefix-cache"},
		"cand":  {"engine": "sglang", "knee": "decided: 40 req/s (nightly)", "goodput": "0.0 %"},
		"down":  {"engine": "-", "error-rate": "100.0 %", "knee": "bound: ≥ 25 req/s (nightly)"},
		"skips": {"requests": "0", "skipped": "31", "goodput": "-"},
		"swept": {"target": "swept sweeping"},
	} {
		got := cells(target)
		for k, v := range want {
			if strings.Join(strings.Fields(got[k]), " ") != strings.Join(strings.Fields(v), " ") {
				t.Errorf("summary %s %s = %q, want %q", target, k, got[k], v)
			}
		}
	}

	// Error budgets: down's goodput budget is overspent, base's untouched.
	budget := func(target, sloName string) string {
		row := find(doc, func(n *html.Node) bool {
			return n.Data == "tr" && attr(n, "data-target") == target && attr(n, "data-slo") == sloName
		})
		if row == nil {
			t.Fatalf("no budget row %s %s", target, sloName)
		}
		return text(find(row, func(n *html.Node) bool { return strings.HasPrefix(attr(n, "class"), "budget-left") }))
	}
	if got := budget("base", "goodput"); got != "100.0 %" {
		t.Errorf("base's goodput budget left %q", got)
	}
	if got := budget("down", "goodput"); got != "-9900.0 %" {
		t.Errorf("down's goodput budget left %q, want -9900.0 %% (every request bad, 1 %% allowed)", got)
	}
	if got := budget("cand", "tpot ≤ 5ms"); got != "-9900.0 %" {
		t.Errorf("cand's tpot budget left %q", got)
	}

	// Canary pairs side by side.
	canary := find(doc, func(n *html.Node) bool { return attr(n, "data-canary") == "chat-v2" })
	if canary == nil {
		t.Fatalf("no canary table for chat-v2:\n%s", body)
	}
	tpot := find(canary, func(n *html.Node) bool { return attr(n, "data-figure") == "TPOT mean" })
	if got := words(tpot); got != "TPOT mean 4.0 ms 8.0 ms 2.00×" {
		t.Errorf("canary TPOT mean row %q", got)
	}

	// Anchors: every target's section has an id the links point at.
	for _, n := range []string{"base", "cand", "down", "swept", "skips"} {
		if find(doc, func(x *html.Node) bool { return x.Data == "h2" && attr(x, "id") == "target-"+n }) == nil {
			t.Errorf("no anchor target-%s", n)
		}
		if find(doc, func(x *html.Node) bool { return x.Data == "a" && attr(x, "href") == "#target-"+n }) == nil {
			t.Errorf("no link to #target-%s", n)
		}
	}
	// The sweep's failure reason, the running sweep's mark in the target's
	// section, the undecided knee of a finished sweep.
	if r := find(doc, func(n *html.Node) bool { return attr(n, "id") == "sweep-f00d" }); r == nil || !strings.Contains(text(r), "every step flagged unintended-prefix-cache") {
		t.Errorf("the failed sweep's row lacks its reason")
	}
	if r := find(doc, func(n *html.Node) bool { return attr(n, "id") == "sweep-beef" }); r == nil || !strings.Contains(text(r), "undecided") || strings.Contains(text(r), "≥ 0") {
		t.Errorf("the undecided sweep's row: %q", text(r))
	}
	if h := find(doc, func(n *html.Node) bool { return attr(n, "id") == "target-swept" }); h == nil || !strings.Contains(text(h), "sweeping: abc123") {
		t.Errorf("no sweep mark in swept's section")
	}
	if strings.Contains(body, "≥ 0 req/s") {
		t.Error("an undecided knee shown as ≥ 0 req/s")
	}
}

// TestKneeText pins the words of a knee: its state's word first.
func TestKneeText(t *testing.T) {
	for _, tc := range []struct {
		l    capacity.Last
		want string
	}{
		{capacity.Last{Knee: 12, KneeFound: true, Decided: true, KneeUnit: "req/s"}, "decided: 12 req/s"},
		{capacity.Last{Knee: 0, Decided: false}, "undecided"},
		{capacity.Last{Knee: 8, Decided: true, KneeUnit: "concurrency"}, "bound: ≥ 8 concurrency"},
		{capacity.Last{Knee: 8}, "bound: ≥ 8 req/s"}, // a lower bound above 0 was decided (read back from before Decided)
		{capacity.Last{Knee: 0, Decided: true}, "decided: 0 req/s (below the lowest level)"},
		{capacity.Last{Knee: 0, Decided: true, State: capacity.StateDecided}, "decided: 0 req/s (below the lowest level)"},
		// An undecided knee is no figure, whatever the other fields say.
		{capacity.Last{Knee: 6, Decided: true, State: capacity.StateUndecided}, "undecided"},
	} {
		if got := lastKnee(tc.l); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}

// words is the text under n, its text nodes' words joined by one space.
func words(n *html.Node) string {
	var w []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			w = append(w, strings.Fields(n.Data)...)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(w, " ")
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, findAll(c, match)...)
	}
	return out
}

// ancestorID is the id of n's nearest ancestor that has one.
func ancestorID(n *html.Node) string {
	for p := n.Parent; p != nil; p = p.Parent {
		if id := attr(p, "id"); id != "" {
			return id
		}
	}
	return ""
}
