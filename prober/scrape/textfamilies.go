package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// This file turns the samples of Prometheus' text and OpenMetrics parsers
// (model/textparse) into metric families keyed as Snapshot.Families says.

// part is what one text sample holds of its series.
type part uint8

const (
	partValue    part = iota // counter, gauge or untyped value
	partQuantile             // summary quantile
	partCreated              // _created (seconds)
	partBucket               // histogram _bucket
	partSum                  // _sum, _gsum
	partCount                // _count, _gcount
)

// family is a family being built from text samples.
type family struct {
	mf *dto.MetricFamily
	// series by label signature (labels without __name__, and le or
	// quantile).
	series map[string]*dto.Metric
}

// builder turns a textparse.Parser's samples into families keyed the same
// whatever the format: a counter as its _total sample name (OpenMetrics
// types it by its base name), a histogram or summary by its base name, an
// OpenMetrics info family as its _info sample name (a gauge), a stateset
// as a gauge; _created samples become the series' created timestamp.
type builder struct {
	raw    []byte
	format Format
	types  map[string]model.MetricType
	help   map[string]string
	fams   map[string]*family
	lset   labels.Labels
	key    []byte
	// last is the offset in raw of the last entry parsed, -1 before any.
	last int
}

func (b *builder) run(p textparse.Parser) error {
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &ParseError{Format: b.format, Line: b.nextLine(), Err: err}
		}
		switch e {
		case textparse.EntryType:
			name, t := p.Type()
			b.mark(name)
			// A later TYPE line for a name wins for the samples after it:
			// Go's registry has both a gauge go_memstats_alloc_bytes and
			// a counter go_memstats_alloc_bytes_total, which OpenMetrics
			// types by the same base name.
			b.types[string(name)] = t
		case textparse.EntryHelp:
			name, text := p.Help()
			b.mark(name)
			if b.help == nil {
				b.help = map[string]string{}
			}
			b.help[string(name)] = string(text)
		case textparse.EntryUnit:
			name, _ := p.Unit()
			b.mark(name)
		case textparse.EntryComment:
			b.mark(p.Comment())
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			b.mark(series)
			p.Labels(&b.lset)
			if err := b.add(ts, v); err != nil {
				return b.errorHere(err)
			}
		default:
			series, _, _, _ := p.Histogram()
			b.mark(series)
			return b.errorHere(errors.New("native histogram samples are not supported in text formats"))
		}
	}
}

// mark records the offset in raw of an entry whose bytes are sub, when sub
// lies in raw (the parsers return slices of their input).
func (b *builder) mark(sub []byte) {
	if len(sub) == 0 {
		return
	}
	off := cap(b.raw) - cap(sub)
	if off < 0 || off >= len(b.raw) || &b.raw[off] != &sub[0] {
		return
	}
	b.last = off
}

// lineOf returns the 1-based line of offset off in raw.
func (b *builder) lineOf(off int) int { return bytes.Count(b.raw[:off], []byte{'\n'}) + 1 }

// errorHere is err on the line of the last entry parsed.
func (b *builder) errorHere(err error) error {
	line := 0
	if b.last >= 0 {
		line = b.lineOf(b.last)
	}
	return &ParseError{Format: b.format, Line: line, Err: err}
}

// nextLine is the line after the last entry parsed (skipping blank lines
// in the text format, which its parser skips too): where the parser
// stopped with an error.
func (b *builder) nextLine() int {
	off := 0
	if b.last >= 0 {
		i := bytes.IndexByte(b.raw[b.last:], '\n')
		if i < 0 {
			return b.lineOf(b.last)
		}
		off = b.last + i + 1
	}
	if b.format == FormatText {
		for off < len(b.raw) {
			i := bytes.IndexByte(b.raw[off:], '\n')
			if i < 0 || len(bytes.TrimSpace(b.raw[off:off+i])) > 0 {
				break
			}
			off += i + 1
		}
	}
	return b.lineOf(min(off, len(b.raw)))
}

// resolve finds the family a sample called name belongs to and what it
// holds of its series.
func (b *builder) resolve(name string) (key string, t model.MetricType, p part, err error) {
	if t, ok := b.types[name]; ok {
		switch t {
		case model.MetricTypeHistogram, model.MetricTypeGaugeHistogram:
			return "", "", 0, fmt.Errorf("sample %q of %s %q: want %s_bucket, _count or _sum", name, t, name, name)
		case model.MetricTypeSummary:
			return name, t, partQuantile, nil
		case model.MetricTypeInfo:
			return "", "", 0, fmt.Errorf("sample %q of info %q: want %s_info", name, name, name)
		}
		return name, t, partValue, nil
	}
	for _, sfx := range [...]string{"_total", "_created", "_bucket", "_count", "_sum", "_gcount", "_gsum", "_info"} {
		base, ok := strings.CutSuffix(name, sfx)
		if !ok {
			continue
		}
		t, ok := b.types[base]
		if !ok {
			continue
		}
		hist := t == model.MetricTypeHistogram || t == model.MetricTypeGaugeHistogram
		switch {
		case sfx == "_total" && t == model.MetricTypeCounter:
			return name, t, partValue, nil
		case sfx == "_created" && t == model.MetricTypeCounter:
			return base + "_total", t, partCreated, nil
		case sfx == "_created" && (hist || t == model.MetricTypeSummary):
			return base, t, partCreated, nil
		case sfx == "_bucket" && hist:
			return base, t, partBucket, nil
		case sfx == "_count" && (t == model.MetricTypeHistogram || t == model.MetricTypeSummary),
			sfx == "_gcount" && t == model.MetricTypeGaugeHistogram:
			return base, t, partCount, nil
		case sfx == "_sum" && (t == model.MetricTypeHistogram || t == model.MetricTypeSummary),
			sfx == "_gsum" && t == model.MetricTypeGaugeHistogram:
			return base, t, partSum, nil
		case sfx == "_info" && t == model.MetricTypeInfo:
			return name, t, partValue, nil
		}
	}
	return name, model.MetricTypeUnknown, partValue, nil
}

// dtoType is the family type a text type is kept as.
func dtoType(t model.MetricType) dto.MetricType {
	switch t {
	case model.MetricTypeCounter:
		return dto.MetricType_COUNTER
	case model.MetricTypeGauge, model.MetricTypeInfo, model.MetricTypeStateset:
		return dto.MetricType_GAUGE
	case model.MetricTypeHistogram:
		return dto.MetricType_HISTOGRAM
	case model.MetricTypeGaugeHistogram:
		return dto.MetricType_GAUGE_HISTOGRAM
	case model.MetricTypeSummary:
		return dto.MetricType_SUMMARY
	}
	return dto.MetricType_UNTYPED
}

// add files the current sample (b.lset, ts, v) into its family.
func (b *builder) add(ts *int64, v float64) error {
	name := b.lset.Get(labels.MetricName)
	key, t, p, err := b.resolve(name)
	if err != nil {
		return err
	}
	f := b.fams[key]
	if f == nil {
		f = &family{mf: &dto.MetricFamily{Name: &key, Type: dtoType(t).Enum()}, series: map[string]*dto.Metric{}}
		b.fams[key] = f
	} else if f.mf.GetType() != dtoType(t) {
		return fmt.Errorf("sample %q of a %s family %q, which has %s samples before", name, dtoType(t), key, f.mf.GetType())
	}
	// The series of a histogram or summary: its buckets or quantiles
	// (which carry le or quantile), _sum, _count and _created.
	var drop string
	switch f.mf.GetType() {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		drop = model.BucketLabel
	case dto.MetricType_SUMMARY:
		drop = model.QuantileLabel
	}
	if drop != "" {
		b.key = b.lset.BytesWithoutLabels(b.key[:0], labels.MetricName, drop)
	} else {
		b.key = b.lset.BytesWithoutLabels(b.key[:0], labels.MetricName)
	}
	m := f.series[string(b.key)]
	if m == nil {
		// Checked once per series: its other samples have the same
		// labels but for le or quantile.
		if dup, ok := b.lset.HasDuplicateLabelNames(); ok {
			return fmt.Errorf("sample %q has label %q twice", name, dup)
		}
		if !b.lset.IsValid(model.UTF8Validation) {
			return fmt.Errorf("sample %q has an invalid metric name, label name or label value (not UTF-8)", name)
		}
		m = &dto.Metric{}
		b.lset.Range(func(l labels.Label) {
			if l.Name == labels.MetricName || l.Name == drop {
				return
			}
			m.Label = append(m.Label, &dto.LabelPair{Name: &l.Name, Value: &l.Value})
		})
		f.series[string(b.key)] = m
		f.mf.Metric = append(f.mf.Metric, m)
	}
	if ts != nil && m.TimestampMs == nil && p != partCreated {
		m.TimestampMs = ts
	}
	return setPart(m, f.mf.GetType(), p, name, v, &b.lset)
}

// setPart stores v as part p of series m of a family of type t.
func setPart(m *dto.Metric, t dto.MetricType, p part, name string, v float64, lset *labels.Labels) error {
	dupErr := func() error { return fmt.Errorf("duplicate sample %s", lset.String()) }
	switch p {
	case partCreated:
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1<<40 {
			return fmt.Errorf("%s: created timestamp %v is not a time in seconds", name, v)
		}
		sec, frac := math.Modf(v)
		created := &timestamppb.Timestamp{Seconds: int64(sec), Nanos: int32(frac * 1e9)}
		switch t {
		case dto.MetricType_COUNTER:
			if m.Counter == nil {
				m.Counter = &dto.Counter{}
			}
			m.Counter.CreatedTimestamp = created
		case dto.MetricType_SUMMARY:
			if m.Summary == nil {
				m.Summary = &dto.Summary{}
			}
			m.Summary.CreatedTimestamp = created
		default:
			if m.Histogram == nil {
				m.Histogram = &dto.Histogram{}
			}
			m.Histogram.CreatedTimestamp = created
		}
		return nil
	case partValue:
		switch t {
		case dto.MetricType_COUNTER:
			if m.Counter == nil {
				m.Counter = &dto.Counter{}
			}
			if m.Counter.Value != nil {
				return dupErr()
			}
			m.Counter.Value = &v
		case dto.MetricType_GAUGE:
			if m.Gauge != nil {
				return dupErr()
			}
			m.Gauge = &dto.Gauge{Value: &v}
		default:
			if m.Untyped != nil {
				return dupErr()
			}
			m.Untyped = &dto.Untyped{Value: &v}
		}
		return nil
	case partQuantile:
		q, err := strconv.ParseFloat(lset.Get(model.QuantileLabel), 64)
		if err != nil {
			return fmt.Errorf("%s: quantile label %q is not a number", lset.String(), lset.Get(model.QuantileLabel))
		}
		if m.Summary == nil {
			m.Summary = &dto.Summary{}
		}
		m.Summary.Quantile = append(m.Summary.Quantile, &dto.Quantile{Quantile: &q, Value: &v})
		return nil
	}
	if t == dto.MetricType_SUMMARY {
		if m.Summary == nil {
			m.Summary = &dto.Summary{}
		}
		if p == partSum {
			if m.Summary.SampleSum != nil {
				return dupErr()
			}
			m.Summary.SampleSum = &v
			return nil
		}
		if m.Summary.SampleCount != nil {
			return dupErr()
		}
		if c, ok := count(v); ok {
			m.Summary.SampleCount = &c
			return nil
		}
		return fmt.Errorf("%s: count %v is not a non-negative integer", lset.String(), v)
	}
	if m.Histogram == nil {
		m.Histogram = &dto.Histogram{}
	}
	h := m.Histogram
	if v < 0 {
		return fmt.Errorf("%s: negative count %v", lset.String(), v)
	}
	switch p {
	case partSum:
		if h.SampleSum != nil {
			return dupErr()
		}
		h.SampleSum = &v
	case partCount:
		if h.SampleCount != nil || h.SampleCountFloat != nil {
			return dupErr()
		}
		if c, ok := count(v); ok {
			h.SampleCount = &c
		} else {
			h.SampleCountFloat = &v
		}
	case partBucket:
		le, err := strconv.ParseFloat(lset.Get(model.BucketLabel), 64)
		if err != nil {
			return fmt.Errorf("%s: le label %q is not a number", lset.String(), lset.Get(model.BucketLabel))
		}
		if n := len(h.Bucket); n > 0 && h.Bucket[n-1].GetUpperBound() == le {
			return dupErr()
		}
		bk := &dto.Bucket{UpperBound: &le}
		if c, ok := count(v); ok {
			bk.CumulativeCount = &c
		} else {
			bk.CumulativeCountFloat = &v
		}
		h.Bucket = append(h.Bucket, bk)
	}
	return nil
}

// count returns v as an integer count when it is one.
func count(v float64) (uint64, bool) {
	if v >= 0 && v <= 1<<63 && v == math.Trunc(v) {
		return uint64(v), true
	}
	return 0, false
}

// finish completes the families: a counter series seen only through its
// _created sample is dropped, histograms are normalised as client_golang
// writes them (integer or float counts throughout, a final +Inf bucket
// equal to the count left implicit), help texts are attached, and the
// text format's separate <name>_created gauges (Python's prometheus_client
// writes them) are folded into the created timestamps of their counter,
// histogram or summary, as OpenMetrics and protobuf carry them (in
// OpenMetrics a <name>_created family is a family of its own).
func (b *builder) finish() map[string]*dto.MetricFamily {
	out := make(map[string]*dto.MetricFamily, len(b.fams))
	for key, f := range b.fams {
		ms := f.mf.Metric[:0]
		for _, m := range f.mf.Metric {
			if f.mf.GetType() == dto.MetricType_COUNTER && m.GetCounter().Value == nil {
				continue
			}
			normaliseHistogram(m.Histogram)
			ms = append(ms, m)
		}
		f.mf.Metric = ms
		if len(ms) == 0 {
			continue
		}
		if h, ok := b.help[key]; ok {
			f.mf.Help = &h
		} else if base, ok := strings.CutSuffix(key, "_total"); ok && f.mf.GetType() == dto.MetricType_COUNTER {
			if h, ok := b.help[base]; ok {
				f.mf.Help = &h
			}
		} else if base, ok := strings.CutSuffix(key, "_info"); ok {
			if h, ok := b.help[base]; ok {
				f.mf.Help = &h
			}
		}
		out[key] = f.mf
	}
	if b.format != FormatText {
		return out
	}
	for key, f := range b.fams {
		if out[key] == nil || !foldable(f.mf) {
			continue
		}
		base := strings.TrimSuffix(key, "_created")
		target := b.fams[base+"_total"]
		if target == nil || target.mf.GetType() != dto.MetricType_COUNTER {
			target = b.fams[base]
		}
		if target == nil || out[target.mf.GetName()] == nil {
			continue
		}
		if foldCreated(f, target) {
			delete(out, key)
		}
	}
	return out
}

// foldable reports whether mf may be a text-format _created family.
func foldable(mf *dto.MetricFamily) bool {
	t := mf.GetType()
	return strings.HasSuffix(mf.GetName(), "_created") && (t == dto.MetricType_GAUGE || t == dto.MetricType_UNTYPED)
}

// foldCreated sets the created timestamps of target's series from the
// gauge family created, and reports whether every series of created found
// its target series (only then is created dropped).
func foldCreated(created, target *family) bool {
	var t dto.MetricType = target.mf.GetType()
	if t != dto.MetricType_COUNTER && t != dto.MetricType_HISTOGRAM && t != dto.MetricType_SUMMARY {
		return false
	}
	for key := range created.series {
		if target.series[key] == nil {
			return false
		}
	}
	for key, m := range created.series {
		v := m.GetGauge().GetValue()
		if m.Untyped != nil {
			v = m.GetUntyped().GetValue()
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1<<40 {
			continue
		}
		sec, frac := math.Modf(v)
		ts := &timestamppb.Timestamp{Seconds: int64(sec), Nanos: int32(frac * 1e9)}
		tm := target.series[key]
		switch t {
		case dto.MetricType_COUNTER:
			if tm.Counter != nil && tm.Counter.CreatedTimestamp == nil {
				tm.Counter.CreatedTimestamp = ts
			}
		case dto.MetricType_HISTOGRAM:
			if tm.Histogram != nil && tm.Histogram.CreatedTimestamp == nil {
				tm.Histogram.CreatedTimestamp = ts
			}
		case dto.MetricType_SUMMARY:
			if tm.Summary != nil && tm.Summary.CreatedTimestamp == nil {
				tm.Summary.CreatedTimestamp = ts
			}
		}
	}
	return true
}

// normaliseHistogram makes h's counts all integer or all float (as expfmt
// does) and drops a final +Inf bucket that equals the count (client_golang
// leaves it implicit in protobuf; NewHistogram adds it back).
func normaliseHistogram(h *dto.Histogram) {
	if h == nil {
		return
	}
	anyFloat := h.SampleCountFloat != nil
	for _, bk := range h.Bucket {
		anyFloat = anyFloat || bk.CumulativeCountFloat != nil
	}
	if anyFloat {
		if h.SampleCount != nil {
			f := float64(h.GetSampleCount())
			h.SampleCountFloat, h.SampleCount = &f, nil
		}
		for _, bk := range h.Bucket {
			if bk.CumulativeCount != nil {
				f := float64(bk.GetCumulativeCount())
				bk.CumulativeCountFloat, bk.CumulativeCount = &f, nil
			}
		}
	}
	n := len(h.Bucket)
	if n == 0 || !math.IsInf(h.Bucket[n-1].GetUpperBound(), +1) {
		return
	}
	last := h.Bucket[n-1]
	switch {
	case h.SampleCount == nil && h.SampleCountFloat == nil:
		// No _count: the +Inf bucket is the count.
		h.SampleCount, h.SampleCountFloat = last.CumulativeCount, last.CumulativeCountFloat
	case last.CumulativeCount != nil && h.SampleCount != nil && *last.CumulativeCount == *h.SampleCount,
		last.CumulativeCountFloat != nil && h.SampleCountFloat != nil && *last.CumulativeCountFloat == *h.SampleCountFloat:
	default:
		return
	}
	h.Bucket = h.Bucket[:n-1]
}
