package daemon

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPushOnce: one push by the method, the metrics in the text format
// with the extra labels quoted on every series.
func TestPushOnce(t *testing.T) {
	type push struct{ method, body string }
	got := make(chan push, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := io.Reader(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("gzip: %v", err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		got <- push{r.Method, string(b)}
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmprobe_test_value", Help: "A test value."})
	g.Set(3)
	reg.MustRegister(g)
	err := PushOnce(context.Background(), Push{URL: srv.URL, ExtraLabels: []string{`run=a "b"`}, Method: "PUT"}, 5*time.Second, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d pushes, want 1", len(got))
	}
	p := <-got
	if p.method != "PUT" || !strings.Contains(p.body, `llmprobe_test_value{run="a \"b\""} 3`) {
		t.Errorf("push %s:\n%s", p.method, p.body)
	}
}
