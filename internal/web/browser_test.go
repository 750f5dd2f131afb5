//go:build browser

package web

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/html"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// chromium returns the headless browser's path (Debian's chromium
// package), skipping the test when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium in PATH: .ci/browser.sh installs Debian's chromium package")
	return ""
}

// TestLandingPageInChromium renders the landing page in headless Chromium
// and reads the per-target summary and the recent sweeps from its DOM.
func TestLandingPageInChromium(t *testing.T) {
	bin := chromium(t)
	_, svc := sweepHandler(t)
	st, err := svc.Start("sim", mustSpec(t, "rates: [20]\nnum_prompts: 10\ninput_len: 32\noutput_len: 4\nmax_send_lag: 250ms\nmax_sched_latency: 250ms"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if st, err = svc.Wait(ctx, st.ID); err != nil || st.Status != sweepd.StatusDone {
		t.Fatalf("sweep: %+v %v", st, err)
	}
	win := NewWindow()
	win.ProbeStarted("sim", "p", manager.ProbeSettings{GoodputObjective: 0.95})
	feed(win, "sim", 100)
	mux := NewHandler(Options{Gatherer: prometheus.NewRegistry(), Status: fixedStatus{{Name: "sim", BaseURL: "http://sim", API: "completions",
		Probes: []manager.ProbeStatus{{Name: "default", Rate: 1}}}},
		EnableSweeps: true, Sweeps: svc, Window: win})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	out, doc := dumpDOM(t, bin, srv.URL+"/")
	row := find(doc, func(n *html.Node) bool {
		return n.Data == "tr" && attr(n, "data-target") == "sim" && ancestorID(n) == "summary"
	})
	if row == nil {
		t.Fatalf("no summary row for sim in the DOM:\n%s", out)
	}
	cells := map[string]string{}
	for c := row.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "td" {
			cells[strings.Fields(attr(c, "class") + " x")[0]] = text(c)
		}
	}
	want := map[string]string{
		"requests": "100", "ttft-p50": "50.5 ms", "ttft-p99": "99.0 ms", "tpot-p50": "5.0 ms", "tpot-p99": "9.9 ms",
		"goodput": "90.0 %", "objective": "95.0 %", "slo-state": "violated",
	}
	for k, v := range want {
		if cells[k] != v {
			t.Errorf("summary %s = %q, want %q", k, cells[k], v)
		}
	}
	if !strings.HasSuffix(cells["knee"], "req/s (api)") || !strings.HasSuffix(cells["knee-age"], "ago") {
		t.Errorf("knee %q, age %q", cells["knee"], cells["knee-age"])
	}
	// The summary opens the page: it comes before the probe's request list.
	if s, p := bytes.Index(out, []byte(`id="summary"`)), bytes.Index(out, []byte("Probe default")); s < 0 || p < 0 || s > p {
		t.Errorf("summary at %d, request lists at %d", s, p)
	}
	link := find(doc, func(n *html.Node) bool {
		return n.Data == "a" && attr(n, "href") == "/api/v1/sweeps/"+st.ID+"/files/analysis.md"
	})
	if link == nil {
		t.Errorf("no link to the sweep's analysis.md in the DOM")
	}
}

// dumpDOM loads url in headless Chromium and returns the DOM it built,
// serialized and parsed.
func dumpDOM(t *testing.T, bin, url string) ([]byte, *html.Node) {
	t.Helper()
	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	doc, err := html.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return out, doc
}

// TestLandingOnCallInChromium renders the on-call fixture's landing page
// (landing_test.go) in headless Chromium: the alerts, the engine, the sweep
// mark, the canary pair and the anchors as a browser builds them, and a
// link to a target's anchor lands on its section.
func TestLandingOnCallInChromium(t *testing.T) {
	bin := chromium(t)
	w, fs, ts, _ := onCallFixture(t)
	srv := httptest.NewServer(NewHandler(Options{Gatherer: prometheus.NewRegistry(), Status: ts, Window: w, Sweeps: fs, EnableSweeps: true}))
	defer srv.Close()
	out, doc := dumpDOM(t, bin, srv.URL+"/#target-down")
	alerts := find(doc, func(n *html.Node) bool { return n.Data == "table" && attr(n, "id") == "alerts" })
	if alerts == nil {
		t.Fatalf("no alerts table in the DOM:\n%s", out)
	}
	if a := find(alerts, func(n *html.Node) bool {
		return attr(n, "data-alert") == AlertTargetFailing && attr(n, "data-target") == "down"
	}); a == nil || !strings.Contains(words(a), "critical") {
		t.Errorf("no critical TargetFailing row for down in the DOM")
	}
	for target, engine := range map[string]string{"base": "vllm", "cand": "sglang"} {
		h := find(doc, func(n *html.Node) bool { return n.Data == "h2" && attr(n, "id") == "target-"+target })
		if h == nil {
			t.Fatalf("no section for %s", target)
		}
		p := h.NextSibling
		for p != nil && p.Type != html.ElementNode {
			p = p.NextSibling
		}
		if p == nil || !strings.Contains(words(p), "engine "+engine) {
			t.Errorf("%s's section does not name its engine %s", target, engine)
		}
	}
	if c := find(doc, func(n *html.Node) bool { return attr(n, "data-canary") == "chat-v2" }); c == nil || !strings.Contains(words(c), "TPOT mean 4.0 ms 8.0 ms 2.00×") {
		t.Errorf("the canary pair is not side by side in the DOM")
	}
	if m := find(doc, func(n *html.Node) bool { return attr(n, "class") == "sweeping" }); m == nil {
		t.Errorf("no sweep mark in the DOM")
	}
	if strings.Contains(string(out), "≥ 0 req/s") || !strings.Contains(string(out), "undecided") {
		t.Errorf("an undecided knee is not shown as undecided")
	}
}
