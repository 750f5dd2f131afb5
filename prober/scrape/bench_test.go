package scrape

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-kit/log"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

// vllmFamilies returns the simulator's vLLM persona exposition (every
// vLLM V1 family it serves) scaled to engines data-parallel engines, with
// seeded random values (counters, cumulative buckets) so that no value is
// the trivial 0: a real-sized vLLM /metrics.
func vllmFamilies(t testing.TB, engines int) []*dto.MetricFamily {
	t.Helper()
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sim.Close() }()
	fams, err := sim.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, mf := range fams {
		var out []*dto.Metric
		for _, m := range mf.Metric {
			n := 1
			if slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == "engine" }) {
				n = engines
			}
			for e := range n {
				c := proto.Clone(m).(*dto.Metric)
				for _, l := range c.Label {
					if l.GetName() == "engine" {
						l.Value = proto.String(strconv.Itoa(e))
					}
				}
				switch {
				case c.Counter != nil:
					c.Counter.Value = proto.Float64(float64(r.IntN(1 << 20)))
				case c.Gauge != nil && c.Gauge.GetValue() != 1:
					c.Gauge.Value = proto.Float64(r.Float64())
				case c.Histogram != nil:
					var cum uint64
					for _, b := range c.Histogram.Bucket {
						cum += uint64(r.IntN(1000))
						b.CumulativeCount = proto.Uint64(cum)
					}
					c.Histogram.SampleCount = proto.Uint64(cum + uint64(r.IntN(10)))
					c.Histogram.SampleSum = proto.Float64(r.Float64() * float64(cum))
				}
				out = append(out, c)
			}
		}
		mf.Metric = out
	}
	return fams
}

// BenchmarkParseVLLM measures parsing one vLLM /metrics page per format
// (the Recorder's per-scrape cost besides the HTTP round trip): the
// simulator's vLLM exposition with 1 and 16 data-parallel engines, written
// as the Python frontend serves text (with _created gauges), as
// OpenMetrics with _created lines (the Rust frontend), and as protobuf
// (protobuf+raw adds the OpenMetrics rendering Fetch keeps as Raw);
// text-expfmt is the text parser used before (expfmt.TextParser), for
// comparison.
func BenchmarkParseVLLM(b *testing.B) {
	for _, engines := range []int{1, 16} {
		fams := vllmFamilies(b, engines)
		for _, f := range []Format{FormatText, FormatOpenMetrics, FormatProtobuf} {
			raw := encode(b, fams, f)
			b.Run(fmt.Sprintf("engines=%d/%s", engines, f), func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := parse(raw, f); err != nil {
						b.Fatal(err)
					}
				}
			})
			if f == FormatProtobuf {
				// What Fetch does with a protobuf body: parse it and keep
				// its OpenMetrics rendering as Raw.
				b.Run(fmt.Sprintf("engines=%d/protobuf+raw", engines), func(b *testing.B) {
					b.SetBytes(int64(len(raw)))
					b.ReportAllocs()
					for b.Loop() {
						fams, err := parse(raw, f)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := renderOpenMetrics(fams, DefaultMaxBytes); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			if f != FormatText {
				continue
			}
			b.Run(fmt.Sprintf("engines=%d/text-expfmt", engines), func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					p := expfmt.NewTextParser(model.UTF8Validation)
					if _, err := p.TextToMetricFamilies(bytes.NewReader(raw)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestBenchmarkExpositionIsRealSized keeps BenchmarkParseVLLM honest: its
// exposition holds every vLLM family the simulator serves, and the 16-engine
// one is in the 50-500 KiB range of a real vLLM /metrics page.
func TestBenchmarkExpositionIsRealSized(t *testing.T) {
	raw := encode(t, vllmFamilies(t, 16), FormatText)
	s, err := NewSnapshot(time.Unix(0, 0), raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vllm:request_success_total", "vllm:time_to_first_token_seconds", MetricCacheConfigInfo, MetricKVCacheUsage} {
		if !s.Has(name) {
			t.Errorf("no %s", name)
		}
	}
	if n := len(raw); n < 50<<10 || n > 500<<10 {
		t.Errorf("16-engine text exposition is %d bytes", n)
	}
}
