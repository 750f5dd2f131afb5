package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/file"
	httpsd "github.com/prometheus/prometheus/discovery/http"
	"github.com/prometheus/prometheus/discovery/refresh"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/config"
)

// The two mechanisms that read bytes from outside are llmprobe's own, over
// the bounded reader (prober/capfile, prober/bounded), with Prometheus'
// config types (file.SDConfig, httpsd.SDConfig) and Prometheus' behaviour
// otherwise: a file_sd file that is not a regular file (a FIFO, a symlink
// to /dev/zero) or is over config.MaxSDBytes, and an http_sd answer over
// that bound (refused on its Content-Length, or cut while read), is a
// failed refresh that names the file or URL: logged, counted in
// llmprobe_discovery_failures_total, the last good target groups kept.
// Prometheus' own readers read either without a bound, and open a FIFO
// with a blocking open that no shutdown can end. No redirect is followed
// by http_sd (bounded.NoRedirects and bounded.Transport).

// ownDiscoverer returns llmprobe's discoverer for sc when it has one, or
// nil.
func ownDiscoverer(sc promdiscovery.Config, logger *slog.Logger, reg promdiscovery.RefreshMetricsManager, setName string) (promdiscovery.Discoverer, error) {
	switch c := sc.(type) {
	case *file.SDConfig:
		return &fileSD{files: c.Files, interval: time.Duration(c.RefreshInterval), logger: logger, last: map[string]int{}}, nil
	case *httpsd.SDConfig:
		return newHTTPSD(c, logger, reg, setName)
	}
	return nil, nil
}

// fileSD is file_sd_configs: the files matching its patterns are read at
// start, when a watched directory changes and every refresh_interval.
type fileSD struct {
	files    []string
	interval time.Duration
	logger   *slog.Logger
	last     map[string]int // file -> target groups last sent
}

// Run implements promdiscovery.Discoverer.
func (d *fileSD) Run(ctx context.Context, ch chan<- []*targetgroup.Group) {
	if d.interval <= 0 {
		d.interval = 5 * time.Minute
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		d.logger.Error("cannot watch the file_sd files; reading them every refresh_interval", "err", err)
	} else {
		defer func() {
			go func() { // Close waits for the events and errors to be taken
				for range w.Events {
				}
			}()
			go func() {
				for range w.Errors {
				}
			}()
			w.Close()
		}()
	}
	d.refresh(ctx, ch, w)
	t := time.NewTicker(d.interval)
	defer t.Stop()
	var events chan fsnotify.Event
	var errs chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if ev.Name == "" || ev.Op == fsnotify.Chmod {
				continue
			}
			d.refresh(ctx, ch, w)
		case <-t.C:
			d.refresh(ctx, ch, w)
		case err := <-errs:
			if err != nil {
				d.logger.Error("error watching the file_sd files", "err", err)
			}
		}
	}
}

// refresh reads every matching file and sends its target groups; a file
// that cannot be read keeps its last groups; a file gone sends empty ones.
func (d *fileSD) refresh(ctx context.Context, ch chan<- []*targetgroup.Group, w *fsnotify.Watcher) {
	seen := map[string]int{}
	for _, pat := range d.files {
		paths, err := filepath.Glob(pat)
		if err != nil {
			d.logger.Error("file_sd: bad pattern", "pattern", pat, "err", err)
			continue
		}
		for _, p := range paths {
			if _, ok := seen[p]; ok {
				continue
			}
			tgs, err := readSDFile(p)
			if err != nil {
				d.logger.Error("file_sd: cannot read a file; its last targets are kept", "path", p, "err", err)
				seen[p] = d.last[p]
				continue
			}
			seen[p] = len(tgs)
			if !send(ctx, ch, tgs) {
				return
			}
		}
	}
	for f, n := range d.last {
		for i := seen[f]; i < n; i++ {
			if !send(ctx, ch, []*targetgroup.Group{{Source: fileSource(f, i)}}) {
				return
			}
		}
	}
	d.last = seen
	if w != nil {
		for _, pat := range d.files {
			dir := filepath.Dir(pat)
			if err := w.Add(dir); err != nil && !slices.Contains(w.WatchList(), dir) {
				d.logger.Debug("file_sd: cannot watch a directory", "dir", dir, "err", err)
			}
		}
	}
}

func send(ctx context.Context, ch chan<- []*targetgroup.Group, tgs []*targetgroup.Group) bool {
	select {
	case ch <- tgs:
		return true
	case <-ctx.Done():
		return false
	}
}

func fileSource(path string, i int) string { return path + ":" + strconv.Itoa(i) }

// readSDFile reads a file_sd file through the bounded reader
// (config.ReadSDFile: a regular file of at most config.MaxSDBytes, opened
// without blocking) and decodes it as Prometheus does.
func readSDFile(path string) ([]*targetgroup.Group, error) {
	b, err := config.ReadSDFile(path)
	if err != nil {
		return nil, err
	}
	return config.ParseSDFile(path, b)
}

// httpSD is http_sd_configs: the URL is read every refresh_interval
// through a client that follows no redirect and bounds the answer.
type httpSD struct {
	*refresh.Discovery
	url      string
	client   *http.Client
	interval time.Duration
	last     int
}

// matchContentType is Prometheus' check of an http_sd answer's type.
var matchContentType = regexp.MustCompile(`^(?i:application\/json(;\s*charset=("utf-8"|utf-8))?)$`)

func newHTTPSD(c *httpsd.SDConfig, logger *slog.Logger, rm promdiscovery.RefreshMetricsManager, setName string) (*httpSD, error) {
	hc, err := promconfig.NewClientFromConfig(c.HTTPClientConfig, "http")
	if err != nil {
		return nil, err
	}
	hc.CheckRedirect = bounded.NoRedirects
	hc.Transport = &bounded.Transport{Next: hc.Transport, Limit: config.MaxSDBytes, Input: "http_sd answer"}
	hc.Timeout = time.Duration(c.RefreshInterval)
	d := &httpSD{url: c.URL, client: hc, interval: time.Duration(c.RefreshInterval)}
	d.Discovery = refresh.NewDiscovery(refresh.Options{
		Logger: logger, Mech: "http", SetName: setName, Interval: d.interval,
		RefreshF: d.refresh, MetricsInstantiator: rm,
	})
	return d, nil
}

const httpSDURLLabel = model.MetaLabelPrefix + "url"

func (d *httpSD) refresh(ctx context.Context) ([]*targetgroup.Group, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "llmprobe")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Prometheus-Refresh-Interval-Seconds", strconv.FormatFloat(d.interval.Seconds(), 'f', -1, 64))
	resp, err := d.client.Do(req)
	if err != nil {
		var tl *bounded.TooLargeError
		if errors.As(err, &tl) {
			return nil, tl
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, with its credentials
		}
		return nil, fmt.Errorf("http_sd %s: %w", d.name(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg := "HTTP status " + resp.Status
		if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
			msg += " (a redirect; not followed, as credentials would go along: fix the url)"
		}
		return nil, fmt.Errorf("http_sd %s: %s", d.name(), msg)
	}
	if ct := strings.TrimSpace(resp.Header.Get("Content-Type")); !matchContentType.MatchString(ct) {
		return nil, fmt.Errorf("http_sd %s: unsupported content type %q", d.name(), ct)
	}
	b, err := bounded.ReadBody(resp, "http_sd answer of "+d.name(), config.MaxSDBytes)
	if err != nil {
		var tl *bounded.TooLargeError
		if errors.As(err, &tl) {
			return nil, err
		}
		return nil, fmt.Errorf("http_sd %s: %w", d.name(), err)
	}
	var tgs []*targetgroup.Group
	if err := json.Unmarshal(b, &tgs); err != nil {
		return nil, fmt.Errorf("http_sd %s: %w", d.name(), err)
	}
	for i, tg := range tgs {
		if tg == nil {
			return nil, fmt.Errorf("http_sd %s: target group %d is null", d.name(), i)
		}
		tg.Source = d.url + ":" + strconv.Itoa(i)
		if tg.Labels == nil {
			tg.Labels = model.LabelSet{}
		}
		tg.Labels[httpSDURLLabel] = model.LabelValue(d.url)
	}
	n := len(tgs)
	for i := n; i < d.last; i++ { // empty groups for those gone, as Prometheus sends
		tgs = append(tgs, &targetgroup.Group{Source: d.url + ":" + strconv.Itoa(i)})
	}
	d.last = n
	return tgs, nil
}

// name is the URL without userinfo and query, for errors.
func (d *httpSD) name() string {
	u, err := url.Parse(d.url)
	if err != nil {
		return "<url>"
	}
	return bounded.Redacted(u)
}
