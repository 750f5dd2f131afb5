// Package daemon runs `llmprobe serve` from its settings: the metrics
// registries, the probe manager and its observers (collector/probemetrics,
// the landing page's window), the sweep service, the HTTP routes, the
// configuration source (a file reloaded on SIGHUP and POST /-/reload, a
// config built from flags, or the built-in simulator), the optional push,
// and the graceful shutdown sequence. cmd/llmprobe parses and checks the
// flags and calls Run; tests call it the same way.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	toolkit "github.com/prometheus/exporter-toolkit/web"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/logging"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/discovery"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/tracing"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// ErrUsage marks (wraps) the errors of Run that are a bad setting only
// found once running (an invalid push URL): `llmprobe serve` exits 2 on
// them, 1 on every other error.
var ErrUsage = errors.New("invalid setting")

// Options are the daemon's settings, checked by the caller (cmd/llmprobe)
// except where a field says otherwise.
type Options struct {
	// Logger gets every log line (nil: none).
	Logger log.Logger
	// ConfigFile is loaded at the start and reloaded on every Hup and POST
	// /-/reload; an invalid file at a reload keeps the old configuration.
	// Empty: Config, or the built-in simulator without it.
	ConfigFile string
	// Config is a configuration built from flags (serve --target), applied
	// once and never reloaded; ConfigFrom is what it was built from, for
	// the log.
	Config     *config.Config
	ConfigFrom string
	// Simulator serves the built-in simulator probed when there is neither
	// ConfigFile nor Config.
	Simulator Simulator
	// Shard is this replica's share of the targets (zero: all of them).
	Shard manager.Shard
	// Web is exporter-toolkit's listen address and web config file
	// (validated by Run before anything starts); required.
	Web *toolkit.FlagConfig
	// Push, when Push.URL is set, pushes every metric on an interval.
	Push Push
	// ShutdownTimeout bounds the wait for the sweeps, the probes and the
	// web server on shutdown.
	ShutdownTimeout time.Duration
	// The HTTP surfaces that are off by default (docs/security.md).
	EnableLifecycle, EnablePprof, EnableSweeps bool
	// MaxRequests caps the HTTP requests served at once (over it: 503 at
	// once) and the connections each listener holds at once (over it: a
	// new connection closes the longest-idle one, connLimiter); 0: no
	// cap. `serve --web.max-requests`, default web.DefaultMaxRequests.
	MaxRequests int
	// SweepsDir holds the daemon's sweep run directories; at most
	// SweepsMaxConcurrent sweeps run at once.
	SweepsDir           string
	SweepsMaxConcurrent int
	// SweepsMaxBytes trims the run directories under SweepsDir before each
	// sweep (`--sweeps.retention.size`; 0: no limit by size).
	SweepsMaxBytes int64
	// Hup delivers SIGHUP: each one reloads ConfigFile (without one it is
	// ignored with a warning). nil: none.
	Hup <-chan os.Signal
	// Tracing traces every probe request over OTLP (off by default).
	Tracing Tracing
	// SecretPollInterval is how often the files credentials were read from
	// are checked for a change, which reloads the config file (0:
	// DefaultSecretPollInterval).
	SecretPollInterval time.Duration
}

// Simulator starts the built-in simulator: Start serves it and returns its
// base URL and the func that stops it; Capacity is its capacity in req/s
// for a workload (0: not known), the reference of sweeps of it.
type Simulator struct {
	Start    func(log.Logger) (stop func(), baseURL string, err error)
	Capacity func(workload.Spec) float64
}

// simulatorTarget is the built-in simulator's target name.
const simulatorTarget = "simulator"

// daemon is one Run: what it built and the current config source.
type daemon struct {
	o         Options
	logger    log.Logger
	reg       *prometheus.Registry
	gatherers prometheus.Gatherers
	safe      *config.SafeConfig
	pm        *probemetrics.Metrics
	window    *web.Window
	mgr       *manager.Manager
	sweeps    *sweepd.Service
	// disco runs the config's discovery entries; labels adds discovered
	// targets' labels to their series (discovered.go).
	disco  *discovery.Runner
	labels *probemetrics.TargetLabels
	// applyMu serialises applying a config and discovered targets;
	// static is the config last applied (its own targets and entries).
	applyMu sync.Mutex
	static  *config.Config
	// discovered holds the labels of the discovered targets applied.
	discovered map[string]map[string]string
	// embedded is the target name of the built-in simulator ("": none).
	embedded string

	// first is the config file as loaded at start, applied by the first
	// load (nil: none, or applied).
	first *config.Config

	reloadMu   sync.Mutex // serialises reloads: SIGHUP and POST /-/reload
	fromFile   bool
	load       func() (*config.Config, error)
	configYAML func() string
}

// Run runs the daemon until ctx is canceled (then it shuts down in order:
// sweeps and probes, then the web server) or the web server fails. Every
// failure is logged before Run returns it; an error wrapping ErrUsage is a
// bad setting.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	logger := o.Logger
	// Whatever ends Run ends the reload loop and the push too.
	ctx, cancel := context.WithCancel(ctx)
	var loops sync.WaitGroup
	defer loops.Wait()
	defer cancel()
	if err := validateWebConfig(*o.Web.WebConfigFile); err != nil {
		level.Error(logger).Log("msg", "invalid --web.config.file", "file", *o.Web.WebConfigFile, "err", err)
		return err
	}
	level.Info(logger).Log("msg", "starting llmprobe", "version", version.Info())
	level.Info(logger).Log("msg", "build context", "build_context", version.BuildContext())
	// The config file is loaded before anything starts: its tracing block
	// configures the exporter the probes get. The first load applies it.
	var first *config.Config
	if o.ConfigFile != "" {
		c, err := config.Load(o.ConfigFile)
		if err != nil {
			level.Error(logger).Log("msg", "error loading config", "err", err)
			return err
		}
		first, o.Tracing.File = c, c.Tracing
	}
	o.Tracing = o.Tracing.Resolved()
	tp, err := StartTracing(ctx, o.Tracing, logger)
	if err != nil {
		level.Error(logger).Log("msg", "invalid tracing settings", "err", err)
		return err
	}
	// Deferred first, run last: the spans of the last probes are flushed
	// after the probes stopped.
	defer StopTracing(tp, o.ShutdownTimeout, logger)
	mp, err := StartMetrics(ctx, o.Tracing, logger)
	if err != nil {
		level.Error(logger).Log("msg", "invalid tracing settings", "err", err)
		return err
	}
	defer StopMetrics(mp, o.ShutdownTimeout, logger)
	d := build(o, tp, mp)
	d.first = first
	defer d.mgr.Stop()
	defer d.sweeps.Stop()
	defer d.disco.Stop()
	loops.Go(func() { d.followDiscovery(ctx) })
	stop, err := d.source(ctx)
	if err != nil {
		return err
	}
	defer stop()
	cfg, err := d.load()
	if err != nil {
		level.Error(logger).Log("msg", "error loading config", "err", err)
		return err
	}
	level.Info(logger).Log("msg", "probes scheduled", "targets", len(cfg.Targets))
	loops.Go(func() { d.reloadOnHup(ctx) })
	loops.Go(func() { d.watchSecrets(ctx) })
	if o.Push.URL != "" {
		stopPush, err := startPush(ctx, o.Push, d.gatherers, logger)
		if err != nil {
			level.Error(logger).Log("msg", "invalid --push.url", "err", err)
			return fmt.Errorf("%w: --push.url: %w", ErrUsage, err)
		}
		defer stopPush()
	}
	return d.serve(ctx)
}

// build makes the registries, the metrics, the landing page's window, the
// manager (observed by both) and the sweep service.
func build(o Options, tp *tracing.Provider, mp *tracing.Metrics) *daemon {
	d := &daemon{o: o, logger: o.Logger, reg: prometheus.NewRegistry()}
	selfReg := prometheus.NewRegistry()
	selfReg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("llmprobe"),
	)
	d.labels = probemetrics.NewTargetLabels(d.reg)
	d.gatherers = prometheus.Gatherers{d.labels, selfReg}
	d.safe = config.NewSafeConfig(d.reg)
	d.pm = probemetrics.New(d.reg)
	// The client's check of itself: llmprobe_client_sched_latency_seconds.
	probemetrics.NewSchedLatency(d.reg)
	d.window = web.NewWindow() // the landing page's summary of the last 5 minutes per target
	mo := manager.Options{Logger: d.logger, Observers: []manager.Observer{d.pm, d.window}, Shard: o.Shard}
	var tracer func(float64) trace.Tracer // the probes' and the sweeps'
	if tp != nil {
		tracer = tp.Tracer
		mo.Tracer, mo.TraceSampleRatio = tracer, o.Tracing.SampleRatio
		registerTracing(d.reg, tp)
	}
	if mp != nil {
		mo.Metrics = mp
		registerMetrics(d.reg, mp)
	}
	d.mgr = manager.New(mo)
	registerShardGauges(d.reg, d.mgr)
	d.disco = discovery.New(discovery.Options{
		Logger: log.With(d.logger, "component", "discovery"), Slog: logging.Slog(log.With(d.logger, "component", "discovery")),
		Registerer: d.reg,
	})
	if o.Shard.Count > 0 {
		level.Info(d.logger).Log("msg", "sharded: probing the targets this replica owns", "shard", o.Shard)
	}
	d.sweeps = sweepd.New(sweepd.Options{
		Logger: log.With(d.logger, "component", "sweeps"), Dir: o.SweepsDir, MaxConcurrent: o.SweepsMaxConcurrent, MaxBytes: o.SweepsMaxBytes,
		Tracer:   tracer,
		Observer: probemetrics.NewSweeps(d.reg),
		Embedded: func(target string, w workload.Spec) (bool, float64) {
			if d.embedded == "" || target != d.embedded {
				return false, 0
			}
			return true, d.o.Simulator.Capacity(w)
		},
	})
	// The landing page's budgets leave out the minutes a target is swept.
	d.window.SetSweeping(func(target string) bool { _, ok := d.sweeps.Running(target); return ok })
	return d
}

// apply applies c: its discovery entries to the discovery runner, then its
// targets and the discovered ones (applyTargets).
func (d *daemon) apply(ctx context.Context, c *config.Config) error {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	// A sweep that could not write its run directory fails here, at load
	// (the old config stays), not at its first run.
	if hasSweeps(c) || d.o.EnableSweeps {
		if err := sweepd.CheckDir(d.o.SweepsDir); err != nil {
			return err
		}
	}
	d.disco.Apply(ctx, c.Discovery)
	if err := d.applyTargets(ctx, c); err != nil {
		return err
	}
	d.static = c
	return nil
}

// hasSweeps reports whether a target of c (or the discovery template)
// schedules sweeps.
func hasSweeps(c *config.Config) bool {
	return slices.ContainsFunc(c.Targets, func(t config.TargetConfig) bool { return len(t.Sweeps) > 0 }) ||
		slices.ContainsFunc(c.Discovery, func(e config.DiscoveryConfig) bool { return len(e.Target.Sweeps) > 0 })
}

// applyTargets applies c's targets and the discovered ones to the manager
// and the sweeps (those of the targets this replica owns), exports the
// targets' costs and the discovered targets' labels. Called with applyMu
// held.
func (d *daemon) applyTargets(ctx context.Context, c *config.Config) error {
	full, labels := d.withDiscovered(c)
	d.labels.Set(mergeLabels(d.discovered, labels)) // before the new targets' first series
	if err := d.mgr.Apply(ctx, full); err != nil {
		d.labels.Set(d.discovered)
		return err
	}
	d.discovered = labels
	d.labels.Set(labels)
	owned := *full
	owned.Targets = slices.DeleteFunc(slices.Clone(full.Targets), func(t config.TargetConfig) bool { return !d.o.Shard.Owns(t.Name) })
	d.sweeps.Apply(&owned)
	costs := make(map[string]float64, len(full.Targets))
	for _, t := range full.Targets {
		costs[t.Name] = t.CostPerHour
	}
	d.pm.SetTargetCosts(costs)
	return nil
}

// reload reloads the config file (POST /-/reload and SIGHUP).
func (d *daemon) reload(context.Context) error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if !d.fromFile {
		return fmt.Errorf("%w: the daemon was not started from a config file", web.ErrNothingToReload)
	}
	c, err := d.load()
	if err != nil {
		level.Error(d.logger).Log("msg", "error reloading config, keeping the old one", "err", err)
		return err
	}
	level.Info(d.logger).Log("msg", "config reloaded", "targets", len(c.Targets))
	return nil
}

func (d *daemon) reloadOnHup(ctx context.Context) {
	for {
		select {
		case <-d.o.Hup:
			if !d.fromFile {
				level.Warn(d.logger).Log("msg", "SIGHUP ignored: the daemon was not started from a config file")
				continue
			}
			_ = d.reload(ctx)
		case <-ctx.Done():
			return
		}
	}
}

// serve serves the routes until ctx is canceled, then shuts down.
func (d *daemon) serve(ctx context.Context) error {
	o := d.o
	handler := web.NewHandler(web.Options{
		Gatherer:   d.gatherers,
		Status:     d.mgr,
		Reload:     d.reload,
		Ready:      d.mgr.Ready,
		ConfigYAML: d.configYAML,
		// docs/security.md: off by default.
		EnableLifecycle: o.EnableLifecycle,
		EnablePprof:     o.EnablePprof,
		EnableSweeps:    o.EnableSweeps,
		Shard:           shardText(d.mgr),
		Sweeps:          d.sweeps,
		Window:          d.window,
		ProbeConfig:     d.safe.Get, // GET /probe: modules, probe_allowed_targets
	})
	srv := newWebServer(web.LimitRequests(handler, o.MaxRequests, nil))
	errc := make(chan error, 1)
	go func() { errc <- listenAndServe(srv, o.Web, o.MaxRequests, logging.Slog(d.logger)) }()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			level.Error(d.logger).Log("msg", "web server failed", "err", err)
			return err
		}
		return nil
	case <-ctx.Done():
	}
	level.Info(d.logger).Log("msg", "shutting down: stopping sweeps and probes")
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	stopped := make(chan struct{})
	go func() { d.sweeps.Stop(); d.mgr.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-sctx.Done():
		level.Warn(d.logger).Log("msg", "probes did not stop within --shutdown-timeout", "timeout", o.ShutdownTimeout)
	}
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		level.Warn(d.logger).Log("msg", "web server shutdown", "err", err)
	}
	level.Info(d.logger).Log("msg", "stopped")
	return nil
}
