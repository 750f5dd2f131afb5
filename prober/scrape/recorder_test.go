package scrape

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// sequenceServer serves the given bodies in order (the last one repeats);
// an empty body answers 500.
func sequenceServer(t *testing.T, bodies ...[]byte) (*httptest.Server, func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := min(n, len(bodies)-1)
		n++
		mu.Unlock()
		if len(bodies[i]) == 0 {
			http.Error(w, "engine dead", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", textContentType)
		_, _ = w.Write(bodies[i])
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func TestRecorder(t *testing.T) {
	before := fixture(t, "vllm-before.prom")
	during := fixture(t, "vllm-during.prom")
	after := fixture(t, "vllm-after.prom")
	srv, _ := sequenceServer(t, before, during, nil, after)

	var buf testutil.SyncBuffer
	rec := NewRecorder(srv.Client(), srv.URL+"/metrics", 5*time.Millisecond, &buf)
	stop := rec.Start(context.Background())
	testutil.Eventually(t, "4 scrapes", func() bool { ok, failed := rec.Scrapes(); return ok >= 3 && failed >= 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	ok, failed := rec.Scrapes()
	if failed != 1 {
		t.Errorf("failed scrapes %d, want 1", failed)
	}

	// Maxima come from the during fixture: 8 running, 3 waiting, 42% KV.
	wantMax := map[string]float64{MetricNumRequestsRunning: 8, MetricNumRequestsWaiting: 3, MetricKVCacheUsage: 0.42}
	gotMax := rec.Max()
	for k, v := range wantMax {
		if gotMax[k] != v {
			t.Errorf("max %s = %v, want %v", k, gotMax[k], v)
		}
	}
	if len(gotMax) != len(wantMax) {
		t.Errorf("max has %d keys: %v", len(gotMax), gotMax)
	}
	if last := rec.Last(); last == nil || string(last.Raw) != string(after) {
		t.Error("Last is not the after fixture")
	}

	out := buf.String()
	if got := strings.Count(out, "\n# scrape-error ") + boolInt(strings.HasPrefix(out, "# scrape-error ")); got != 1 {
		t.Errorf("%d scrape-error entries, want 1", got)
	}
	if !strings.Contains(out, "unexpected status 500 Internal Server Error") {
		t.Error("scrape-error entry lacks the reason")
	}
	snaps, err := ReadScrapes(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != ok {
		t.Fatalf("read back %d scrapes, recorder counted %d", len(snaps), ok)
	}
	wantRaw := [][]byte{before, during, after}
	for i, s := range snaps {
		if i < len(wantRaw) && string(s.Raw) != string(wantRaw[i]) {
			t.Errorf("scrape %d raw differs", i)
		}
		if i > 0 && s.Time.Before(snaps[i-1].Time) {
			t.Errorf("scrape %d time %v before the previous one", i, s.Time)
		}
	}
	if idle, known := Idle(snaps[1]); idle || !known {
		t.Errorf("during scrape idle=%v known=%v", idle, known)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestRecorderStopsWithContext(t *testing.T) {
	srv, requests := sequenceServer(t, []byte("vllm:num_requests_running 1\n"))
	var buf testutil.SyncBuffer
	rec := NewRecorder(srv.Client(), srv.URL, time.Hour, &buf)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	testutil.Eventually(t, "first scrape", func() bool { ok, _ := rec.Scrapes(); return ok == 1 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if n := requests(); n != 1 {
		t.Errorf("%d requests, want 1 (scrape at start, then wait an hour)", n)
	}
	// The running max works on untyped series too.
	if m := rec.Max()[MetricNumRequestsRunning]; m != 1 {
		t.Errorf("max running %v, want 1", m)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRecorderWriteError(t *testing.T) {
	srv, _ := sequenceServer(t, []byte("a 1\n"))
	rec := NewRecorder(srv.Client(), srv.URL, time.Millisecond, failingWriter{})
	err := rec.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "write scrape recording: disk full") {
		t.Fatalf("err = %v", err)
	}
}

func TestWriteReadScrapes(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 123456789, time.FixedZone("CET", 3600))
	var buf bytes.Buffer
	if err := WriteScrape(&buf, &Snapshot{Time: t0, Raw: []byte("a 1\nb 2")}); err != nil {
		t.Fatal(err)
	}
	if err := WriteScrapeError(&buf, t0.Add(time.Second), errors.New("scrape x: connection\nrefused")); err != nil {
		t.Fatal(err)
	}
	if err := WriteScrape(&buf, &Snapshot{Time: t0.Add(2 * time.Second), Raw: []byte("a 3\n")}); err != nil {
		t.Fatal(err)
	}
	want := "# scrape 2026-11-29T08:00:00.123456789Z 1795939200123\na 1\nb 2\n" +
		"# scrape-error 2026-11-29T08:00:01.123456789Z 1795939201123 scrape x: connection refused\n" +
		"# scrape 2026-11-29T08:00:02.123456789Z 1795939202123\na 3\n"
	if buf.String() != want {
		t.Fatalf("recording:\n%s\nwant:\n%s", buf.String(), want)
	}
	snaps, err := ReadScrapes(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots, want 2", len(snaps))
	}
	if !snaps[0].Time.Equal(t0) || !snaps[1].Time.Equal(t0.Add(2*time.Second)) {
		t.Errorf("times %v %v", snaps[0].Time, snaps[1].Time)
	}
	if v, ok := snaps[1].Sum("a", nil); !ok || v != 3 {
		t.Errorf("a = %v %v", v, ok)
	}

	bad := []struct {
		name, text, want string
	}{
		{name: "text before header", text: "a 1\n", want: "line 1: text before the first"},
		{name: "bad time", text: "# scrape yesterday 1\n", want: "line 1: malformed scrape header time"},
		{name: "ms mismatch", text: "# scrape 2026-11-29T08:00:00Z 5\n", want: "do not match"},
		{name: "missing ms", text: "# scrape 2026-11-29T08:00:00Z\n", want: "malformed scrape header"},
		{name: "bad exposition", text: "# scrape 2026-11-29T08:00:00Z 1795939200000\na one\n", want: "parse text exposition"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadScrapes(strings.NewReader(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func FuzzReadScrapes(f *testing.F) {
	f.Add("# scrape 2026-11-29T08:00:00Z 1795939200000\na 1\n")
	f.Add("# scrape-error 2026-11-29T08:00:00Z 1795939200000 boom\n# scrape 2026-11-29T08:00:00Z 1795939200000\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\n")
	f.Add("\n\n# scrape 2026-11-29T08:00:00.5Z 1795939200500")
	f.Fuzz(func(t *testing.T, s string) {
		snaps, err := ReadScrapes(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, sn := range snaps {
			var buf bytes.Buffer
			if err := WriteScrape(&buf, sn); err != nil {
				t.Fatal(err)
			}
			again, err := ReadScrapes(&buf)
			if err != nil || len(again) != 1 || !again[0].Time.Equal(sn.Time) {
				t.Fatalf("round trip of %q: %v %v", sn.Raw, again, err)
			}
		}
	})
}
