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
	"github.com/llmprobe/llmprobe/prober/config"
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
	st, err := svc.Start("sim", config.SweepSpec{Rates: config.Rates{Values: []float64{20}}, NumPrompts: 10,
		InputLen: 32, OutputLen: 4, MaxSendLag: config.Duration(250 * time.Millisecond)})
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

	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--dump-dom", srv.URL+"/")
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
	row := find(doc, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-target") == "sim" })
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

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, match); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}
