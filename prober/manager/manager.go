// Package manager runs the daemon's probes: for every configured target it
// learns the served model and server version, and for every probe it runs an
// open-loop arrival schedule whose arrivals each send one streaming request
// (through prober/endpoint: discovery, prompt sizing, request building and
// clients), evaluate the target's SLO and hand the Record and its verdict to
// its Observers (collector/probemetrics and the landing page's window in the
// daemon; the manager imports no consumer). The landing page reads Status. Config
// reloads are applied as a diff: unchanged probes keep running, changed and
// removed ones are canceled (their in-flight requests end as "canceled").
//
// A Manager is safe for concurrent use.
package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// ErrReload is the cancel cause of requests of probes removed or changed by
// a config reload; ErrShutdown the cause on shutdown.
var (
	ErrReload   = errors.New("probe removed or changed by a config reload")
	ErrShutdown = errors.New("llmprobe is shutting down")
)

// Options configures a Manager.
type Options struct {
	Logger log.Logger
	// Observers receive what the probes do, each event in the order
	// given (observer.go): every finished request, and the events of the
	// optional interfaces an observer implements. None: nothing observes.
	Observers []Observer
	// Recent is how many recent results each probe keeps for the landing
	// page (default 20); failures are kept in a separate ring of the same
	// size, so they survive a run of successes.
	Recent int
	// Shard, when set, makes this manager probe only the targets it owns
	// (Shard.Owns): Apply drops the others (ShardTargets counts them).
	Shard Shard
	// Tracer, when not nil, gives the tracer of a sampling ratio that
	// traces every request of a target (endpoint.Options.Tracer): a client
	// span per request with its traceparent, and Record.TraceID when
	// sampled; each target at its trace_sample_ratio, else at
	// TraceSampleRatio. Nil: no tracing.
	Tracer func(ratio float64) trace.Tracer
	// Metrics, when not nil, records every generation request into the
	// OTLP GenAI client histograms (endpoint.Options.Metrics); nil: none.
	Metrics          *tracing.Metrics
	TraceSampleRatio float64
}

// Manager owns the running probes. Create it with New.
type Manager struct {
	opts    Options
	logger  log.Logger
	obs     *observers
	runID   string
	seq     atomic.Uint64 // request ids: unique within the process
	mu      sync.Mutex
	targets map[string]*targetRunner
	notes   map[string]string
	// owned and total count the targets of the last applied config this
	// shard probes and all of them. Atomics, not under mu: a scrape reads
	// them (llmprobe_shard_targets) while Apply, holding mu, waits for the
	// metrics' locks that the same scrape holds.
	owned, total atomic.Int64
	ready        atomic.Bool
	stopped      bool
}

// New returns a Manager with no targets; call Apply to start probing.
func New(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.Recent <= 0 {
		o.Recent = 20
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Manager{
		opts:    o,
		logger:  o.Logger,
		obs:     newObservers(o.Observers),
		runID:   hex.EncodeToString(b[:]),
		targets: map[string]*targetRunner{},
		notes:   map[string]string{},
	}
}

// requestID returns a request id unique within the process:
// llmprobe-<run id>-<kind><n>.
func (m *Manager) requestID(kind string) string {
	return fmt.Sprintf("llmprobe-%s-%s%d", m.runID, kind, m.seq.Add(1))
}

// SetNote attaches a note to a target shown on the landing page (e.g. that it
// is the built-in simulator).
func (m *Manager) SetNote(target, note string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notes[target] = note
}

// Ready reports whether a config has been applied and its probes scheduled.
func (m *Manager) Ready() bool { return m.ready.Load() }

// Apply makes the running probes match cfg. The whole new state (clients,
// generators) is built first; if any part fails nothing changes and the
// error is returned. Unchanged targets and probes keep running untouched.
func (m *Manager) Apply(ctx context.Context, cfg *config.Config) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return errors.New("manager stopped")
	}
	type plan struct {
		keep   *targetRunner // existing runner whose target settings are unchanged
		create *targetRunner // new runner (target new or its settings changed)
		cfg    config.TargetConfig
	}
	plans := make([]plan, 0, len(cfg.Targets))
	for _, tc := range cfg.Targets {
		if !m.opts.Shard.Owns(tc.Name) {
			continue
		}
		if old, ok := m.targets[tc.Name]; ok && old.key == tc.RestartKey() {
			// Build the probes that are new or changed, before swapping.
			if err := old.prepare(tc); err != nil {
				return fmt.Errorf("target %q: %w", tc.Name, err)
			}
			plans = append(plans, plan{keep: old, cfg: tc})
			continue
		}
		tr, err := newTargetRunner(m, tc)
		if err != nil {
			return fmt.Errorf("target %q: %w", tc.Name, err)
		}
		if err := tr.prepare(tc); err != nil {
			return fmt.Errorf("target %q: %w", tc.Name, err)
		}
		plans = append(plans, plan{create: tr, cfg: tc})
	}

	// Swap: stop targets that are gone or replaced, then start the new state.
	wanted := map[string]bool{}
	for _, p := range plans {
		wanted[p.cfg.Name] = true
	}
	for name, tr := range m.targets {
		var replacement *config.TargetConfig
		for i, p := range plans {
			if p.cfg.Name == name && p.create != nil {
				replacement = &plans[i].cfg
			}
		}
		switch {
		case !wanted[name]:
			tr.stop(ErrReload, nil)
			m.obs.DeleteTarget(name)
			level.Info(m.logger).Log("msg", "target stopped", "target", name, "reason", "removed")
		case replacement != nil:
			// Keep the series of probes that continue under the new
			// settings (their counters go on); delete the others.
			keep := map[string]bool{}
			for _, pc := range replacement.Probes {
				keep[pc.Name] = true
			}
			tr.stop(ErrReload, keep)
			level.Info(m.logger).Log("msg", "target stopped", "target", name, "reason", "changed")
		default:
			continue
		}
		delete(m.targets, name)
	}
	for _, p := range plans {
		tr := p.keep
		if p.create != nil {
			tr = p.create
			tr.note = m.notes[p.cfg.Name]
			m.targets[p.cfg.Name] = tr
			m.obs.SetTargetLabels(p.cfg.Name, p.cfg.Labels)
			tr.start(ctx)
			level.Info(m.logger).Log("msg", "target started", "target", tr.cfg.Name, "base_url", tr.cfg.BaseURL, "api", tr.cfg.API, "probes", len(tr.cfg.Probes))
		}
		tr.commit(p.cfg)
	}
	m.owned.Store(int64(len(plans)))
	m.total.Store(int64(len(cfg.Targets)))
	m.ready.Store(true)
	return nil
}

// Stop cancels every probe (in-flight requests end as "canceled") and waits
// for them to finish. It is idempotent.
func (m *Manager) Stop() {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	m.stopped = true
	m.ready.Store(false)
	targets := slices.Collect(maps.Values(m.targets))
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, tr := range targets {
		wg.Go(func() { tr.stop(ErrShutdown, nil) })
	}
	wg.Wait()
}

// Status reports targets, probes and their recent results (for the landing
// page), sorted by target name. It never waits for a target's I/O.
func (m *Manager) Status() []TargetStatus {
	m.mu.Lock()
	trs := slices.Collect(maps.Values(m.targets))
	m.mu.Unlock()
	out := make([]TargetStatus, 0, len(trs))
	for _, tr := range trs {
		out = append(out, tr.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ShardTargets returns the manager's shard and how many targets of the
// last applied config it probes (owned) of all of them (total). It never
// waits for Apply (a metrics scrape calls it).
func (m *Manager) ShardTargets() (s Shard, owned, total int) {
	return m.opts.Shard, int(m.owned.Load()), int(m.total.Load())
}
