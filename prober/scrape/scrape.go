// Package scrape owns reading a target's own /metrics endpoint (vLLM or any
// Prometheus exposition: text, OpenMetrics or protobuf, negotiated as
// Prometheus does; parse.go): fetching it into a Snapshot (parsed families,
// keyed the same whatever the format, plus the raw text), reading values
// out of snapshots, server-side deltas between two snapshots (counters and classic histograms, reset-aware, with
// Prometheus' histogram_quantile interpolation), the idle proof a sweep step
// needs, and a Recorder that scrapes periodically during a step and appends
// timestamped scrapes to an artifact file.
//
// It only reads: nothing here sends load to the target.
package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// Defaults of Fetch.
const (
	// DefaultTimeout bounds one scrape, connect to last byte.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBytes caps the (decompressed) response body. A vLLM
	// /metrics page is typically 50-500 KiB.
	DefaultMaxBytes = 16 << 20
)

// Snapshot is one scrape of a target's /metrics. It is not modified after
// Fetch returns and may be read concurrently.
type Snapshot struct {
	// Time is the wall-clock time the scrape request was sent.
	Time time.Time
	// Raw is the exposition as text: the response body as received for
	// the text formats; a protobuf body written as OpenMetrics text
	// (sorted by name, with _created lines, at most the body cap), so that
	// artifacts stay text and NewSnapshot reads Raw back.
	Raw []byte
	// Format is the format the server sent.
	Format Format
	// Families are the parsed metric families by name, keyed the same
	// whatever the format: a counter under its _total sample name
	// (vllm:request_success_total, also when OpenMetrics types it as
	// vllm:request_success), a histogram or summary under its base name
	// (its _bucket, _sum and _count are in the family), an OpenMetrics
	// info under its _info sample name (a gauge), a stateset as a gauge.
	// _created samples, and the text format's <name>_created gauges of a
	// counter, histogram or summary, are the series' created timestamps;
	// exemplars are not kept.
	Families map[string]*dto.MetricFamily
}

// StatusError is returned by Fetch when the target answers with a non-2xx
// HTTP status (e.g. 404 from a server that has no /metrics).
type StatusError struct {
	StatusCode int
	Status     string
	// Location is the Location header of a redirect (3xx), with any
	// credentials it carries redacted; "" otherwise. Fetch never follows a
	// redirect.
	Location string
}

// Error implements error.
func (e *StatusError) Error() string {
	if e.Location != "" {
		return "unexpected status " + e.Status + " (redirect to " + e.Location + "; redirects are not followed: fix the metrics URL)"
	}
	return "unexpected status " + e.Status
}

// Option configures Fetch (and a Recorder's scrapes).
type Option func(*options)

type options struct {
	timeout   time.Duration
	maxBytes  int64
	bearer    config.Secret
	userAgent string
	gauges    func(*Snapshot) map[string]float64
}

// WithTimeout bounds each scrape (default DefaultTimeout). The context
// passed to Fetch still applies; the earlier deadline wins.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithMaxBytes caps the response body (default DefaultMaxBytes); a larger
// body is an error.
func WithMaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// WithBearerToken sends "Authorization: Bearer <token>" (through
// client.Authorize, the one place credentials are attached). The token never
// appears in errors.
func WithBearerToken(token config.Secret) Option { return func(o *options) { o.bearer = token } }

// WithGauges makes a Recorder keep the maxima of what read returns for
// each snapshot (e.g. an engine adapter's running, waiting and KV-cache
// gauges, keyed by its own names) instead of the vLLM gauges it reads by
// default. Fetch ignores it.
func WithGauges(read func(*Snapshot) map[string]float64) Option {
	return func(o *options) { o.gauges = read }
}

// WithUserAgent sets the User-Agent header (default "llmprobe").
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

func buildOptions(opts []Option) options {
	o := options{timeout: DefaultTimeout, maxBytes: DefaultMaxBytes, userAgent: "llmprobe"}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Fetch scrapes url with client (a plain client when nil) and parses the
// exposition: it asks, with Prometheus' Accept header, for protobuf, then
// OpenMetrics 1.0, then the text format, and parses whichever the server
// sends (vLLM's Rust frontend sends OpenMetrics whatever it is asked;
// Python's prometheus_client OpenMetrics when it is offered). Metric and
// label names are validated with UTF-8 rules, a superset of the legacy
// rules that already allow vLLM's ':' names. Errors name the URL (with
// any password redacted) and say what went wrong: transport error, non-2xx status (*StatusError;
// a redirect is never followed, whatever client's CheckRedirect says, so
// that the bearer token never goes to another address),
// body over the size cap, unexpected content type (*ContentTypeError), or a
// parse error with its line number (*ParseError).
func Fetch(ctx context.Context, client *http.Client, rawURL string, opts ...Option) (*Snapshot, error) {
	o := buildOptions(opts)
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("scrape: invalid url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scrape %s: url scheme must be http or https", u.Redacted())
	}
	where := u.Redacted()
	snap, err := fetch(ctx, client, u, o)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", where, err)
	}
	return snap, nil
}

func fetch(ctx context.Context, hc *http.Client, u *url.URL, o options) (*Snapshot, error) {
	// Never follow a redirect: a copy of the client (a few words) with
	// CheckRedirect answering the redirect as it is.
	c := *bounded.NewClient(nil, 0)
	if hc != nil {
		c = *hc
		c.CheckRedirect = noRedirects
	}
	hc = &c
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("User-Agent", o.userAgent)
	client.Authorize(req.Header, o.bearer)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// url.Error repeats the URL, which the caller adds already.
			return nil, ue.Err
		}
		return nil, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{StatusCode: resp.StatusCode, Status: resp.Status}
		if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
			se.Location = redact.Text(loc)
			if len(se.Location) > 200 {
				se.Location = strings.ToValidUTF8(se.Location[:200], "") + "..."
			}
		}
		return nil, se
	}
	format, err := responseFormat(resp.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	raw, err := bounded.ReadBody(resp, "response body", o.maxBytes)
	var tl *bounded.TooLargeError
	if errors.As(err, &tl) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	fams, err := parse(raw, format)
	if err != nil {
		return nil, err
	}
	if format == FormatProtobuf {
		if raw, err = renderOpenMetrics(fams, o.maxBytes); err != nil {
			return nil, err
		}
	}
	return &Snapshot{Time: start, Raw: raw, Format: format, Families: fams}, nil
}

// noRedirects is the CheckRedirect of every scrape: a redirect is
// answered as it is.
var noRedirects = bounded.NoRedirects
