package scrape

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The recording format (metrics-during.txt and friends) is a sequence of
// entries, each a header line followed by what belongs to it:
//
//	# scrape <RFC3339Nano UTC time> <unix milliseconds>
//	<the raw exposition text, newline-terminated>
//	# scrape-error <RFC3339Nano UTC time> <unix milliseconds> <error, one line>
//
// The time is the Snapshot's Time (when the request was sent). Header lines
// are Prometheus comments, so each entry's text stays a valid exposition;
// the whole file is not one (families repeat), ReadScrapes splits it.
const (
	headerScrape = "# scrape "
	headerError  = "# scrape-error "
)

// WriteScrape appends s to w as one recording entry.
func WriteScrape(w io.Writer, s *Snapshot) error {
	t := s.Time.UTC()
	var b strings.Builder
	b.Grow(len(headerScrape) + 48 + len(s.Raw) + 1)
	fmt.Fprintf(&b, "%s%s %d\n", headerScrape, t.Format(time.RFC3339Nano), t.UnixMilli())
	b.Write(s.Raw)
	if len(s.Raw) > 0 && s.Raw[len(s.Raw)-1] != '\n' {
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteScrapeError appends a failed scrape at t to w as one recording entry.
func WriteScrapeError(w io.Writer, t time.Time, scrapeErr error) error {
	t = t.UTC()
	msg := strings.Join(strings.Fields(scrapeErr.Error()), " ")
	_, err := fmt.Fprintf(w, "%s%s %d %s\n", headerError, t.Format(time.RFC3339Nano), t.UnixMilli(), msg)
	return err
}

// ReadScrapes parses a recording written with WriteScrape and
// WriteScrapeError back into snapshots, in file order; failed-scrape entries
// are skipped. Text before the first header is an error, as is an entry that
// does not parse.
func ReadScrapes(r io.Reader) ([]*Snapshot, error) {
	br := bufio.NewReader(r)
	var (
		out    []*Snapshot
		cur    *Snapshot
		raw    []byte
		lineNo int
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		s, err := NewSnapshot(cur.Time, raw)
		if err != nil {
			return fmt.Errorf("scrape at %s: %w", cur.Time.Format(time.RFC3339Nano), err)
		}
		out = append(out, s)
		cur, raw = nil, nil
		return nil
	}
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			lineNo++
			switch {
			case strings.HasPrefix(line, headerError):
				if err := flush(); err != nil {
					return nil, err
				}
			case strings.HasPrefix(line, headerScrape):
				if err := flush(); err != nil {
					return nil, err
				}
				t, perr := parseHeader(strings.TrimPrefix(line, headerScrape))
				if perr != nil {
					return nil, fmt.Errorf("line %d: %w", lineNo, perr)
				}
				cur, raw = &Snapshot{Time: t}, []byte{}
			case cur == nil:
				if strings.TrimSpace(line) != "" {
					return nil, fmt.Errorf("line %d: text before the first %q header", lineNo, strings.TrimSpace(headerScrape))
				}
			default:
				raw = append(raw, line...)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseHeader(rest string) (time.Time, error) {
	f := strings.Fields(rest)
	if len(f) != 2 {
		return time.Time{}, fmt.Errorf("malformed scrape header %q", strings.TrimSpace(rest))
	}
	t, err := time.Parse(time.RFC3339Nano, f[0])
	if err != nil {
		return time.Time{}, fmt.Errorf("malformed scrape header time: %w", err)
	}
	ms, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || ms != t.UnixMilli() {
		return time.Time{}, fmt.Errorf("malformed scrape header: milliseconds %q do not match %s", f[1], f[0])
	}
	return t, nil
}

// DefaultRecorderInterval is a Recorder's scrape period when none is given.
const DefaultRecorderInterval = time.Second

// Recorder scrapes a target's /metrics every interval while it runs (a
// sweep step), appends each scrape to a writer in the recording format, and
// keeps the running maxima of the server's load gauges. Create it with
// NewRecorder; run it once with Run or Start. Max, Scrapes and Last are
// safe to call while it runs.
type Recorder struct {
	client   *http.Client
	url      string
	interval time.Duration
	w        io.Writer
	opts     []Option

	mu     sync.Mutex
	max    map[string]float64
	ok     int
	failed int
	last   *Snapshot
}

// NewRecorder returns a Recorder that scrapes url with client (see Fetch;
// opts apply to every scrape) every interval (DefaultRecorderInterval when
// <= 0) and writes to w. While it runs, nothing else may write to w.
func NewRecorder(client *http.Client, url string, interval time.Duration, w io.Writer, opts ...Option) *Recorder {
	if interval <= 0 {
		interval = DefaultRecorderInterval
	}
	return &Recorder{client: client, url: url, interval: interval, w: w, opts: opts, max: map[string]float64{}}
}

// Run scrapes immediately and then every interval until ctx is done. A
// failed scrape is written as a scrape-error entry and counted; it does not
// stop the recorder. A scrape cut short by ctx is not written. Run returns
// nil when ctx is done, or the first error writing to w (the recording
// would be incomplete).
func (r *Recorder) Run(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		if err := r.scrapeOnce(ctx); err != nil {
			return fmt.Errorf("write scrape recording: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Start runs Run in a goroutine. The returned stop function cancels it,
// waits until it has returned and returns Run's error; calling it again
// returns the same error.
func (r *Recorder) Start(ctx context.Context) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var (
		once sync.Once
		err  error
	)
	return func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
}

func (r *Recorder) scrapeOnce(ctx context.Context) error {
	start := time.Now()
	snap, err := Fetch(ctx, r.client, r.url, r.opts...)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		r.mu.Lock()
		r.failed++
		r.mu.Unlock()
		return WriteScrapeError(r.w, start, err)
	}
	r.mu.Lock()
	r.ok++
	r.last = snap
	r.observeMax(snap)
	r.mu.Unlock()
	return WriteScrape(r.w, snap)
}

// observeMax updates the maxima; the caller holds r.mu. Running and waiting
// are summed over engines (the server's total), KV usage is the fullest
// engine's.
func (r *Recorder) observeMax(s *Snapshot) {
	upd := func(name string, v float64, ok bool) {
		if !ok {
			return
		}
		if old, seen := r.max[name]; !seen || v > old {
			r.max[name] = v
		}
	}
	if read := buildOptions(r.opts).gauges; read != nil {
		for name, v := range read(s) {
			upd(name, v, true)
		}
		return
	}
	v, ok := s.Sum(MetricNumRequestsRunning, nil)
	upd(MetricNumRequestsRunning, v, ok)
	v, ok = s.Sum(MetricNumRequestsWaiting, nil)
	upd(MetricNumRequestsWaiting, v, ok)
	v, ok = s.Max(MetricKVCacheUsage, nil)
	upd(MetricKVCacheUsage, v, ok)
}

// Max returns the largest values seen so far of vllm:num_requests_running
// and vllm:num_requests_waiting (summed over engines) and
// vllm:kv_cache_usage_perc (the fullest engine), keyed by metric name, or,
// with WithGauges, of what its function returns, keyed as it keys them. A
// name is missing when no successful scrape had it. The map is a copy.
func (r *Recorder) Max() map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.max)
}

// Scrapes returns the number of successful and failed scrapes so far.
func (r *Recorder) Scrapes() (ok, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.failed
}

// Last returns the latest successful snapshot, or nil.
func (r *Recorder) Last() *Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}
