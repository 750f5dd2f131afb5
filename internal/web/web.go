// Package web owns llmprobe's HTTP surface apart from the metrics themselves:
// the landing page (targets, probes and their latest results), the health and
// readiness endpoints, the reload endpoint (behind --web.enable-lifecycle),
// the config view and, behind --web.enable-pprof, /debug/pprof. Serving (TLS,
// basic auth) is exporter-toolkit's job; this package only builds the mux.
package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// StatusSource reports the current targets; implemented by the probe
// manager (*manager.Manager), whose status types the landing page reads.
type StatusSource interface {
	Status() []manager.TargetStatus
}

// ErrNothingToReload is returned (wrapped) by an Options.Reload that has no
// configuration file to reload; /-/reload answers it with 409 Conflict.
var ErrNothingToReload = errors.New("nothing to reload")

// Options configures the handlers. Reload is called for POST /-/reload and
// returns the reload error; Ready reports readiness; ConfigYAML returns the
// loaded config with secrets masked.
type Options struct {
	Gatherer   prometheus.Gatherer
	Status     StatusSource
	Reload     func(ctx context.Context) error
	Ready      func() bool
	ConfigYAML func() string
	// EnableOpenMetrics serves OpenMetrics (needed for exemplars) when the
	// scraper asks for it. Default true via NewHandler.
	DisableOpenMetrics bool
	// EnableLifecycle serves POST /-/reload (Prometheus'
	// --web.enable-lifecycle); when false (the default) it answers 403 and
	// only SIGHUP reloads.
	EnableLifecycle bool
	// EnablePprof serves net/http/pprof under /debug/pprof/ (default false:
	// 404). Profiles show memory and goroutine stacks, request contents
	// included: enable it only behind basic auth or on a trusted network.
	EnablePprof bool
	// EnableSweeps serves the sweep API under /api/v1/sweeps through Sweeps
	// (--web.enable-sweeps; docs/sweep-api.md); when false (the default)
	// every sweep API path answers 403.
	EnableSweeps bool
	Sweeps       SweepService
	// Window feeds the landing page's per-target summary of the last
	// SummaryWindow (nil: no summary).
	Window *Window
	// ProbeConfig returns the current configuration, whose modules and
	// probe_allowed_targets GET /probe uses (probe.go); nil, or a nil
	// result: /probe answers 503.
	ProbeConfig func() *config.Config
	// Shard says which share of the targets this replica probes, for the
	// landing page (nil or "": not sharded).
	Shard func() string
}

// NewHandler returns the mux with /, /metrics, /-/healthy, /-/ready,
// /-/reload (POST or PUT, with EnableLifecycle), /config, /debug/pprof/
// (with EnablePprof), the sweep API /api/v1/sweeps (with EnableSweeps) and
// GET /probe (probe.go: the blackbox convention, with ProbeConfig).
//
// /-/reload answers 405 to other methods, 403 without EnableLifecycle, 409
// when Reload returns ErrNothingToReload, 500 when the reload failed (an
// invalid file: the old configuration stays), 200 when it succeeded.
func NewHandler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
		EnableOpenMetrics: !o.DisableOpenMetrics,
		ErrorHandling:     promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil && !o.Ready() {
			http.Error(w, "Not ready: config not loaded or probes not scheduled yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready")
	})
	reloads := newRouteLimit("/-/reload", MaxReloads, MaxNoBodyBytes, false)
	mux.HandleFunc("/-/reload", reloads.wrap(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "This endpoint requires a POST or PUT request.", http.StatusMethodNotAllowed)
			return
		}
		if !o.EnableLifecycle {
			http.Error(w, "Lifecycle API is not enabled: start llmprobe with --web.enable-lifecycle, or send SIGHUP.", http.StatusForbidden)
			return
		}
		if o.Reload == nil {
			http.Error(w, "reload is not available", http.StatusNotImplemented)
			return
		}
		if err := o.Reload(r.Context()); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, ErrNothingToReload) {
				code = http.StatusConflict
			}
			http.Error(w, fmt.Sprintf("failed to reload config: %s", err), code)
			return
		}
		fmt.Fprintln(w, "Config reloaded")
	}))
	addSweepRoutes(mux, o)
	addProbeRoute(mux, o)
	if o.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/config", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.ConfigYAML == nil {
			fmt.Fprintln(w, "# no config file (flags or built-in default)")
			return
		}
		fmt.Fprint(w, o.ConfigYAML())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		var page bytes.Buffer
		if err := landing.Execute(&page, buildLanding(o, time.Now())); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = page.WriteTo(w)
	})
	return mux
}

// cmdline is pprof.Cmdline with secret-looking flag values and URL
// credentials redacted (redact.Args), e.g. those of --push.url.
func cmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(redact.Args(os.Args), "\x00"))
}
