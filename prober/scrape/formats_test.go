package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// encode writes fams in format: the text format with prometheus_client's
// separate <name>_created gauges (as vLLM's Python frontend serves it),
// OpenMetrics with _created lines (as the Rust frontend and
// prometheus_client serve it), or delimited protobuf (client_golang).
func encode(t testing.TB, fams []*dto.MetricFamily, format Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch format {
	case FormatText:
		for _, mf := range withCreatedGauges(fams) {
			if _, err = expfmt.MetricFamilyToText(&buf, mf); err != nil {
				break
			}
		}
	case FormatOpenMetrics:
		for _, mf := range fams {
			if _, err = expfmt.MetricFamilyToOpenMetrics(&buf, mf, expfmt.WithCreatedLines()); err != nil {
				break
			}
		}
		if err == nil {
			_, err = expfmt.FinalizeOpenMetrics(&buf)
		}
	case FormatProtobuf:
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim))
		for _, mf := range fams {
			if err = enc.Encode(mf); err != nil {
				break
			}
		}
	}
	if err != nil {
		t.Fatalf("encode %s: %v", format, err)
	}
	return buf.Bytes()
}

// withCreatedGauges returns fams with, after each counter, histogram and
// summary carrying created timestamps, a <base>_created gauge family as
// Python's prometheus_client writes in the text format (the created
// timestamps themselves are dropped: the text format has no place for
// them).
func withCreatedGauges(fams []*dto.MetricFamily) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, mf := range fams {
		mf = proto.Clone(mf).(*dto.MetricFamily)
		base := mf.GetName()
		if mf.GetType() == dto.MetricType_COUNTER {
			base = strings.TrimSuffix(base, "_total")
		}
		created := &dto.MetricFamily{Name: proto.String(base + "_created"), Help: mf.Help, Type: dto.MetricType_GAUGE.Enum()}
		for _, m := range mf.GetMetric() {
			var ts *timestamppb.Timestamp
			switch {
			case m.Counter != nil:
				ts, m.Counter.CreatedTimestamp = m.Counter.CreatedTimestamp, nil
			case m.Histogram != nil:
				ts, m.Histogram.CreatedTimestamp = m.Histogram.CreatedTimestamp, nil
			case m.Summary != nil:
				ts, m.Summary.CreatedTimestamp = m.Summary.CreatedTimestamp, nil
			}
			if ts != nil {
				v := float64(ts.GetSeconds()) + float64(ts.GetNanos())/1e9
				created.Metric = append(created.Metric, &dto.Metric{Label: m.Label, Gauge: &dto.Gauge{Value: &v}})
			}
		}
		out = append(out, mf)
		if len(created.Metric) > 0 {
			out = append(out, created)
		}
	}
	return out
}

// comparable returns a copy of fams keyed by name without exemplars (not
// kept) and created timestamps (compared by createdTimes).
func comparable(fams map[string]*dto.MetricFamily) map[string]*dto.MetricFamily {
	out := make(map[string]*dto.MetricFamily, len(fams))
	for name, mf := range fams {
		mf = proto.Clone(mf).(*dto.MetricFamily)
		for _, m := range mf.GetMetric() {
			if m.Counter != nil {
				m.Counter.Exemplar, m.Counter.CreatedTimestamp = nil, nil
			}
			if m.Histogram != nil {
				m.Histogram.Exemplars, m.Histogram.CreatedTimestamp = nil, nil
				for _, b := range m.Histogram.Bucket {
					b.Exemplar = nil
				}
			}
			if m.Summary != nil {
				m.Summary.CreatedTimestamp = nil
			}
		}
		out[name] = mf
	}
	return out
}

// checkCreated checks that got holds the created timestamps of want, to
// within a microsecond (OpenMetrics and the text format write them as
// float seconds, about 0.2 µs apart today).
func checkCreated(t *testing.T, got, want map[string]*dto.MetricFamily) {
	t.Helper()
	times := func(fams map[string]*dto.MetricFamily) map[string]float64 {
		out := map[string]float64{}
		for name, mf := range fams {
			for _, m := range mf.GetMetric() {
				if c := createdTimestamp(m); c != 0 {
					out[name+"/"+signature(m)] = c
				}
			}
		}
		return out
	}
	g, w := times(got), times(want)
	if len(g) != len(w) {
		t.Errorf("%d created timestamps, want %d", len(g), len(w))
	}
	for k, wv := range w {
		if gv, ok := g[k]; !ok || math.Abs(gv-wv) > 1e-6 {
			t.Errorf("created timestamp of %q: %v (%v), want %v", k, gv, ok, wv)
		}
	}
}

// testRegistry is a registry with every kind of family vLLM serves, with
// exemplars and created timestamps.
func testRegistry(t testing.TB) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	success := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: "Count of successfully processed requests."},
		[]string{"model_name", "engine", "finished_reason"})
	prompt := prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total", Help: "Number of prefill tokens processed."})
	running := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_requests_running", Help: "Number of requests in model execution batches."},
		[]string{"model_name", "engine"})
	waiting := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_requests_waiting", Help: "Number of requests waiting to be processed."},
		[]string{"model_name", "engine"})
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig"},
		[]string{"block_size", "engine", "enable_prefix_caching"})
	ttft := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds", Help: "Histogram of time to first token in seconds.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5}}, []string{"model_name", "engine"})
	summary := prometheus.NewSummary(prometheus.SummaryOpts{Name: "rpc_duration_seconds", Help: "A summary.",
		Objectives: map[float64]float64{0.5: 0.05, 0.99: 0.001}})
	reg.MustRegister(success, prompt, running, waiting, info, ttft, summary)
	for _, e := range []string{"0", "1"} {
		success.WithLabelValues("m", e, "stop").Add(150)
		success.WithLabelValues("m", e, "length").(prometheus.ExemplarAdder).AddWithExemplar(50, prometheus.Labels{"trace_id": "abc" + e})
		running.WithLabelValues("m", e).Set(0)
		waiting.WithLabelValues("m", e).Set(0)
		info.WithLabelValues("16", e, "True").Set(1)
		for i := range 20 {
			ttft.WithLabelValues("m", e).(prometheus.ExemplarObserver).ObserveWithExemplar(0.003*float64(i+1), prometheus.Labels{"trace_id": strconv.Itoa(i)})
		}
	}
	prompt.Add(12800)
	for i := range 10 {
		summary.Observe(float64(i))
	}
	return reg
}

// TestFormatsKeyedTheSame: the same registry served in each format parses
// to the same families (names, types, labels, values; created timestamps
// where the format carries them), and every reader finds them by the same
// names.
func TestFormatsKeyedTheSame(t *testing.T) {
	fams, err := testRegistry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[Format]map[string]*dto.MetricFamily{}
	parsed := map[Format]map[string]*dto.MetricFamily{}
	for _, f := range []Format{FormatText, FormatOpenMetrics, FormatProtobuf} {
		raw := encode(t, fams, f)
		p, err := parse(raw, f)
		if err != nil {
			t.Fatalf("%s: %v\n%s", f, err, raw)
		}
		parsed[f], got[f] = p, comparable(p)
	}
	gathered := map[string]*dto.MetricFamily{}
	for _, mf := range fams {
		gathered[mf.GetName()] = mf
	}
	want := comparable(gathered)
	for f, fs := range got {
		t.Run(string(f), func(t *testing.T) {
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range fs {
					if !yield(n) {
						return
					}
				}
			})
			wantNames := make([]string, 0, len(want))
			for n := range want {
				wantNames = append(wantNames, n)
			}
			sort.Strings(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Fatalf("families %v, want %v", names, wantNames)
			}
			for n, w := range want {
				if g := fs[n]; !proto.Equal(g, w) {
					t.Errorf("family %s:\n got %v\nwant %v", n, g, w)
				}
			}
			// The text format's _created gauges, OpenMetrics' _created
			// lines and protobuf's fields give the same times.
			checkCreated(t, parsed[f], gathered)
		})
	}
	for _, f := range []Format{FormatText, FormatOpenMetrics} {
		if s, err := NewSnapshot(time.Unix(0, 0), encode(t, fams, f)); err != nil || s.Format != f {
			t.Errorf("NewSnapshot read %s as %v (%v)", f, s, err)
		}
	}
}

// TestFetchEachFormat serves one exposition in each format with its
// Content-Type and reads it through every reader: the same sums, deltas,
// idle proof and info labels, and a Raw that is text (a protobuf body is
// kept as its OpenMetrics rendering, which parses back to the same
// families).
func TestFetchEachFormat(t *testing.T) {
	fams, err := testRegistry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	contentType := map[Format]expfmt.Format{
		FormatText:        expfmt.NewFormat(expfmt.TypeTextPlain),
		FormatOpenMetrics: expfmt.NewFormat(expfmt.TypeOpenMetrics),
		FormatProtobuf:    expfmt.NewFormat(expfmt.TypeProtoDelim),
	}
	for _, f := range []Format{FormatText, FormatOpenMetrics, FormatProtobuf} {
		t.Run(string(f), func(t *testing.T) {
			body := encode(t, fams, f)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", string(contentType[f]))
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			s, err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			if s.Format != f {
				t.Errorf("Format %s, want %s", s.Format, f)
			}
			if v, ok := s.Sum("vllm:request_success_total", map[string]string{"finished_reason": "length"}); !ok || v != 100 {
				t.Errorf("length finishes %v %v, want 100", v, ok)
			}
			if v, ok := s.Sum("vllm:request_success", nil); !ok || v != 400 {
				t.Errorf("finishes by base name %v %v, want 400", v, ok)
			}
			if h, ok := s.Histogram("vllm:time_to_first_token_seconds", nil); !ok || h.Count() != 40 || len(h.Buckets) != 11 {
				t.Errorf("ttft histogram %+v %v, want 40 observations in 11 buckets", h, ok)
			}
			if v, ok := s.Sum("vllm:time_to_first_token_seconds_count", map[string]string{"engine": "0"}); !ok || v != 20 {
				t.Errorf("ttft _count %v %v", v, ok)
			}
			if v, ok := s.Sum("rpc_duration_seconds_count", nil); !ok || v != 10 {
				t.Errorf("summary _count %v %v", v, ok)
			}
			if idle, known := Idle(s); !idle || !known {
				t.Errorf("Idle = %v, %v", idle, known)
			}
			if l, ok := InfoLabels(s, MetricCacheConfigInfo); !ok || l["block_size"] != "16" || l["engine"] != "0" {
				t.Errorf("cache_config_info %v %v", l, ok)
			}
			if d, ok := CounterDelta(s, s, "vllm:request_success_total", nil); !ok || d != 0 {
				t.Errorf("self delta %v %v", d, ok)
			}
			if f == FormatProtobuf && !isOpenMetrics(s.Raw) {
				t.Errorf("Raw of a protobuf scrape is not OpenMetrics text:\n%s", s.Raw)
			}
			again, err := NewSnapshot(s.Time, s.Raw)
			if err != nil {
				t.Fatalf("Raw does not parse again: %v", err)
			}
			if len(again.Families) != len(s.Families) {
				t.Errorf("Raw parses to %d families, the scrape had %d", len(again.Families), len(s.Families))
			}
			for n, mf := range comparable(s.Families) {
				if g := comparable(again.Families)[n]; !proto.Equal(g, mf) {
					t.Errorf("family %s read back from Raw:\n got %v\nwant %v", n, g, mf)
				}
			}
			checkCreated(t, again.Families, s.Families)
		})
	}
	t.Run("protobuf rendering bounded", func(t *testing.T) {
		body := encode(t, fams, FormatProtobuf)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", string(contentType[FormatProtobuf]))
			_, _ = w.Write(body)
		}))
		defer srv.Close()
		_, err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics", WithMaxBytes(int64(len(body))))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than the %d bytes allowed", len(body))) {
			t.Errorf("error %v, want the rendering refused past the body cap", err)
		}
	})
}

// TestPythonFixturesAsOpenMetrics: the vLLM fixtures (prometheus_client's
// text format) rendered as OpenMetrics give the same figures, resets by
// _created included.
func TestPythonFixturesAsOpenMetrics(t *testing.T) {
	asOM := func(name string) *Snapshot {
		s := snapshotOf(t, name)
		var fams []*dto.MetricFamily
		for _, n := range slices.Sorted(func(yield func(string) bool) {
			for n := range s.Families {
				if !yield(n) {
					return
				}
			}
		}) {
			fams = append(fams, s.Families[n])
		}
		om, err := NewSnapshot(s.Time, encode(t, fams, FormatOpenMetrics))
		if err != nil || om.Format != FormatOpenMetrics {
			t.Fatalf("%s as OpenMetrics: %v (%s)", name, err, om.Format)
		}
		return om
	}
	for _, tc := range []struct{ before, after, metric string }{
		{"vllm-before.prom", "vllm-after.prom", "vllm:prompt_tokens_total"},
		{"vllm-before.prom", "vllm-after.prom", "vllm:request_success_total"},
		{"vllm-before.prom", "vllm-restarted.prom", "http_requests_total"},
		{"vllm-before.prom", "vllm-restarted.prom", "vllm:generation_tokens"},
		{"vllm-before.prom", "vllm-after.prom", "vllm:e2e_request_latency_seconds_count"},
	} {
		t.Run(tc.after+" "+tc.metric, func(t *testing.T) {
			want, wok := CounterDelta(snapshotOf(t, tc.before), snapshotOf(t, tc.after), tc.metric, nil)
			got, gok := CounterDelta(asOM(tc.before), asOM(tc.after), tc.metric, nil)
			if !wok || gok != wok || got != want {
				t.Errorf("OpenMetrics delta %v %v, text %v %v", got, gok, want, wok)
			}
		})
	}
	wantH, _ := HistogramDelta(snapshotOf(t, "vllm-before.prom"), snapshotOf(t, "vllm-after.prom"), "vllm:time_to_first_token_seconds", nil)
	gotH, ok := HistogramDelta(asOM("vllm-before.prom"), asOM("vllm-after.prom"), "vllm:time_to_first_token_seconds", nil)
	if !ok || gotH.Count() != wantH.Count() || gotH.Quantile(0.9) != wantH.Quantile(0.9) {
		t.Errorf("OpenMetrics TTFT delta %+v, text %+v", gotH, wantH)
	}
	if l, ok := InfoLabels(asOM("vllm-dp2.prom"), MetricCacheConfigInfo); !ok || l["num_gpu_blocks"] != "27724" {
		t.Errorf("cache_config_info from OpenMetrics: %v %v", l, ok)
	}
}

// TestHostileOpenMetrics: malformed OpenMetrics is a *ParseError naming
// the format, the line and what is wrong; never a panic, never a partial
// snapshot.
func TestHostileOpenMetrics(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"no EOF", "# TYPE a counter\na_total 1\n", 3, "data does not end with # EOF"},
		{"data after EOF", "a 1\n# EOF\nb 2\n", 0, "unexpected data after # EOF"},
		{"bad value", "a 1x\n# EOF\n", 1, `"1x"`},
		{"unknown type", "# TYPE a bogus\n# EOF\n", 1, `invalid metric type "bogus"`},
		{"type changes", "# TYPE a gauge\na 1\n# TYPE a histogram\na_bucket{le=\"1\"} 1\n# EOF\n", 4, `sample "a_bucket" of a HISTOGRAM family "a", which has GAUGE samples before`},
		{"duplicate series", "# TYPE a counter\na_total{x=\"1\"} 1\na_total{x=\"1\"} 2\n# EOF\n", 3, `duplicate sample {__name__="a_total", x="1"}`},
		{"duplicate label", "a{x=\"1\",x=\"2\"} 1\n# EOF\n", 1, `label "x" twice`},
		{"bucket le not a number", "# TYPE h histogram\nh_bucket{le=\"soon\"} 1\n# EOF\n", 2, `le label "soon" is not a number`},
		{"negative bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} -1\n# EOF\n", 2, "negative count -1"},
		{"histogram sample without suffix", "# TYPE h histogram\nh 1\n# EOF\n", 2, `want h_bucket, _count or _sum`},
		{"created not a time", "# TYPE a counter\na_total 1\na_created NaN\n# EOF\n", 3, "created timestamp NaN is not a time in seconds"},
		{"bad exemplar", "# TYPE a counter\na_total 1 # {trace_id=\"x\"} many\n# EOF\n", 2, "many"},
		{"unterminated labels", "a{x=\"1 1\n# EOF\n", 1, ""},
		{"invalid UTF-8 label value", "a{x=\"\xff\"} 1\n# EOF\n", 1, "invalid UTF-8 label value"},
		{"binary garbage", "\x00\x01\x02\xff\n# EOF\n", 1, ""},
		{"blank line", "a 1\n\nb 2\n# EOF\n", 2, ""},
		{"summary quantile not a number", "# TYPE s summary\ns{quantile=\"high\"} 1\n# EOF\n", 2, `quantile label "high" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fams, err := parse([]byte(tt.text), FormatOpenMetrics)
			if err == nil {
				t.Fatalf("no error; families %v", fams)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Format != FormatOpenMetrics {
				t.Fatalf("error %v (%T), want an OpenMetrics *ParseError", err, err)
			}
			if tt.line != 0 && pe.Line != tt.line {
				t.Errorf("line %d, want %d (%v)", pe.Line, tt.line, err)
			}
			if !strings.HasPrefix(err.Error(), "parse OpenMetrics exposition: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestHostileProtobuf: a malformed protobuf body is a *ParseError naming
// the message that failed. A NUL byte is valid UTF-8 yet no text exposition
// can carry it (FuzzParseProtobuf found a name with one whose rendering
// did not parse), so it is refused in names, help and labels.
func TestHostileProtobuf(t *testing.T) {
	withFamily := func(name, help, value string) []byte { // marshalled as is (expfmt's encoder escapes names)
		b, err := proto.Marshal(&dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: proto.String("l"), Value: proto.String(value)}},
				Gauge: &dto.Gauge{Value: proto.Float64(1)}}}})
		if err != nil {
			t.Fatal(err)
		}
		return append(protowire.AppendVarint(nil, uint64(len(b))), b...)
	}
	good := encode(t, []*dto.MetricFamily{{Name: proto.String("a"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}}, FormatProtobuf)
	bad := encode(t, []*dto.MetricFamily{{Name: proto.String(""), Type: dto.MetricType_GAUGE.Enum()}}, FormatProtobuf)
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"truncated", good[:len(good)-2], "message 1: length 18 is past the end of the body (16 bytes left)"},
		{"huge length", []byte{0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, 0x1a}, "message 1: length 2180017179801 is past the end of the body (1 bytes left)"},
		{"malformed length", []byte{0xff, 0xff}, "message 1: malformed length prefix"},
		{"not a MetricFamily", []byte{0x02, 0xff, 0xff}, "message 1: "},
		{"second family of a name", append(slices.Clone(good), good...), `message 2: second family "a"`},
		{"invalid name", append(slices.Clone(good), bad...), `message 2: invalid metric name ""`},
		{"NUL in a name", withFamily("a\x00b", "", "v"), `message 1: invalid metric name "a\x00b"`},
		{"NUL in help", withFamily("a", "h\x00", "v"), `message 1: family "a": help or unit is not UTF-8 without NUL bytes`},
		{"NUL in a label value", withFamily("a", "", "v\x00"), `message 1: family "a": invalid label "l"="v\x00"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.raw, FormatProtobuf)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Format != FormatProtobuf || !strings.Contains(err.Error(), "parse protobuf exposition: "+tt.want) {
				t.Errorf("error %v (%T), want a protobuf *ParseError with %q", err, err, tt.want)
			}
		})
	}
}

// TestResponseFormat pins the Content-Type negotiation.
func TestResponseFormat(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		want Format
		err  string
	}{
		{"", FormatText, ""},
		{"text/plain; version=0.0.4; charset=utf-8", FormatText, ""},
		{"text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8", FormatText, ""},
		{"not a media type;;", FormatText, ""},
		{"application/openmetrics-text; version=1.0.0; charset=utf-8", FormatOpenMetrics, ""},
		{"application/openmetrics-text; version=0.0.1; charset=utf-8", FormatOpenMetrics, ""},
		{"application/openmetrics-text", FormatOpenMetrics, ""},
		{"application/openmetrics-text; version=2.0.0", "", `OpenMetrics version "2.0.0" is not supported`},
		{"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", FormatProtobuf, ""},
		{"application/vnd.google.protobuf; proto=other.Message; encoding=delimited", "", `protobuf of "other.Message"`},
		{"application/json", "", "want the Prometheus text, OpenMetrics or protobuf format"},
	} {
		got, err := responseFormat(tc.ct)
		var cte *ContentTypeError
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.ct, got, err, tc.want)
		case tc.err != "" && (!errors.As(err, &cte) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want a *ContentTypeError with %q", tc.ct, err, tc.err)
		}
	}
}

// TestOpenMetricsFuzzSeedsParse keeps the OpenMetrics seeds of
// FuzzNewSnapshot meaningful: each parses as OpenMetrics, so the fuzzer
// starts from valid expositions and the invariants are checked on them.
func TestOpenMetricsFuzzSeedsParse(t *testing.T) {
	for p, b := range readGlob(t, "testdata/fuzz/FuzzNewSnapshot/om-*") {
		lit, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "go test fuzz v1\n[]byte(")
		raw, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if !ok || err != nil {
			t.Fatalf("%s: not a []byte seed: %v", p, err)
		}
		s, err := NewSnapshot(time.Unix(0, 0), []byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if s.Format != FormatOpenMetrics || len(s.Families) == 0 {
			t.Fatalf("%s: read as %s, %d families", p, s.Format, len(s.Families))
		}
		checkSnapshotInvariants(t, []byte(raw))
	}
}

// TestOpenMetricsInfoFamily: an OpenMetrics info family (TYPE by its base
// name, an _info sample) is found under its sample name, as the text
// format's info-style gauge vllm:cache_config_info is.
func TestOpenMetricsInfoFamily(t *testing.T) {
	s, err := NewSnapshot(time.Unix(0, 0), []byte("# HELP vllm:cache_config Information of the LLMEngine CacheConfig\n"+
		"# TYPE vllm:cache_config info\n"+
		"vllm:cache_config_info{block_size=\"32\",engine=\"1\"} 1\n"+
		"vllm:cache_config_info{block_size=\"16\",engine=\"0\"} 1\n# EOF\n"))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := InfoLabels(s, MetricCacheConfigInfo)
	if !ok || l["block_size"] != "16" || l["engine"] != "0" {
		t.Errorf("InfoLabels = %v, %v; want engine 0's block_size 16", l, ok)
	}
	if mf := s.Families[MetricCacheConfigInfo]; mf.GetType() != dto.MetricType_GAUGE || mf.GetHelp() == "" {
		t.Errorf("family %v, want a gauge with the help text", mf)
	}
}
