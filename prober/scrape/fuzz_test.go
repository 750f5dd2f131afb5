package scrape

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// FuzzNewSnapshot fuzzes the /metrics parser and every reader of its
// result with a target's exposition text. It holds:
//   - no panic, whatever the text (parse, Has, Sum, Max, Idle, InfoLabels,
//     Histogram, HistogramDelta, CounterDelta);
//   - a snapshot compared with itself has a zero counter delta for every
//     finite counter series and an empty histogram delta;
//   - a histogram quantile of finite, non-negative counts is NaN or lies
//     within [min(0, lowest bound), highest finite bound], and is
//     monotonic in q;
//   - round trip: the parsed families written back with expfmt's text
//     encoder parse again to the same families and series counts.
//
// Seeds: testdata/fuzz/FuzzNewSnapshot holds excerpts of the vLLM fixtures
// and edge cases (the whole fixtures, 20-50 KB, make the fuzzer spend its
// time minimising); the whole fixtures are checked as plain tests in
// TestSnapshotFixturesHoldFuzzInvariants.
func FuzzNewSnapshot(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) { checkSnapshotInvariants(t, raw) })
}

// TestSnapshotFixturesHoldFuzzInvariants runs FuzzNewSnapshot's checks on
// the whole vLLM fixtures.
func TestSnapshotFixturesHoldFuzzInvariants(t *testing.T) {
	for p, b := range readGlob(t, "testdata/*.prom") {
		if _, err := NewSnapshot(time.Unix(0, 0), b); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		checkSnapshotInvariants(t, b)
	}
}

// readGlob returns the contents of the files matching pattern, by path; no
// such file fails the test.
func readGlob(t *testing.T, pattern string) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	out := map[string][]byte{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	return out
}

func checkSnapshotInvariants(t *testing.T, raw []byte) {
	t.Helper()
	{
		if len(raw) > 256<<10 {
			return
		}
		s, err := NewSnapshot(time.Unix(0, 0), raw)
		if err != nil {
			return
		}
		_, _ = Idle(s)
		for name, mf := range s.Families {
			if !s.Has(name) {
				t.Fatalf("Has(%q) is false for a parsed family", name)
			}
			_, _ = s.Sum(name, nil)
			_, _ = s.Max(name, map[string]string{"engine": "0"})
			_, _ = InfoLabels(s, name)
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				checkSelfDelta(t, s, name, mf)
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				checkHistogram(t, s, name, mf)
			}
		}
		var buf bytes.Buffer
		for _, mf := range s.Families {
			if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
				return // a family the text format cannot hold (e.g. native-only)
			}
		}
		again, err := NewSnapshot(s.Time, buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded exposition does not parse: %v\n%s", err, buf.Bytes())
		}
		if len(again.Families) != len(s.Families) {
			t.Fatalf("round trip: %d families, then %d", len(s.Families), len(again.Families))
		}
		for name, mf := range s.Families {
			amf := again.Families[name]
			if amf == nil || len(amf.GetMetric()) != len(mf.GetMetric()) || textType(amf) != textType(mf) {
				t.Fatalf("round trip changed family %q: %v -> %v", name, mf, amf)
			}
		}
	}
}

// textType is the family's type as the text encoder writes it: expfmt
// writes a gauge histogram (which its parser reads from
// "# TYPE x gauge_histogram") as a plain histogram.
func textType(mf *dto.MetricFamily) dto.MetricType {
	if t := mf.GetType(); t != dto.MetricType_GAUGE_HISTOGRAM {
		return t
	}
	return dto.MetricType_HISTOGRAM
}

func checkSelfDelta(t *testing.T, s *Snapshot, name string, mf *dto.MetricFamily) {
	t.Helper()
	for _, m := range mf.GetMetric() {
		v := m.GetCounter().GetValue()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return // NaN - NaN is NaN: no delta to hold
		}
	}
	d, ok := CounterDelta(s, s, name, nil)
	if ok && d != 0 {
		t.Fatalf("CounterDelta of %q with itself = %v, want 0", name, d)
	}
}

func checkHistogram(t *testing.T, s *Snapshot, name string, mf *dto.MetricFamily) {
	t.Helper()
	h, ok := s.Histogram(name, nil)
	if d, dok := HistogramDelta(s, s, name, nil); dok && d.Count() != 0 && !math.IsNaN(d.Count()) {
		if finiteCounts(mf) {
			t.Fatalf("HistogramDelta of %q with itself has count %v", name, d.Count())
		}
	}
	if !ok || !finiteCounts(mf) || len(mf.GetMetric()) != 1 {
		return
	}
	lo, hi := 0.0, math.Inf(-1)
	for _, b := range h.Buckets {
		if !math.IsInf(b.UpperBound, 0) && !math.IsNaN(b.UpperBound) {
			lo, hi = min(lo, b.UpperBound), max(hi, b.UpperBound)
		}
		if math.IsNaN(b.UpperBound) || math.IsInf(b.UpperBound, -1) {
			return
		}
	}
	prev := math.Inf(-1)
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
		v := h.Quantile(q)
		if math.IsNaN(v) {
			return
		}
		if v < lo-1e-9*math.Abs(lo) || v > hi+1e-9*math.Abs(hi) {
			t.Fatalf("quantile %v of %q = %v outside [%v, %v]; buckets %+v", q, name, v, lo, hi, h.Buckets)
		}
		if v < prev-1e-9*math.Abs(prev) {
			t.Fatalf("quantile of %q not monotonic: q=%v gives %v < %v; buckets %+v", name, q, v, prev, h.Buckets)
		}
		prev = v
	}
}

// finiteCounts reports whether every bucket count, sample count and sum of
// the family is finite and non-negative (what a real client library
// writes).
func finiteCounts(mf *dto.MetricFamily) bool {
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			return false
		}
		if v := h.GetSampleSum(); math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		for _, b := range h.GetBucket() {
			if c := b.GetCumulativeCountFloat(); c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
				return false
			}
		}
	}
	return true
}

// FuzzParseProtobuf fuzzes the protobuf parser with a body as a server
// sends it. It holds: no panic (parse, every reader, the OpenMetrics
// rendering Fetch keeps as Raw); a rendering that succeeds parses again
// to as many families. Seeds: the test registry's exposition and a few
// bytes of varint framing.
func FuzzParseProtobuf(f *testing.F) {
	fams, err := testRegistry(f).Gather()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(encode(f, fams, FormatProtobuf))
	f.Add([]byte{0x02, 0x0a, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 256<<10 {
			return
		}
		got, err := parse(raw, FormatProtobuf)
		if err != nil {
			return
		}
		s := &Snapshot{Families: got, Format: FormatProtobuf}
		_, _ = Idle(s)
		for name := range got {
			_, _ = s.Sum(name, nil)
			_, _ = s.Histogram(name, nil)
			_, _ = CounterDelta(s, s, name, nil)
			_, _ = HistogramDelta(s, s, name, nil)
			_, _ = InfoLabels(s, name)
		}
		text, err := renderOpenMetrics(got, 1<<20)
		if err != nil {
			return
		}
		again, err := NewSnapshot(time.Unix(0, 0), text)
		if err != nil {
			t.Fatalf("rendering does not parse: %v\n%s", err, text)
		}
		if len(again.Families) != len(got) {
			t.Fatalf("rendering holds %d families, the body %d:\n%s", len(again.Families), len(got), text)
		}
	})
}
