package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
)

// blockingSweeps is a SweepService whose Start waits for release, after
// saying it was entered; List returns runs.
type blockingSweeps struct {
	entered chan struct{}
	release chan struct{}
	runs    []sweepd.Status
}

func (b *blockingSweeps) Start(target string, _ config.SweepSpec) (sweepd.Status, error) {
	b.entered <- struct{}{}
	<-b.release
	return sweepd.Status{ID: "x", Target: target, Status: sweepd.StatusRunning}, nil
}
func (b *blockingSweeps) List() []sweepd.Status { return b.runs }
func (b *blockingSweeps) Get(string) (sweepd.Status, error) {
	return sweepd.Status{}, sweepd.ErrNotFound
}
func (b *blockingSweeps) Cancel(string) (sweepd.Status, error) {
	return sweepd.Status{}, sweepd.ErrNotFound
}
func (b *blockingSweeps) File(string, string) (*os.File, error) { return nil, sweepd.ErrNotFound }
func (b *blockingSweeps) LastOf(string) (string, capacity.Last, bool) {
	return "", capacity.Last{}, false
}
func (b *blockingSweeps) Running(string) (string, bool) { return "", false }

// TestSweepAPIRouteLimits: beyond --web.max-requests, each API route
// serves a bounded number of requests at once (one more: 429 with
// Retry-After, naming the route) and bodies of a bounded size (413 unread),
// and the list is bounded (issue 22 Deliver 4).
func TestSweepAPIRouteLimits(t *testing.T) {
	svc := &blockingSweeps{entered: make(chan struct{}), release: make(chan struct{})}
	for i := range 150 {
		svc.runs = append(svc.runs, sweepd.Status{ID: strconv.Itoa(i), Target: []string{"a", "b"}[i%2]})
	}
	srv := httptest.NewServer(NewHandler(Options{Gatherer: prometheus.NewRegistry(), EnableSweeps: true, Sweeps: svc}))
	defer srv.Close()
	base := srv.URL + "/api/v1/sweeps"
	body := []byte(`{"target": "sim", "rates": [1]}`)

	var wg sync.WaitGroup
	codes := make(chan int, MaxSweepStarts)
	for range MaxSweepStarts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := srv.Client().Post(base, jsonType, bytes.NewReader(body))
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range MaxSweepStarts {
		<-svc.entered // every start slot is held
	}
	r := call(t, srv.Client(), "POST", base, jsonType, body)
	msg, _ := r.json(t)["error"].(string)
	if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1" ||
		msg != "too many concurrent requests to POST /api/v1/sweeps (at most 4 at once): try again" {
		t.Errorf("a start over the route's limit: %d %q Retry-After %q", r.code, msg, r.header.Get("Retry-After"))
	}
	// Another route has its own slots.
	if r := call(t, srv.Client(), "GET", base+"?limit=2", "", nil); r.code != http.StatusOK {
		t.Errorf("the list while starts are held: %d %s", r.code, r.body)
	}
	close(svc.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusCreated {
			t.Errorf("a held start answered %d", c)
		}
	}

	// Bodies: a GET with a body over MaxNoBodyBytes, a start over the cap.
	if r := call(t, srv.Client(), "GET", base, "", bytes.Repeat([]byte("x"), MaxNoBodyBytes+1)); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("GET with a %d-byte body: %d", MaxNoBodyBytes+1, r.code)
	}
	if r := call(t, srv.Client(), "POST", base, jsonType, bytes.Repeat([]byte(" "), MaxSweepBodyBytes+1)); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST with a body over the cap: %d", r.code)
	}

	// The list: at most ?limit= runs, at most MaxListSweeps.
	var list struct {
		Sweeps    []sweepd.Status
		Total     int
		Truncated bool
	}
	for q, want := range map[string][3]int{"": {MaxListSweeps, 150, 1}, "?limit=2": {2, 150, 1}, "?target=a&limit=100": {75, 75, 0}} {
		r := call(t, srv.Client(), "GET", base+q, "", nil)
		list.Sweeps, list.Total, list.Truncated = nil, 0, false
		if err := json.Unmarshal(r.body, &list); err != nil || r.code != 200 {
			t.Fatalf("GET %s: %d %v", q, r.code, err)
		}
		if len(list.Sweeps) != want[0] || list.Total != want[1] || list.Truncated != (want[2] == 1) {
			t.Errorf("GET %s: %d runs of %d, truncated %v, want %v", q, len(list.Sweeps), list.Total, list.Truncated, want)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x"} {
		r := call(t, srv.Client(), "GET", base+q, "", nil)
		if msg, _ := r.json(t)["error"].(string); r.code != 400 || !strings.HasPrefix(msg, "limit: must be an integer in [1, 100]") {
			t.Errorf("GET %s: %d %q", q, r.code, msg)
		}
	}
}

// TestReloadRouteLimit: at most MaxReloads POST /-/reload are handled at
// once; one more is refused with 429 at once, not queued behind them.
func TestReloadRouteLimit(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(NewHandler(Options{Gatherer: prometheus.NewRegistry(), EnableLifecycle: true,
		Reload: func(context.Context) error { entered <- struct{}{}; <-release; return nil }}))
	defer srv.Close()
	done := make(chan int, MaxReloads)
	for range MaxReloads {
		go func() {
			resp, err := srv.Client().Post(srv.URL+"/-/reload", "", nil)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		<-entered
	}
	r := call(t, srv.Client(), "POST", srv.URL+"/-/reload", "", nil)
	if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1" || !strings.Contains(string(r.body), "/-/reload (at most 2 at once)") {
		t.Errorf("a reload over the limit: %d %q", r.code, r.body)
	}
	close(release)
	for range MaxReloads {
		if c := <-done; c != http.StatusOK {
			t.Errorf("a held reload answered %d", c)
		}
	}
}
