package scrape

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func snapshotOf(t testing.TB, name string) *Snapshot {
	t.Helper()
	s, err := NewSnapshot(time.Unix(1752300100, 0), fixture(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

const textContentType = "text/plain; version=0.0.4; charset=utf-8"

func TestFetchVLLM(t *testing.T) {
	body := fixture(t, "vllm-before.prom")
	var gotHeader http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header.Clone()
		w.Header().Set("Content-Type", textContentType)
		_, _ = w.Write(body)
	}))
	defer srv.Close()

	before := time.Now()
	s, err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics", WithBearerToken("s3cret"), WithUserAgent("llmprobe/test"))
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Raw) != string(body) {
		t.Error("Raw differs from the served body")
	}
	if s.Time.Before(before) || s.Time.After(time.Now()) {
		t.Errorf("Time %v outside the scrape", s.Time)
	}
	for _, name := range []string{
		"vllm:num_requests_running", "vllm:prompt_tokens_total",
		"vllm:time_to_first_token_seconds", "vllm:cache_config_info", "python_gc_objects_collected_total",
	} {
		if s.Families[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	// prometheus_client's _created gauges are the created timestamps of
	// their counters and histograms, as OpenMetrics and protobuf carry them.
	if s.Families["vllm:prompt_tokens_created"] != nil {
		t.Error("vllm:prompt_tokens_created kept as a family of its own")
	}
	if ct := s.Families["vllm:prompt_tokens_total"].GetMetric()[0].GetCounter().GetCreatedTimestamp(); ct.GetSeconds() == 0 {
		t.Errorf("vllm:prompt_tokens_total has no created timestamp (%v)", ct)
	}
	if s.Format != FormatText {
		t.Errorf("Format = %q, want %q", s.Format, FormatText)
	}
	tests := []struct {
		name, header, want string
	}{
		{name: "bearer", header: "Authorization", want: "Bearer s3cret"},
		{name: "user agent", header: "User-Agent", want: "llmprobe/test"},
		{name: "accept as Prometheus", header: "Accept", want: acceptHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gotHeader.Get(tt.header); got != tt.want {
				t.Errorf("%s = %q, want %q", tt.header, got, tt.want)
			}
		})
	}
}

func TestFetchErrors(t *testing.T) {
	handler := func(status int, contentType, body string, delay time.Duration) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-r.Context().Done():
					return
				}
			}
			if contentType != "" {
				w.Header().Set("Content-Type", contentType)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	tests := []struct {
		name    string
		h       http.HandlerFunc
		opts    []Option
		url     func(base string) string
		want    []string // substrings of the error
		status  int      // expected *StatusError code, 0 for none
		notWant string
	}{
		{name: "404", h: handler(404, "text/plain", "404 page not found", 0),
			want: []string{"/metrics", "unexpected status 404 Not Found"}, status: 404},
		{name: "500", h: handler(500, "", "boom", 0), want: []string{"unexpected status 500"}, status: 500},
		{name: "garbage text", h: handler(200, textContentType, "<html><body>hello</body></html>\n", 0),
			want: []string{"parse text exposition", "line 1"}},
		{name: "garbage value", h: handler(200, textContentType, "vllm:num_requests_running{engine=\"0\"} lots\n", 0),
			want: []string{"parse text exposition: line 1", `"lots"`}},
		{name: "html content type", h: handler(200, "text/html; charset=utf-8", "<html></html>", 0),
			want: []string{`unexpected content type "text/html; charset=utf-8"`}},
		{name: "protobuf garbage", h: handler(200, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", "x", 0),
			want: []string{"parse protobuf exposition: message 1"}},
		{name: "protobuf text encoding refused", h: handler(200, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=text", "x", 0),
			want: []string{"unexpected content type", `protobuf encoding "text" is not supported`}},
		{name: "openmetrics 2 refused", h: handler(200, "application/openmetrics-text; version=2.0.0; charset=utf-8", "a 1\n# EOF\n", 0),
			want: []string{"unexpected content type", `OpenMetrics version "2.0.0" is not supported`}},
		{name: "openmetrics without EOF", h: handler(200, "application/openmetrics-text; version=1.0.0; charset=utf-8", "a 1\n", 0),
			want: []string{"parse OpenMetrics exposition: line 2: data does not end with # EOF"}},
		{name: "too large", h: handler(200, textContentType, "a 1\nb 2\nc 3\n", 0), opts: []Option{WithMaxBytes(8)},
			want: []string{"response body announced 12 bytes (Content-Length), more than the 8 allowed"}},
		{name: "timeout", h: handler(200, textContentType, "a 1\n", 2*time.Second), opts: []Option{WithTimeout(50 * time.Millisecond)},
			want: []string{"context deadline exceeded"}},
		{name: "password redacted", h: handler(404, "", "", 0),
			url: func(base string) string {
				return strings.Replace(base, "http://", "http://user:hunter2@", 1) + "/metrics"
			},
			want: []string{"user:xxxxx@"}, notWant: "hunter2", status: 404},
		{name: "bearer never in errors", h: handler(401, "", "", 0), opts: []Option{WithBearerToken("tok-very-secret")},
			want: []string{"401"}, notWant: "tok-very-secret", status: 401},
		{name: "bad scheme", h: handler(200, "", "", 0), url: func(string) string { return "ftp://example.invalid/metrics" },
			want: []string{"url scheme must be http or https"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			u := srv.URL + "/metrics"
			if tt.url != nil {
				u = tt.url(srv.URL)
			}
			s, err := Fetch(context.Background(), srv.Client(), u, tt.opts...)
			if err == nil {
				t.Fatalf("no error, snapshot with %d families", len(s.Families))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error %q leaks %q", err, tt.notWant)
			}
			var se *StatusError
			if got := errors.As(err, &se); got != (tt.status != 0) || (got && se.StatusCode != tt.status) {
				t.Errorf("StatusError = %v (%v), want code %d", got, se, tt.status)
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		u := srv.URL + "/metrics"
		srv.Close()
		_, err := Fetch(context.Background(), nil, u)
		if err == nil || !strings.Contains(err.Error(), "scrape "+u) || !strings.Contains(err.Error(), "connect") {
			t.Errorf("error %v, want a connect error naming %s", err, u)
		}
	})
}

func TestSumMaxHas(t *testing.T) {
	before := snapshotOf(t, "vllm-before.prom")
	dp2 := snapshotOf(t, "vllm-dp2.prom")
	model := "meta-llama/Llama-3.1-8B-Instruct"
	tests := []struct {
		name   string
		s      *Snapshot
		metric string
		match  map[string]string
		max    bool
		want   float64
		wantOK bool
	}{
		{name: "counter with _total", s: before, metric: "vllm:prompt_tokens_total", want: 12800, wantOK: true},
		{name: "counter without _total", s: before, metric: "vllm:prompt_tokens", want: 12800, wantOK: true},
		{name: "label match", s: before, metric: "vllm:request_success_total",
			match: map[string]string{"finished_reason": "stop"}, want: 150, wantOK: true},
		{name: "all finish reasons", s: before, metric: "vllm:request_success_total", want: 200, wantOK: true},
		{name: "two labels", s: before, metric: "vllm:request_success_total",
			match: map[string]string{"finished_reason": "length", "model_name": model}, want: 50, wantOK: true},
		{name: "no series matches", s: before, metric: "vllm:request_success_total",
			match: map[string]string{"model_name": "other"}, wantOK: false},
		{name: "empty value matches absent label", s: before, metric: "vllm:prompt_tokens_total",
			match: map[string]string{"absent": ""}, want: 12800, wantOK: true},
		{name: "histogram count", s: before, metric: "vllm:time_to_first_token_seconds_count", want: 200, wantOK: true},
		{name: "histogram sum", s: before, metric: "vllm:e2e_request_latency_seconds_sum", want: 150*0.4 + 50*0.9, wantOK: true},
		{name: "histogram itself is not a scalar", s: before, metric: "vllm:time_to_first_token_seconds", wantOK: false},
		{name: "missing", s: before, metric: "vllm:nope", wantOK: false},
		{name: "nil snapshot", s: nil, metric: "vllm:prompt_tokens_total", wantOK: false},
		{name: "dp2 running summed", s: dp2, metric: MetricNumRequestsRunning, want: 9, wantOK: true},
		{name: "dp2 running one engine", s: dp2, metric: MetricNumRequestsRunning,
			match: map[string]string{"engine": "1"}, want: 5, wantOK: true},
		{name: "dp2 kv max", s: dp2, metric: MetricKVCacheUsage, max: true, want: 0.55, wantOK: true},
		{name: "gauge without labels", s: before, metric: "process_resident_memory_bytes", want: 2147483648, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got float64
			var ok bool
			if tt.max {
				got, ok = tt.s.Max(tt.metric, tt.match)
			} else {
				got, ok = tt.s.Sum(tt.metric, tt.match)
			}
			if ok != tt.wantOK || (ok && math.Abs(got-tt.want) > 1e-9) {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}

	hasTests := []struct {
		name string
		want bool
	}{
		{name: "vllm:time_to_first_token_seconds", want: true},
		{name: "vllm:time_to_first_token_seconds_count", want: true},
		{name: "vllm:num_preemptions", want: true},
		{name: "vllm:num_preemptions_total", want: true},
		{name: "vllm:gpu_cache_usage_perc", want: false},
	}
	for _, tt := range hasTests {
		t.Run("has "+tt.name, func(t *testing.T) {
			if got := before.Has(tt.name); got != tt.want {
				t.Errorf("Has = %v, want %v", got, tt.want)
			}
		})
	}
}

// mustSnapshot parses text, failing the test on an error.
func mustSnapshot(t *testing.T, text string) *Snapshot {
	t.Helper()
	s, err := NewSnapshot(time.Now(), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIdle(t *testing.T) {
	noVLLM := mustSnapshot(t, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n")
	onlyRunning := mustSnapshot(t, "vllm:num_requests_running 0\n")
	tests := []struct {
		name      string
		s         *Snapshot
		wantIdle  bool
		wantKnown bool
	}{
		{name: "idle vllm", s: snapshotOf(t, "vllm-before.prom"), wantIdle: true, wantKnown: true},
		{name: "busy vllm", s: snapshotOf(t, "vllm-during.prom"), wantIdle: false, wantKnown: true},
		{name: "busy data parallel", s: snapshotOf(t, "vllm-dp2.prom"), wantIdle: false, wantKnown: true},
		{name: "not vllm", s: noVLLM, wantIdle: false, wantKnown: false},
		{name: "waiting missing (untyped running)", s: onlyRunning, wantIdle: false, wantKnown: false},
		{name: "no snapshot", s: nil, wantIdle: false, wantKnown: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idle, known := Idle(tt.s)
			if idle != tt.wantIdle || known != tt.wantKnown {
				t.Errorf("Idle = %v, %v; want %v, %v", idle, known, tt.wantIdle, tt.wantKnown)
			}
		})
	}
}

func TestInfoLabels(t *testing.T) {
	tests := []struct {
		name   string
		s      *Snapshot
		metric string
		want   map[string]string
	}{
		{name: "cache config", s: snapshotOf(t, "vllm-before.prom"), metric: MetricCacheConfigInfo,
			want: map[string]string{"block_size": "16", "cache_dtype": "auto", "enable_prefix_caching": "True",
				"engine": "0", "num_gpu_blocks": "27724", "gpu_memory_utilization": "0.9"}},
		{name: "first engine of two", s: snapshotOf(t, "vllm-dp2.prom"), metric: MetricCacheConfigInfo,
			want: map[string]string{"engine": "0", "block_size": "16"}},
		{name: "absent", s: snapshotOf(t, "vllm-before.prom"), metric: "vllm:lora_requests_info"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := InfoLabels(tt.s, tt.metric)
			if ok != (tt.want != nil) {
				t.Fatalf("ok = %v", ok)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestCounterDelta(t *testing.T) {
	before := snapshotOf(t, "vllm-before.prom")
	after := snapshotOf(t, "vllm-after.prom")
	restarted := snapshotOf(t, "vllm-restarted.prom")
	onlyAfter := mustSnapshot(t, "# TYPE x_total counter\nx_total 5\n")
	tests := []struct {
		name          string
		before, after *Snapshot
		metric        string
		match         map[string]string
		want          float64
		wantOK        bool
	}{
		{name: "prompt tokens", before: before, after: after, metric: "vllm:prompt_tokens_total", want: 1280, wantOK: true},
		{name: "generation tokens without _total", before: before, after: after, metric: "vllm:generation_tokens", want: 320, wantOK: true},
		{name: "finished stop", before: before, after: after, metric: "vllm:request_success_total",
			match: map[string]string{"finished_reason": "stop"}, want: 15, wantOK: true},
		{name: "finished all", before: before, after: after, metric: "vllm:request_success_total", want: 20, wantOK: true},
		{name: "prefix hits", before: before, after: after, metric: "vllm:prefix_cache_hits_total", want: 640, wantOK: true},
		{name: "preemptions", before: before, after: after, metric: "vllm:num_preemptions_total", want: 2, wantOK: true},
		{name: "histogram count", before: before, after: after, metric: "vllm:e2e_request_latency_seconds_count", want: 20, wantOK: true},
		{name: "reset: value went down", before: before, after: restarted, metric: "vllm:prompt_tokens_total", want: 640, wantOK: true},
		{name: "reset seen only by _created", before: before, after: restarted, metric: "http_requests_total",
			match: map[string]string{"handler": "/v1/completions"}, want: 250, wantOK: true},
		{name: "no reset without _created change", before: before, after: after, metric: "http_requests_total",
			match: map[string]string{"handler": "/v1/completions"}, want: 20, wantOK: true},
		{name: "absent before", before: before, after: onlyAfter, metric: "x_total", wantOK: false},
		{name: "absent after", before: onlyAfter, after: before, metric: "x_total", wantOK: false},
		{name: "nil before", before: nil, after: after, metric: "vllm:prompt_tokens_total", wantOK: false},
		{name: "no match", before: before, after: after, metric: "vllm:prompt_tokens_total",
			match: map[string]string{"engine": "7"}, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CounterDelta(tt.before, tt.after, tt.metric, tt.match)
			if ok != tt.wantOK || (ok && math.Abs(got-tt.want) > 1e-9) {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestCounterDeltaNewSeries(t *testing.T) {
	b := mustSnapshot(t, "# TYPE r_total counter\nr_total{reason=\"stop\"} 10\n")
	a := mustSnapshot(t, "# TYPE r_total counter\nr_total{reason=\"stop\"} 12\nr_total{reason=\"length\"} 3\n")
	if got, ok := CounterDelta(b, a, "r_total", nil); !ok || got != 5 {
		t.Errorf("got %v, %v; want 5 (2 + a new series counted in full)", got, ok)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestHistogramDelta(t *testing.T) {
	before := snapshotOf(t, "vllm-before.prom")
	after := snapshotOf(t, "vllm-after.prom")
	restarted := snapshotOf(t, "vllm-restarted.prom")
	dp2 := snapshotOf(t, "vllm-dp2.prom")
	type q struct{ q, want float64 }
	tests := []struct {
		name      string
		h         func() (*Histogram, bool)
		wantCount float64
		wantSum   float64
		quantiles []q
	}{
		{
			// Step TTFTs: 2x0.03, 8x0.05, 6x0.07, 3x0.09, 1x0.3. Cumulative
			// le 0.04:2, 0.06:10, 0.08:16, 0.1:19, 0.25:19, 0.5:20.
			// p50: rank 10 -> (0.04,0.06], 8 of 8 -> 0.06.
			// p90: rank 18 -> (0.08,0.1], 2 of 3 -> 0.08+0.02*2/3.
			// p99: rank 19.8 -> (0.25,0.5], 0.8 of 1 -> 0.25+0.25*0.8 = 0.45.
			name: "ttft step",
			h: func() (*Histogram, bool) {
				return HistogramDelta(before, after, "vllm:time_to_first_token_seconds", nil)
			},
			wantCount: 20, wantSum: 2*0.03 + 8*0.05 + 6*0.07 + 3*0.09 + 0.3,
			quantiles: []q{{0.5, 0.06}, {0.9, 0.08 + 0.02*2.0/3.0}, {0.99, 0.45}},
		},
		{
			// Step E2Es: 10x0.45, 6x0.7, 4x1.2; le 0.3:0, 0.5:10, 0.8:16, 1.0:16, 1.5:20.
			// p50: rank 10 -> (0.3,0.5] full -> 0.5. p99: rank 19.8 -> (1.0,1.5],
			// 3.8 of 4 -> 1.475. p25: rank 5 -> (0.3,0.5], 5 of 10 -> 0.4.
			name: "e2e step",
			h: func() (*Histogram, bool) {
				return HistogramDelta(before, after, "vllm:e2e_request_latency_seconds", nil)
			},
			wantCount: 20, wantSum: 10*0.45 + 6*0.7 + 4*1.2,
			quantiles: []q{{0.5, 0.5}, {0.99, 1.475}, {0.25, 0.4}},
		},
		{
			// ITL step: 300x0.02, 20x0.06; le 0.01:0, 0.025:300, 0.05:300, 0.075:320.
			// p50: rank 160 -> (0.01,0.025], 160/300 -> 0.01+0.015*160/300.
			// p99: rank 316.8 -> (0.05,0.075], 16.8/20 -> 0.05+0.025*0.84 = 0.071.
			name: "itl step",
			h: func() (*Histogram, bool) {
				return HistogramDelta(before, after, "vllm:inter_token_latency_seconds", nil)
			},
			wantCount: 320, wantSum: 300*0.02 + 20*0.06,
			quantiles: []q{{0.5, 0.01 + 0.015*160.0/300.0}, {0.99, 0.071}},
		},
		{
			// Restart: after's count (5) is below before's (200), so the delta
			// is after itself: TTFTs 2x0.03, 3x0.05.
			name: "reset",
			h: func() (*Histogram, bool) {
				return HistogramDelta(before, restarted, "vllm:time_to_first_token_seconds", nil)
			},
			wantCount: 5, wantSum: 2*0.03 + 3*0.05,
			// p50: rank 2.5 -> (0.04,0.06], 0.5 of 3 -> 0.04+0.02/6.
			quantiles: []q{{0.5, 0.04 + 0.02/6.0}},
		},
		{
			name: "label match",
			h: func() (*Histogram, bool) {
				return HistogramDelta(before, after, "vllm:time_to_first_token_seconds", map[string]string{"engine": "0"})
			},
			wantCount: 20, wantSum: 1.45, quantiles: []q{{0.5, 0.06}},
		},
		{
			// Two engines summed bucket-wise: the same 20 TTFTs split 5/15.
			name:      "cumulative, two engines summed",
			h:         func() (*Histogram, bool) { return dp2.Histogram("vllm:time_to_first_token_seconds", nil) },
			wantCount: 20, wantSum: 1.45,
			quantiles: []q{{0.5, 0.06}, {0.99, 0.45}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok := tt.h()
			if !ok {
				t.Fatal("not ok")
			}
			if h.Count() != tt.wantCount || !near(h.Sum(), tt.wantSum) {
				t.Errorf("count %v sum %v; want %v %v", h.Count(), h.Sum(), tt.wantCount, tt.wantSum)
			}
			if !near(h.Mean(), tt.wantSum/tt.wantCount) {
				t.Errorf("mean %v, want %v", h.Mean(), tt.wantSum/tt.wantCount)
			}
			last := h.Buckets[len(h.Buckets)-1]
			if !math.IsInf(last.UpperBound, 1) || last.Count != tt.wantCount {
				t.Errorf("+Inf bucket %v, want count %v", last, tt.wantCount)
			}
			for _, x := range tt.quantiles {
				if got := h.Quantile(x.q); !near(got, x.want) {
					t.Errorf("q%v = %v, want %v", x.q, got, x.want)
				}
			}
		})
	}

	notOK := []struct {
		name string
		h    func() (*Histogram, bool)
	}{
		{name: "absent", h: func() (*Histogram, bool) { return HistogramDelta(before, after, "vllm:nope_seconds", nil) }},
		{name: "not a histogram", h: func() (*Histogram, bool) { return HistogramDelta(before, after, "vllm:prompt_tokens_total", nil) }},
		{name: "nil before", h: func() (*Histogram, bool) { return HistogramDelta(nil, after, "vllm:e2e_request_latency_seconds", nil) }},
		{name: "no match", h: func() (*Histogram, bool) {
			return HistogramDelta(before, after, "vllm:e2e_request_latency_seconds", map[string]string{"engine": "3"})
		}},
	}
	for _, tt := range notOK {
		t.Run(tt.name, func(t *testing.T) {
			if h, ok := tt.h(); ok {
				t.Errorf("ok with %+v", h)
			}
		})
	}
}

func TestHistogramDeltaMismatchedBounds(t *testing.T) {
	text := "# TYPE h histogram\n" +
		"h_bucket{a=\"1\",le=\"1\"} 1\nh_bucket{a=\"1\",le=\"+Inf\"} 1\nh_count{a=\"1\"} 1\nh_sum{a=\"1\"} 0.5\n" +
		"h_bucket{a=\"2\",le=\"2\"} 1\nh_bucket{a=\"2\",le=\"+Inf\"} 1\nh_count{a=\"2\"} 1\nh_sum{a=\"2\"} 1.5\n"
	s := mustSnapshot(t, text)
	if _, ok := s.Histogram("h", nil); ok {
		t.Error("summing series with different bounds must fail")
	}
	if h, ok := s.Histogram("h", map[string]string{"a": "2"}); !ok || h.Quantile(0.5) != 1 {
		t.Errorf("single series: %v %v", h, ok)
	}
}
