// Package discovery runs the daemon's service discovery: for each entry of
// the config's discovery list it runs Prometheus' own discoverers
// (prometheus/discovery: static, dns, kubernetes; file and http are
// llmprobe's own over the bounded reader, with Prometheus' config types:
// sdread.go), keeps the
// last target groups each reported, and derives the entry's targets from
// them (targets.go): relabelling as Prometheus does, the base URL from
// __scheme__, __address__ and __path_prefix__, the name, the labels that
// survive, the bounds (max_targets, MaxDiscoveredTargets), and name
// collisions. The daemon (internal/daemon) asks for Targets whenever
// Updates signals and applies them to the manager with its static targets;
// this package starts no probe. Failures of a mechanism are logged and
// counted, and its last good target groups are kept, as in Prometheus.
// Metrics: llmprobe_discovery_* (docs/metrics.md).
//
// A Runner is safe for concurrent use.
package discovery

import (
	"context"
	"log/slog"
	"reflect"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/llmprobe/llmprobe/prober/config"
)

// Options configures a Runner.
type Options struct {
	// Logger gets the runner's own lines (nil: none).
	Logger log.Logger
	// Slog is handed to the mechanisms (Prometheus' discoverers log
	// through log/slog); their errors are also counted as failures of
	// their entry. nil: their lines are dropped (still counted). When set,
	// client-go's klog lines (Kubernetes discovery) go to it too
	// (process-wide: klog has one logger).
	Slog *slog.Logger
	// Registerer gets llmprobe_discovery_* (nil: none). The mechanisms'
	// own prometheus_sd_* metrics go to a registry of each mechanism's,
	// not exported (Kubernetes' failure count is read from it into
	// llmprobe_discovery_failures_total).
	Registerer prometheus.Registerer
}

// setClientLogger, when linked (klog.go: Kubernetes discovery), gives the
// mechanisms' client libraries the Runner's slog logger.
var setClientLogger func(*slog.Logger)

// Runner runs the discovery entries. Create it with New, set the entries
// with Apply, read Targets after each signal of Updates, and Stop it.
type Runner struct {
	logger  log.Logger
	slog    *slog.Logger
	metrics *metrics
	updates chan struct{}

	mu      sync.Mutex
	entries []*entry // in config order
	stopped bool
	last    map[string]string // entry -> the last logged drop summary
}

// entry is one running discovery entry.
type entry struct {
	cfg    config.DiscoveryConfig
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	groups map[groupKey]*targetgroup.Group
}

// groupKey identifies a target group: the mechanism (its index in the
// entry) and the group's source.
type groupKey struct {
	provider int
	source   string
}

// New returns a Runner with no entries. It panics when o.Registerer
// already holds llmprobe_discovery_*.
func New(o Options) *Runner {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.Slog == nil {
		o.Slog = slog.New(slog.DiscardHandler)
	} else if setClientLogger != nil {
		setClientLogger(o.Slog)
	}
	r := &Runner{
		logger:  o.Logger,
		slog:    o.Slog,
		metrics: newMetrics(o.Registerer),
		updates: make(chan struct{}, 1),
		last:    map[string]string{},
	}
	return r
}

// Updates signals (without blocking the runner: one pending signal at most)
// that the discovered targets may have changed: a mechanism reported, or
// Apply changed the entries.
func (r *Runner) Updates() <-chan struct{} { return r.updates }

func (r *Runner) signal() {
	select {
	case r.updates <- struct{}{}:
	default:
	}
}

// Apply makes the running entries match entries (a valid config's): an
// entry whose mechanisms are unchanged (reflect.DeepEqual, as Prometheus'
// discovery manager compares them) keeps running and its last target
// groups, taking the new relabelling, template and bounds; a changed entry
// is restarted with no groups; a removed one is stopped. ctx bounds the
// mechanisms' lives (Stop stops them sooner).
func (r *Runner) Apply(ctx context.Context, entries []config.DiscoveryConfig) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	old := map[string]*entry{}
	for _, e := range r.entries {
		old[e.cfg.Name] = e
	}
	next := make([]*entry, 0, len(entries))
	for _, c := range entries {
		if e, ok := old[c.Name]; ok && reflect.DeepEqual(e.cfg.ServiceDiscoveryConfigs, c.ServiceDiscoveryConfigs) {
			e.mu.Lock()
			e.cfg = c
			e.mu.Unlock()
			delete(old, c.Name)
			next = append(next, e)
			continue
		}
		if e, ok := old[c.Name]; ok {
			e.stop()
			r.metrics.failures.retire(c.Name)
			delete(old, c.Name)
			level.Info(r.logger).Log("msg", "discovery restarted", "discovery", c.Name, "reason", "changed")
		} else {
			level.Info(r.logger).Log("msg", "discovery started", "discovery", c.Name, "mechanisms", len(c.ServiceDiscoveryConfigs))
		}
		next = append(next, r.start(ctx, c))
	}
	for name, e := range old {
		e.stop()
		r.metrics.delete(name)
		delete(r.last, name)
		level.Info(r.logger).Log("msg", "discovery stopped", "discovery", name, "reason", "removed")
	}
	r.entries = next
	r.signal()
}

// start runs the mechanisms of one entry.
func (r *Runner) start(parent context.Context, c config.DiscoveryConfig) *entry {
	ctx, cancel := context.WithCancel(parent)
	e := &entry{cfg: c, cancel: cancel, groups: map[groupKey]*targetgroup.Group{}}
	r.metrics.init(c.Name)
	failures := r.metrics.failures.counter(c.Name)
	logger := slog.New(&countingHandler{next: r.slog.Handler(), failures: failures}).With("discovery", c.Name)
	for i, sc := range c.ServiceDiscoveryConfigs {
		// Each mechanism's own metrics in a registry of its own, nobody
		// gathers but uncountedFailures: each needs one to be built, and
		// one per mechanism keeps two of a kind in one entry, or in two
		// entries, from colliding and their failures apart.
		reg := prometheus.NewRegistry()
		sdm := sc.NewDiscovererMetrics(reg, promdiscovery.NewRefreshMetrics(reg))
		err := sdm.Register()
		var d promdiscovery.Discoverer
		sc := config.NoRedirects(sc) // Prometheus' default follows them, with the credentials
		if err == nil {
			d, err = ownDiscoverer(sc, logger.With("mechanism", sc.Name()), promdiscovery.NewRefreshMetrics(reg), c.Name)
		}
		if err == nil && d == nil {
			d, err = sc.NewDiscoverer(promdiscovery.DiscovererOptions{
				Logger:  logger.With("mechanism", sc.Name()),
				Metrics: sdm,
				SetName: c.Name,
			})
		}
		if metric, ok := uncountedFailures[sc.Name()]; ok && err == nil {
			r.metrics.failures.watch(c.Name, reg, metric)
		}
		if err != nil {
			failures.Inc()
			level.Error(r.logger).Log("msg", "cannot start a discovery mechanism", "discovery", c.Name, "mechanism", sc.Name(), "err", err)
			continue
		}
		up := make(chan []*targetgroup.Group)
		e.wg.Go(func() { d.Run(ctx, up) })
		e.wg.Go(func() { r.receive(ctx, e, i, up) })
	}
	return e
}

// receive stores the target groups a mechanism reports until ctx ends.
func (r *Runner) receive(ctx context.Context, e *entry, provider int, up <-chan []*targetgroup.Group) {
	for {
		select {
		case <-ctx.Done():
			return
		case tgs, ok := <-up:
			if !ok {
				return // the mechanism is done (static_configs: after its one report)
			}
			e.mu.Lock()
			name := e.cfg.Name
			for _, tg := range tgs {
				if tg == nil {
					continue
				}
				k := groupKey{provider, tg.Source}
				if len(tg.Targets) == 0 {
					delete(e.groups, k) // Prometheus' way of saying the group is gone
				} else {
					e.groups[k] = tg
				}
			}
			e.mu.Unlock()
			r.metrics.updates.WithLabelValues(name).Inc()
			r.signal()
		}
	}
}

// stop cancels the entry's mechanisms and waits for them.
func (e *entry) stop() {
	e.cancel()
	e.wg.Wait()
}

// Stop stops every entry and waits for the mechanisms. It is idempotent;
// Apply after Stop does nothing.
func (r *Runner) Stop() {
	r.mu.Lock()
	entries := r.entries
	r.entries, r.stopped = nil, true
	r.mu.Unlock()
	for _, e := range entries {
		e.stop()
	}
}

// countingHandler counts the error lines of a mechanism as failures of
// its entry and passes every line on.
type countingHandler struct {
	next     slog.Handler
	failures prometheus.Counter
}

func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelError {
		h.failures.Inc()
	}
	if !h.next.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.next.Handle(ctx, rec)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{next: h.next.WithAttrs(as), failures: h.failures}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{next: h.next.WithGroup(name), failures: h.failures}
}
