package daemon

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/llmprobe/llmprobe/prober/redact"
)

// Push pushes every metric in the Prometheus text format to URL every
// Interval (VictoriaMetrics' /api/v1/import/prometheus, vmagent, a
// Pushgateway), with ExtraLabels (name=value, checked by
// ValidatePushLabels) on every series, by Method (POST or PUT).
type Push struct {
	URL         string
	Interval    time.Duration
	ExtraLabels []string
	Method      string
}

// startPush starts pushing the metrics of g; stop ends it and waits for
// the pusher. An invalid URL is an error.
func startPush(ctx context.Context, p Push, g prometheus.Gatherer, logger log.Logger) (stop func(), err error) {
	var wg sync.WaitGroup
	pctx, cancel := context.WithCancel(ctx)
	err = metrics.InitPushExtWithOptions(pctx, p.URL, p.Interval, func(w io.Writer) { WriteText(w, g) },
		&metrics.PushOptions{
			ExtraLabels: strings.Join(QuotePushLabels(p.ExtraLabels), ","),
			Method:      p.Method,
			WaitGroup:   &wg,
			LogErr: func(format string, v ...any) {
				level.Warn(logger).Log("msg", "push failed", "err", fmt.Sprintf(format, v...))
			},
		})
	if err != nil {
		cancel()
		wg.Wait()
		return nil, err
	}
	level.Info(logger).Log("msg", "pushing metrics", "url", redact.Text(p.URL), "interval", p.Interval)
	return func() { cancel(); wg.Wait() }, nil
}

// PushOnce pushes the metrics of g once to p.URL (p.Interval unused),
// waiting at most timeout: `llmprobe sweep --push.url` pushes a run's
// summary so.
func PushOnce(ctx context.Context, p Push, timeout time.Duration, g prometheus.Gatherer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return metrics.PushMetricsExt(ctx, p.URL, func(w io.Writer) { WriteText(w, g) }, &metrics.PushOptions{
		ExtraLabels: strings.Join(QuotePushLabels(p.ExtraLabels), ","),
		Method:      p.Method,
	})
}

// WriteText writes what g gathers in the Prometheus text format (nothing
// when gathering failed outright).
func WriteText(w io.Writer, g prometheus.Gatherer) {
	mfs, err := g.Gather()
	if err != nil && len(mfs) == 0 {
		return
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		_ = enc.Encode(mf)
	}
}

// ValidatePushLabels checks push extra labels: each name=value with a
// valid label name.
func ValidatePushLabels(ls []string) error {
	for _, l := range ls {
		name, _, ok := strings.Cut(l, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q is not name=value", l)
		}
		for i, r := range name {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
				return fmt.Errorf("%q: invalid label name %q", l, name)
			}
		}
	}
	return nil
}

// QuotePushLabels turns name=value labels into name="value" with the value
// escaped, as metrics.PushOptions.ExtraLabels wants them.
func QuotePushLabels(ls []string) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		name, value, _ := strings.Cut(l, "=")
		out = append(out, name+`="`+labelEscaper.Replace(value)+`"`)
	}
	return out
}

// labelEscaper escapes a label value as the Prometheus text format does.
var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
