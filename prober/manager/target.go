package manager

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// sloSettings are the target settings that a reload swaps in place, without
// restarting the probes.
type sloSettings struct {
	SLO       slo.SLO
	Objective float64
}

// targetRunner owns one target: its endpoint (discovery, prompt sizing,
// clients), what discovery learned, and its probes.
type targetRunner struct {
	m      *Manager
	cfg    config.TargetConfig // immutable after creation (probes and SLO live elsewhere)
	key    string              // cfg.RestartKey()
	note   string
	logger log.Logger
	ep     *endpoint.Endpoint
	slo    atomic.Pointer[sloSettings]

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	// infoMu guards what discovery learned; it is never held during I/O,
	// so the landing page never waits for a hanging target.
	infoMu     sync.Mutex
	info       endpoint.Info
	lastTry    time.Time
	lastErr    *endpoint.Error
	discovered bool
	inflight   chan struct{} // closed when the running discovery ends; nil when none runs

	probesMu  sync.Mutex
	probes    map[string]*probeRunner
	probeCfgs []config.ProbeConfig    // in config order, for the status page
	pending   map[string]*probeRunner // built by prepare, started by commit
}

func newTargetRunner(m *Manager, tc config.TargetConfig) (*targetRunner, error) {
	logger := log.With(m.logger, "target", tc.Name)
	// Building the endpoint builds its client, so that bad settings fail
	// the reload, not the first probe.
	ep, err := endpoint.New(endpoint.Options{
		BaseURL:      tc.BaseURL,
		API:          tc.API,
		RerankPath:   tc.RerankPath,
		Model:        tc.Model,
		APIKey:       tc.APIKey(),
		Timeout:      tc.Timeout,
		TTFTTimeout:  tc.TTFTTimeout,
		StallTimeout: tc.StallTimeout,
		MaxBodyBytes: int64(tc.MaxBodyBytes),
		HTTPConfig:   tc.HTTPConfig,
		Logger:       logger,
		NewRequestID: func() string { return m.requestID("calibrate-") },
		Engine:       engine.Name(tc.Engine),
		MetricsURL:   metricsURL(tc),
		// Which backend answered (docs/discovery.md).
		AttributionHeaders: tc.AttributionHeaders,
		Tracer:             m.tracer(tc),
		Metrics:            m.opts.Metrics,
		// include_metrics to vLLM (docs/measurement.md, "Where the TTFT went").
		ServerTiming: tc.ServerTiming,
	})
	if err != nil {
		return nil, err
	}
	t := &targetRunner{
		m:      m,
		cfg:    tc,
		key:    tc.RestartKey(),
		logger: logger,
		ep:     ep,
		probes: map[string]*probeRunner{},
	}
	t.slo.Store(&sloSettings{SLO: tc.SLO, Objective: tc.GoodputObjective})
	return t, nil
}

// tracer is the tracer of tc's requests (nil when the manager does not
// trace): at its trace_sample_ratio, else the manager's ratio.
func (m *Manager) tracer(tc config.TargetConfig) trace.Tracer {
	if m.opts.Tracer == nil {
		return nil
	}
	return m.opts.Tracer(cmp.Or(tc.TraceSampleRatio, m.opts.TraceSampleRatio))
}

// metricsURL is the endpoint's MetricsURL for tc (metrics_url: none is
// endpoint.NoMetrics).
func metricsURL(tc config.TargetConfig) string {
	return cmp.Or(tc.MetricsURL(), endpoint.NoMetrics)
}

// serverInstance is the host[:port] of tc's metrics URL, or of its base_url
// when metrics_url is none (Prometheus may still scrape the server); "" when
// neither parses. It is the address as written: no default port is added
// (Prometheus 3 adds none to the instance label either).
func serverInstance(tc config.TargetConfig) string {
	u, err := url.Parse(cmp.Or(tc.MetricsURL(), tc.BaseURL))
	if err != nil {
		return ""
	}
	return u.Host
}

// prepare builds the probes of tc that are new or changed, without starting
// them; commit starts them and stops the ones that went away.
func (t *targetRunner) prepare(tc config.TargetConfig) error {
	t.probesMu.Lock()
	defer t.probesMu.Unlock()
	t.pending = map[string]*probeRunner{}
	for _, pc := range tc.Probes {
		key := pc.RestartKey()
		if old, ok := t.probes[pc.Name]; ok && old.key == key {
			continue
		}
		pr, err := newProbeRunner(t, pc, key)
		if err != nil {
			t.pending = nil
			return err
		}
		t.pending[pc.Name] = pr
	}
	return nil
}

func (t *targetRunner) start(parent context.Context) {
	t.ctx, t.cancel = context.WithCancelCause(context.WithoutCancel(parent))
	// Learn the model and server version in the background; probes resolve
	// the model on their first request if this has not finished yet.
	t.wg.Go(func() { t.refreshInfo(t.ctx) })
}

// commit applies tc to a started runner: the SLO and objective in place,
// then the probe diff prepared by prepare.
func (t *targetRunner) commit(tc config.TargetConfig) {
	t.probesMu.Lock()
	defer t.probesMu.Unlock()
	obs := t.m.obs
	newSLO := &sloSettings{SLO: tc.SLO, Objective: tc.GoodputObjective}
	sloChanged := *t.slo.Load() != *newSLO
	t.slo.Store(newSLO)
	t.probeCfgs = tc.Probes
	wanted := map[string]bool{}
	for _, pc := range tc.Probes {
		wanted[pc.Name] = true
	}
	for name, pr := range t.probes {
		if _, changed := t.pending[name]; changed || !wanted[name] {
			pr.stop(ErrReload)
			delete(t.probes, name)
			if !wanted[name] {
				obs.DeleteProbe(t.cfg.Name, name)
				level.Info(t.logger).Log("msg", "probe removed", "probe", name)
			}
		} else if sloChanged {
			obs.SLOChanged(t.cfg.Name, name, tc.SLO, tc.GoodputObjective)
		}
	}
	if sloChanged && len(t.probes) > 0 {
		level.Info(t.logger).Log("msg", "SLO changed in place", "slo", tc.SLO.String(), "goodput_objective", tc.GoodputObjective)
	}
	for name, pr := range t.pending {
		t.probes[name] = pr
		pr.start(t.ctx)
		level.Info(t.logger).Log("msg", "probe started", "probe", name, "rate", pr.cfg.Rate, "arrival", pr.cfg.Arrival, "max_concurrency", pr.cfg.MaxConcurrency)
	}
	t.pending = nil
}

// stop cancels the probes with cause, waits for them and for discovery, and
// closes idle connections. With deleteSeries the probes' series are removed
// (the target was replaced by one without them, or removed).
func (t *targetRunner) stop(cause error, keep map[string]bool) {
	t.probesMu.Lock()
	probes := maps.Clone(t.probes)
	t.probesMu.Unlock()
	if t.cancel != nil {
		t.cancel(cause)
	}
	for _, pr := range probes {
		pr.stop(cause)
	}
	t.wg.Wait()
	if keep != nil {
		for n := range probes {
			if !keep[n] {
				t.m.obs.DeleteProbe(t.cfg.Name, n)
			}
		}
	}
	t.ep.CloseIdleConnections()
}

// refreshInfo learns the model, max_model_len and server version, retrying
// with backoff until the model is known, then refreshes every 5 minutes.
func (t *targetRunner) refreshInfo(ctx context.Context) {
	backoff := time.Second
	for {
		ok := t.discover(ctx, true)
		wait := 5 * time.Minute
		if !ok {
			wait = backoff
			backoff = min(backoff*2, time.Minute)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// discover asks the server for its model and version, one attempt at a time.
// With force false it returns the cached outcome when the last attempt is
// under a second old, and, when an attempt is running and an earlier one
// failed, that failure at once (arrivals do not queue behind a hanging
// target). No lock is held during the HTTP calls.
func (t *targetRunner) discover(ctx context.Context, force bool) bool {
	t.infoMu.Lock()
	if ch := t.inflight; ch != nil {
		if !force && t.lastErr != nil {
			t.infoMu.Unlock()
			return false
		}
		t.infoMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		t.infoMu.Lock()
		defer t.infoMu.Unlock()
		return t.discovered
	}
	if !force && time.Since(t.lastTry) < time.Second {
		defer t.infoMu.Unlock()
		return t.discovered
	}
	ch := make(chan struct{})
	t.inflight = ch
	t.lastTry = time.Now()
	info := t.info
	t.infoMu.Unlock()

	newInfo, derr := t.fetchInfo(ctx)

	t.infoMu.Lock()
	defer t.infoMu.Unlock()
	defer func() { t.inflight = nil; close(ch) }()
	if derr != nil {
		if t.lastErr == nil || t.lastErr.Msg != derr.Msg {
			level.Warn(t.logger).Log("msg", "cannot learn the model from /v1/models; requests fail until it answers", "err", derr.Msg)
		}
		t.lastErr = derr
		return t.discovered
	}
	if !t.discovered || !sameInfo(newInfo, info) {
		if info.Model != "" && info.Model != newInfo.Model {
			level.Info(t.logger).Log("msg", "served model changed", "old", info.Model, "new", newInfo.Model)
		}
		maxLen := ""
		if newInfo.MaxModelLen > 0 {
			maxLen = strconv.Itoa(newInfo.MaxModelLen)
		}
		if t.cfg.Model != "" && maxLen == "" && newInfo.ServerVersion == "" {
			level.Info(t.logger).Log("msg", "using the configured model; /v1/models and /version did not answer", "model", newInfo.Model)
		} else {
			level.Info(t.logger).Log("msg", "target discovered", "model", newInfo.Model, "engine", newInfo.Engine,
				"engine_from", newInfo.EngineSource, "max_model_len", maxLen, "max_model_len_from", newInfo.MaxModelLenSource,
				"server_version", newInfo.ServerVersion)
		}
		t.m.obs.SetTargetInfo(t.cfg.Name, TargetInfo{
			ServerVersion: newInfo.ServerVersion, Model: newInfo.Model, MaxModelLen: maxLen,
			Engine: string(newInfo.Engine), ServerInstance: serverInstance(t.cfg),
		})
	}
	t.info = newInfo
	t.lastErr = nil
	t.discovered = true
	return true
}

// sameInfo reports whether two discoveries learned the same figures.
func sameInfo(a, b endpoint.Info) bool {
	return a.Model == b.Model && a.MaxModelLen == b.MaxModelLen && a.ServerVersion == b.ServerVersion &&
		a.Root == b.Root && a.Listed == b.Listed && slices.Equal(a.Models, b.Models) &&
		a.Engine == b.Engine && a.MaxModelLenSource == b.MaxModelLenSource && maps.Equal(a.EngineConfig, b.EngineConfig)
}

// fetchInfo asks the endpoint. A configured model is used whatever
// /v1/models says (it only gives max_model_len when it lists the model), so
// only a target without one fails discovery.
func (t *targetRunner) fetchInfo(ctx context.Context) (endpoint.Info, *endpoint.Error) {
	info, err := t.ep.Discover(ctx)
	if err == nil || t.cfg.Model != "" {
		return info, nil
	}
	var ee *endpoint.Error
	if !errors.As(err, &ee) {
		ee = &endpoint.Error{Class: prober.ClassConnect, Msg: t.ep.Redact(err.Error())}
	}
	return info, ee
}

// maxModelLen is the served model's max_model_len from discovery, 0 when
// unknown.
func (t *targetRunner) maxModelLen() int {
	t.infoMu.Lock()
	defer t.infoMu.Unlock()
	return t.info.MaxModelLen
}

// model returns the model to request, discovering it when needed; on
// failure it returns the classified discovery error.
func (t *targetRunner) model(ctx context.Context) (string, *endpoint.Error) {
	if t.cfg.Model != "" {
		return t.cfg.Model, nil
	}
	t.infoMu.Lock()
	m, done := t.info.Model, t.discovered
	t.infoMu.Unlock()
	if done {
		return m, nil
	}
	ok := t.discover(ctx, false)
	t.infoMu.Lock()
	defer t.infoMu.Unlock()
	if ok {
		return t.info.Model, nil
	}
	if ctx.Err() != nil {
		return "", &endpoint.Error{Class: prober.ClassCanceled, Msg: "canceled while learning the model", Err: ctx.Err()}
	}
	if t.lastErr != nil {
		return "", t.lastErr
	}
	return "", &endpoint.Error{Class: prober.ClassConnect, Msg: "model not known yet"}
}

func (t *targetRunner) status() TargetStatus {
	t.infoMu.Lock()
	info := t.info
	t.infoMu.Unlock()
	s := t.slo.Load()
	st := TargetStatus{
		Name: t.cfg.Name, BaseURL: t.cfg.BaseURL, API: t.cfg.API, Model: info.Model,
		ServerVersion: info.ServerVersion, SLO: s.SLO.String(), Note: t.note,
	}
	t.probesMu.Lock()
	for _, pc := range t.probeCfgs {
		if pr, ok := t.probes[pc.Name]; ok {
			st.Probes = append(st.Probes, pr.status())
		}
	}
	t.probesMu.Unlock()
	return st
}
