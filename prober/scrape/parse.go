package scrape

import (
	"bytes"
	"fmt"
	"mime"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/textparse"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Format is an exposition format a Snapshot was read from.
type Format string

// The exposition formats Fetch negotiates and parses.
const (
	// FormatText is the Prometheus text format (0.0.4, and 1.0.0 with
	// quoted UTF-8 names): what Python's prometheus_client and most
	// exporters serve by default.
	FormatText Format = "text"
	// FormatOpenMetrics is OpenMetrics 1.0 (and 0.0.1): counters typed by
	// their base name with _total samples, _created samples, exemplars,
	// and a final "# EOF". vLLM's Rust frontend serves only this.
	FormatOpenMetrics Format = "openmetrics"
	// FormatProtobuf is the length-delimited io.prometheus.client.MetricFamily
	// protobuf format, which Go servers (client_golang) serve when asked.
	FormatProtobuf Format = "protobuf"
)

// String returns the format's name as errors and docs write it.
func (f Format) String() string {
	switch f {
	case FormatOpenMetrics:
		return "OpenMetrics"
	case FormatProtobuf:
		return "protobuf"
	}
	return "text"
}

// acceptHeader is the Accept header of every scrape: Prometheus' own
// (scrape.acceptHeader of prometheus/prometheus with
// config.DefaultProtoFirstScrapeProtocols, the order Prometheus uses when
// it scrapes native histograms, and escaping=allow-utf-8): protobuf first
// (the cheapest to parse, and the only format that carries a Go server's
// native histograms), then OpenMetrics 1.0 and 0.0.1, then text 1.0.0 and
// 0.0.4, then anything.
const acceptHeader = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6," +
	"application/openmetrics-text;version=0.0.1;q=0.5," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4," +
	"text/plain;version=0.0.4;q=0.3," +
	"*/*;q=0.2"

// ContentTypeError is returned by Fetch when the server answers with a
// Content-Type that is no exposition format it can parse.
type ContentTypeError struct {
	// ContentType is the header as the server sent it (at most 200 bytes).
	ContentType string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ContentTypeError) Error() string {
	return fmt.Sprintf("unexpected content type %q: %s", e.ContentType, e.Reason)
}

// ParseError is returned by Fetch and NewSnapshot when the exposition does
// not parse. Line is the 1-based line of the text formats the error is on
// (0 when not known, and for protobuf); Err is the parser's own message.
type ParseError struct {
	Format Format
	Line   int
	Err    error
}

// Error implements error.
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("parse %s exposition: line %d: %v", e.Format, e.Line, e.Err)
	}
	return fmt.Sprintf("parse %s exposition: %v", e.Format, e.Err)
}

// Unwrap returns the parser's error.
func (e *ParseError) Unwrap() error { return e.Err }

// responseFormat picks the parser for a Content-Type. A missing or
// unparsable Content-Type is read as the text format (many exporters send
// a bare text/plain or nothing at all), as Prometheus does with
// fallback_scrape_protocol PrometheusText0.0.4.
func responseFormat(contentType string) (Format, error) {
	if contentType == "" {
		return FormatText, nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return FormatText, nil
	}
	bad := func(reason string) (Format, error) {
		ct := contentType
		if len(ct) > 200 {
			ct = strings.ToValidUTF8(ct[:200], "") + "..."
		}
		return "", &ContentTypeError{ContentType: ct, Reason: reason}
	}
	switch mt {
	case "text/plain":
		return FormatText, nil
	case expfmt.OpenMetricsType:
		switch v := params["version"]; v {
		case "", expfmt.OpenMetricsVersion_0_0_1, expfmt.OpenMetricsVersion_1_0_0:
			return FormatOpenMetrics, nil
		default:
			return bad("OpenMetrics version " + strconv.Quote(v) + " is not supported (1.0.0 and 0.0.1 are)")
		}
	case expfmt.ProtoType:
		if p := params["proto"]; p != expfmt.ProtoProtocol {
			return bad("protobuf of " + strconv.Quote(p) + ", want " + expfmt.ProtoProtocol)
		}
		if e := params["encoding"]; e != "delimited" {
			return bad("protobuf encoding " + strconv.Quote(e) + " is not supported (delimited is)")
		}
		return FormatProtobuf, nil
	}
	return bad("want the Prometheus text, OpenMetrics or protobuf format")
}

// NewSnapshot parses an exposition taken at t (for example one read back
// from an artifact file): OpenMetrics when its last line is "# EOF", the
// Prometheus text format otherwise. Errors are *ParseError.
func NewSnapshot(t time.Time, raw []byte) (*Snapshot, error) {
	format := FormatText
	if isOpenMetrics(raw) {
		format = FormatOpenMetrics
	}
	fams, err := parse(raw, format)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Time: t, Raw: raw, Format: format, Families: fams}, nil
}

// isOpenMetrics reports whether the last non-empty line of raw is "# EOF",
// which OpenMetrics requires and the text format never writes.
func isOpenMetrics(raw []byte) bool {
	b := bytes.TrimRight(raw, "\n")
	i := bytes.LastIndexByte(b, '\n')
	return string(b[i+1:]) == "# EOF"
}

// parse parses raw in format into families keyed the same whatever the
// format (see Snapshot.Families).
func parse(raw []byte, format Format) (map[string]*dto.MetricFamily, error) {
	if format == FormatProtobuf {
		return parseProtobuf(raw)
	}
	var p textparse.Parser
	if format == FormatOpenMetrics {
		p = textparse.NewOpenMetricsParser(raw, nil)
	} else {
		p = textparse.NewPromParser(raw, nil, false)
	}
	b := &builder{raw: raw, format: format, types: map[string]model.MetricType{}, fams: map[string]*family{}, last: -1}
	if err := b.run(p); err != nil {
		return nil, err
	}
	return b.finish(), nil
}

// parseProtobuf decodes length-delimited MetricFamily messages; they are
// already what Snapshot.Families holds. It decodes them itself rather than
// with expfmt's decoder, which trusts a message's length prefix (no size
// limit: a hostile 5-byte prefix makes it allocate terabytes): a length
// past the end of the body is an error.
func parseProtobuf(raw []byte) (map[string]*dto.MetricFamily, error) {
	fams := map[string]*dto.MetricFamily{}
	fail := func(i int, format string, args ...any) error {
		return &ParseError{Format: FormatProtobuf, Err: fmt.Errorf("message %d: "+format, append([]any{i}, args...)...)}
	}
	for i, rest := 1, raw; len(rest) > 0; i++ {
		size, n := protowire.ConsumeVarint(rest)
		if n < 0 {
			return nil, fail(i, "malformed length prefix")
		}
		rest = rest[n:]
		if size > uint64(len(rest)) {
			return nil, fail(i, "length %d is past the end of the body (%d bytes left)", size, len(rest))
		}
		mf := &dto.MetricFamily{}
		if err := proto.Unmarshal(rest[:size], mf); err != nil {
			return nil, fail(i, "%v", err)
		}
		rest = rest[size:]
		// A NUL byte is valid UTF-8, but no text exposition can carry one
		// (the text parsers read it as the end of the input), and a
		// snapshot's Raw is its text.
		if !model.UTF8Validation.IsValidMetricName(mf.GetName()) || hasNUL(mf.GetName()) {
			return nil, fail(i, "invalid metric name %q", mf.GetName())
		}
		if !utf8.ValidString(mf.GetHelp()) || !utf8.ValidString(mf.GetUnit()) || hasNUL(mf.GetHelp()+mf.GetUnit()) {
			return nil, fail(i, "family %q: help or unit is not UTF-8 without NUL bytes", mf.GetName())
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !model.UTF8Validation.IsValidLabelName(l.GetName()) || !model.LabelValue(l.GetValue()).IsValid() ||
					hasNUL(l.GetName()+l.GetValue()) {
					return nil, fail(i, "family %q: invalid label %q=%q", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
		if fams[mf.GetName()] != nil {
			return nil, fail(i, "second family %q", mf.GetName())
		}
		if len(mf.GetMetric()) > 0 { // as the text formats, which have no empty family
			fams[mf.GetName()] = mf
		}
	}
	return fams, nil
}

// hasNUL reports whether s holds a NUL byte.
func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// renderOpenMetrics writes families as OpenMetrics text (with _created
// lines), sorted by name, at most limit bytes: what a Snapshot keeps as
// Raw of a protobuf scrape, so that artifacts stay text.
func renderOpenMetrics(fams map[string]*dto.MetricFamily, limit int64) ([]byte, error) {
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	w := &limitedBuffer{limit: limit}
	for _, n := range names {
		// Without its unit: OpenMetrics requires a unit to be a suffix of
		// the name, which protobuf does not, and nothing reads units.
		mf := fams[n]
		mf = &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: mf.Metric}
		opts := []expfmt.EncoderOption{expfmt.WithCreatedLines()}
		if mf.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(n, "_total") {
			// expfmt writes a counter without the _total suffix as an
			// unknown family, where a _created line would read as a
			// second family (FuzzParseProtobuf): no created lines there.
			opts = nil
		}
		if _, err := expfmt.MetricFamilyToOpenMetrics(w, mf, opts...); err != nil {
			return nil, fmt.Errorf("render protobuf family %q as OpenMetrics text: %w", n, err)
		}
	}
	if _, err := expfmt.FinalizeOpenMetrics(w); err != nil {
		return nil, fmt.Errorf("render protobuf exposition as OpenMetrics text: %w", err)
	}
	return w.Bytes(), nil
}

// limitedBuffer is a bytes.Buffer that refuses to grow past limit.
type limitedBuffer struct {
	bytes.Buffer
	limit int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.limit > 0 && int64(b.Len()+len(p)) > b.limit {
		return 0, fmt.Errorf("text is more than the %d bytes allowed", b.limit)
	}
	return b.Buffer.Write(p)
}

func (b *limitedBuffer) WriteString(s string) (int, error) {
	if b.limit > 0 && int64(b.Len()+len(s)) > b.limit {
		return 0, fmt.Errorf("text is more than the %d bytes allowed", b.limit)
	}
	return b.Buffer.WriteString(s)
}
