package manager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/config"
	"github.com/llmprobe/llmprobe/internal/fingerprint"
	"github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// sloSettings are the target settings that a reload swaps in place, without
// restarting the probes.
type sloSettings struct {
	SLO       slo.SLO
	Objective float64
}

// targetRunner owns one target: its clients, what was learned from the
// server, and its probes.
type targetRunner struct {
	m      *Manager
	cfg    config.TargetConfig // immutable after creation (probes and SLO live elsewhere)
	fp     string
	note   string
	logger log.Logger
	hc     *http.Client // shared by the target's clients, discovery and tokenizer
	slo    atomic.Pointer[sloSettings]

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	// infoMu guards what discovery learned; it is never held during I/O,
	// so the landing page never waits for a hanging target.
	infoMu     sync.Mutex
	info       serverInfo
	lastTry    time.Time
	lastErr    *discoverError
	discovered bool
	inflight   chan struct{} // closed when the running discovery ends; nil when none runs

	clientMu  sync.Mutex
	client    *client.Client
	clientMdl string

	// tokMu serialises tokenizer set-up (one /tokenize probe or calibration
	// at a time); tokErr caches a failure until tokRetry.
	tokMu    sync.Mutex
	tok      workload.Tokenizer
	tokFor   string
	tokErr   *discoverError
	tokRetry time.Time
	tokWait  time.Duration

	probesMu  sync.Mutex
	probes    map[string]*probeRunner
	probeCfgs []config.ProbeConfig    // in config order, for the status page
	pending   map[string]*probeRunner // built by prepare, started by commit
}

// targetFingerprint covers every target setting that needs new clients or a
// new discovery: not the probes (diffed one by one) and not the SLO and
// goodput objective (swapped in place). The API key enters as a hash.
func targetFingerprint(t config.TargetConfig) string {
	keyHash := sha256.Sum256([]byte(t.APIKey()))
	v := struct {
		Name, BaseURL, API, Model, Metrics, Key string
		Timeout, TTFT, Stall                    time.Duration
		MaxBody                                 int64
	}{t.Name, t.BaseURL, t.API, t.Model, t.MetricsURL(), hex.EncodeToString(keyHash[:]),
		t.Timeout, t.TTFTTimeout, t.StallTimeout, int64(t.MaxBodyBytes)}
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func newTargetRunner(m *Manager, tc config.TargetConfig) (*targetRunner, error) {
	t := &targetRunner{
		m:      m,
		cfg:    tc,
		fp:     targetFingerprint(tc),
		logger: log.With(m.logger, "target", tc.Name),
		hc:     &http.Client{Transport: client.NewTransport(), CheckRedirect: client.NoRedirects},
		probes: map[string]*probeRunner{},
	}
	t.slo.Store(&sloSettings{SLO: tc.SLO, Objective: tc.GoodputObjective})
	// Build the client now so that bad settings fail the reload, not the
	// first probe.
	if _, err := t.clientFor(tc.Model); err != nil {
		return nil, err
	}
	return t, nil
}

// redact removes the API key, and anything else credential-shaped, from a
// message that may echo request data.
func (t *targetRunner) redact(msg string) string {
	return fingerprint.RedactSecrets(msg, string(t.cfg.APIKey()))
}

// clientFor returns the streaming client for model, building a new one when
// the model changed (the HTTP connections are shared).
func (t *targetRunner) clientFor(model string) (*client.Client, error) {
	t.clientMu.Lock()
	defer t.clientMu.Unlock()
	if t.client != nil && t.clientMdl == model {
		return t.client, nil
	}
	c, err := client.New(client.Options{
		BaseURL:      t.cfg.BaseURL,
		API:          t.cfg.API,
		Model:        model,
		APIKey:       t.cfg.APIKey(),
		Timeout:      t.cfg.Timeout,
		TTFTTimeout:  t.cfg.TTFTTimeout,
		StallTimeout: t.cfg.StallTimeout,
		MaxBodyBytes: int64(t.cfg.MaxBodyBytes),
		HTTPClient:   t.hc,
		Trace:        true,
	})
	if err != nil {
		return nil, err
	}
	t.client, t.clientMdl = c, model
	return c, nil
}

// tokenizer returns the prompt-sizing tokenizer for model: the server's
// /tokenize, or, when the server has none (404/405, or a 4xx or an
// unparsable answer from a /tokenize that is not vLLM's), a calibration from
// the usage.prompt_tokens of two requests. A success is cached per model; a
// failure is cached with a growing backoff (1 s to 1 min), so a broken
// endpoint is not asked on every arrival.
func (t *targetRunner) tokenizer(ctx context.Context, model string, c *client.Client) (workload.Tokenizer, *discoverError) {
	t.tokMu.Lock()
	defer t.tokMu.Unlock()
	if t.tok != nil && t.tokFor == model {
		return t.tok, nil
	}
	if t.tokErr != nil && time.Now().Before(t.tokRetry) {
		return nil, t.tokErr
	}
	tok, derr := t.buildTokenizer(ctx, model, c)
	if derr != nil {
		if ctx.Err() != nil {
			return nil, &discoverError{prober.ClassCanceled, derr.msg}
		}
		derr.msg = t.redact(derr.msg)
		t.tokWait = min(max(2*t.tokWait, time.Second), time.Minute)
		t.tokErr, t.tokRetry = derr, time.Now().Add(t.tokWait)
		level.Warn(t.logger).Log("msg", "cannot size prompts; requests fail until this works", "err", derr.msg, "retry_in", t.tokWait)
		return nil, derr
	}
	t.tok, t.tokFor, t.tokErr, t.tokWait = tok, model, nil, 0
	return tok, nil
}

func (t *targetRunner) buildTokenizer(ctx context.Context, model string, c *client.Client) (workload.Tokenizer, *discoverError) {
	hdr := http.Header{}
	if k := t.cfg.APIKey(); k != "" {
		hdr.Set("Authorization", "Bearer "+string(k))
	}
	st, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{
		BaseURL: t.cfg.BaseURL, Model: model, Chat: t.cfg.API == config.APIChat,
		Client: &http.Client{Transport: t.hc.Transport, Timeout: 30 * time.Second}, Header: hdr,
	})
	if err != nil {
		return nil, &discoverError{prober.ClassInvalidResponse, err.Error()}
	}
	_, err = st.Count(ctx, "hello")
	var se *workload.StatusError
	switch {
	case err == nil:
		level.Info(t.logger).Log("msg", "prompts are sized with the server's /tokenize", "model", model)
		return st, nil
	case errors.As(err, &se):
		switch {
		case se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden ||
			se.Code == http.StatusTooManyRequests || se.Code >= 500:
			return nil, &discoverError{prober.ClassForStatus(se.Code), "POST /tokenize: " + shortErr(err)}
		}
		// Another 4xx: a /tokenize that is not vLLM's; calibrate instead.
		level.Info(t.logger).Log("msg", "the server's /tokenize is not vLLM's; sizing prompts by calibration", "err", t.redact(shortErr(err)))
	case errors.Is(err, workload.ErrTokenizeUnsupported):
	default:
		var ue *url.Error
		if errors.As(err, &ue) { // transport failure
			return nil, &discoverError{classifyErr(ctx, err), "POST /tokenize: " + shortErr(err)}
		}
		// A 200 that is not vLLM's shape: calibrate.
		level.Info(t.logger).Log("msg", "the server's /tokenize answer is not vLLM's; sizing prompts by calibration", "err", t.redact(shortErr(err)))
	}
	// No usable /tokenize: calibrate from usage.prompt_tokens.
	var obs []workload.Observation
	for i, words := range []int{32, workload.DefaultCalibrationWords} {
		text := workload.CalibrationText(words)
		rec := &prober.Record{RequestID: fmt.Sprintf("llmprobe-%s-calibrate-%d", t.m.runID, t.m.seq.Add(1)), Scheduled: time.Now()}
		req := client.Request{ID: rec.RequestID, MaxTokens: 1}
		if t.cfg.API == config.APIChat {
			req.Messages = []client.Message{{Role: "user", Content: text}}
		} else {
			req.Prompt = text
		}
		c.Do(ctx, req, rec)
		if !rec.OK() {
			return nil, &discoverError{rec.Error, fmt.Sprintf("calibration request %d: %s", i+1, rec.ErrorMessage)}
		}
		if rec.TokensCounted || rec.PromptTokens <= 0 {
			return nil, &discoverError{prober.ClassInvalidResponse, "server has no usable /tokenize and reports no usage.prompt_tokens: cannot size prompts"}
		}
		obs = append(obs, workload.Observation{Text: text, PromptTokens: rec.PromptTokens})
	}
	cal, err := workload.Calibrate(obs...)
	if err != nil {
		return nil, &discoverError{prober.ClassInvalidResponse, "calibration: " + err.Error()}
	}
	level.Info(t.logger).Log("msg", "prompts are sized by calibration from usage.prompt_tokens", "model", model)
	return cal, nil
}

// prepare builds the probes of tc that are new or changed, without starting
// them; commit starts them and stops the ones that went away.
func (t *targetRunner) prepare(tc config.TargetConfig) error {
	t.probesMu.Lock()
	defer t.probesMu.Unlock()
	t.pending = map[string]*probeRunner{}
	for _, pc := range tc.Probes {
		fp := probeFingerprint(pc)
		if old, ok := t.probes[pc.Name]; ok && old.fp == fp {
			continue
		}
		pr, err := newProbeRunner(t, pc, fp)
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
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.refreshInfo(t.ctx)
	}()
}

// commit applies tc to a started runner: the SLO and objective in place,
// then the probe diff prepared by prepare.
func (t *targetRunner) commit(tc config.TargetConfig) {
	t.probesMu.Lock()
	defer t.probesMu.Unlock()
	met := t.m.opts.Metrics
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
				met.DeleteProbe(t.cfg.Name, name)
				level.Info(t.logger).Log("msg", "probe removed", "probe", name)
			}
		} else if sloChanged {
			met.SetSLO(t.cfg.Name, name, tc.SLO.TTFT, tc.SLO.TPOT, tc.SLO.E2EL)
			met.SetGoodputObjective(t.cfg.Name, name, tc.GoodputObjective)
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
	probes := make(map[string]*probeRunner, len(t.probes))
	for n, pr := range t.probes {
		probes[n] = pr
	}
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
				t.m.opts.Metrics.DeleteProbe(t.cfg.Name, n)
			}
		}
	}
	t.hc.CloseIdleConnections()
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

	newInfo, derr := t.fetchInfo(ctx, info)

	t.infoMu.Lock()
	defer t.infoMu.Unlock()
	defer func() { t.inflight = nil; close(ch) }()
	if derr != nil {
		derr.msg = t.redact(derr.msg)
		if t.lastErr == nil || t.lastErr.msg != derr.msg {
			level.Warn(t.logger).Log("msg", "cannot learn the model from /v1/models; requests fail until it answers", "err", derr.msg)
		}
		t.lastErr = derr
		return t.discovered
	}
	if !t.discovered || newInfo != t.info {
		if t.info.Model != "" && t.info.Model != newInfo.Model {
			level.Info(t.logger).Log("msg", "served model changed", "old", t.info.Model, "new", newInfo.Model)
		}
		if t.cfg.Model != "" && newInfo.MaxModelLen == "" && newInfo.Version == "" {
			level.Info(t.logger).Log("msg", "using the configured model; /v1/models and /version did not answer", "model", newInfo.Model)
		} else {
			level.Info(t.logger).Log("msg", "target discovered", "model", newInfo.Model, "max_model_len", newInfo.MaxModelLen, "server_version", newInfo.Version)
		}
		t.m.opts.Metrics.SetTargetInfo(t.cfg.Name, newInfo.Version, newInfo.Model, newInfo.MaxModelLen)
	}
	t.info = newInfo
	t.lastErr = nil
	t.discovered = true
	return true
}

// fetchInfo does discovery's HTTP calls.
func (t *targetRunner) fetchInfo(ctx context.Context, info serverInfo) (serverInfo, *discoverError) {
	hc := &http.Client{Transport: t.hc.Transport, Timeout: 10 * time.Second}
	key := t.cfg.APIKey()
	if t.cfg.Model != "" {
		info.Model = t.cfg.Model
		// The configured model is used whatever /v1/models says; it only
		// gives max_model_len when it lists the model.
		_, info.MaxModelLen, _ = listModel(ctx, hc, t.cfg.BaseURL, key, t.cfg.Model)
	} else {
		model, maxLen, err := listModel(ctx, hc, t.cfg.BaseURL, key, "")
		if err != nil {
			var de *discoverError
			if !errors.As(err, &de) {
				de = &discoverError{prober.ClassConnect, err.Error()}
			}
			return info, de
		}
		info.Model, info.MaxModelLen = model, maxLen
	}
	info.Version = discoverVersion(ctx, hc, t.cfg.BaseURL, key)
	return info, nil
}

// maxModelLen is the served model's max_model_len, 0 when unknown.
func (t *targetRunner) maxModelLen() int {
	t.infoMu.Lock()
	defer t.infoMu.Unlock()
	n, _ := strconv.Atoi(t.info.MaxModelLen)
	return n
}

// model returns the model to request, discovering it when needed; on
// failure it returns the classified discovery error.
func (t *targetRunner) model(ctx context.Context) (string, *discoverError) {
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
		return "", &discoverError{prober.ClassCanceled, "canceled while learning the model"}
	}
	if t.lastErr != nil {
		return "", t.lastErr
	}
	return "", &discoverError{prober.ClassConnect, "model not known yet"}
}

func (t *targetRunner) status() web.TargetStatus {
	t.infoMu.Lock()
	info := t.info
	t.infoMu.Unlock()
	s := t.slo.Load()
	st := web.TargetStatus{
		Name: t.cfg.Name, BaseURL: t.cfg.BaseURL, API: t.cfg.API, Model: info.Model,
		ServerVersion: info.Version, SLO: s.SLO.String(), Note: t.note,
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
