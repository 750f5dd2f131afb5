package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// The rows of issue 34 in hostileCases: N2, N5, N9, N10 and the discovery
// budget.

// probeTarget asks GET /probe for the simulator's URL followed by path.
func probeTarget(path string) func(*testing.T, *hostileDaemon) reply {
	return func(_ *testing.T, d *hostileDaemon) reply {
		return apiError(d.get("/probe?target=" + url.QueryEscape(d.sim+path)))
	}
}

// idleConnections holds 300 connections that send nothing and 700 that
// send a request and then stay open between requests (issue 34 N9: 520
// of them kept /metrics out for minutes), then asks /metrics with a 10 s
// deadline; the reply's body says how long it took.
func idleConnections(t *testing.T, d *hostileDaemon) reply {
	addr := strings.TrimPrefix(d.base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	for i := range 1000 {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i < 300 {
			continue
		}
		if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: llmprobe\r\n\r\n"); err != nil {
			continue // closed already for a newer one
		}
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	d.rss(t)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	resp, err := client.Get(d.base + "/metrics")
	if err != nil {
		return reply{0, err.Error()}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return reply{resp.StatusCode, fmt.Sprintf("/metrics answered in %v beside 1,000 idle connections", time.Since(t0).Round(time.Millisecond))}
}

// hostileSD reloads with a discovery entry whose file_sd files list
// 127.0.0.1: and : (N10), a target with a 5 KiB __path_prefix__, and one
// with a label value of 16 MiB + 1 byte (N2: it panicked the daemon in
// labels.Builder.Labels), then waits for the entry's drops to be counted.
func hostileSD(t *testing.T, d *hostileDaemon) reply {
	small := filepath.Join(d.dir, "sd-small.json")
	big := filepath.Join(d.dir, "sd-big.json")
	writes := map[string]string{
		small: `[{"targets": ["127.0.0.1:", ":"]}, {"targets": ["10.0.0.9:1"], "labels": {"__path_prefix__": "/` + strings.Repeat("p", 5<<10) + `"}}]`,
		big:   `[{"targets": ["10.0.0.8:1"], "labels": {"team": "` + strings.Repeat("x", 16<<20+1) + `"}}]`,
	}
	for f, s := range writes {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := reloadEdit(func(c string) string {
		return c + fmt.Sprintf("discovery:\n  - name: hostile\n    file_sd_configs: [{files: [%s, %s]}]\n", small, big)
	})(t, d)
	if r.code != http.StatusOK {
		return r
	}
	// Both files' targets dropped as invalid (4), or the big file refused
	// by a bound on what file_sd reads (a failure counted) and the small
	// one's 3 dropped.
	var n, failed float64
	testutil.EventuallyWithin(t, 30*time.Second, "the hostile entry's invalid targets counted", func() bool {
		_, body := d.get("/metrics")
		n = metricValue(body, `llmprobe_discovery_dropped_targets{discovery="hostile",reason="invalid"}`)
		failed = metricValue(body, `llmprobe_discovery_failures_total{discovery="hostile"}`)
		return n >= 4 || n >= 3 && failed > 0
	})
	_, body := d.get("/metrics")
	return reply{http.StatusOK, fmt.Sprintf("dropped as invalid: %v, read failures: %v; targets started: %v", n, failed,
		metricValue(body, `llmprobe_discovery_targets{discovery="hostile"}`))}
}

// metricValue is the value of the series line (name and labels as
// exposed), or -1.
func metricValue(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}
