package manager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/config"
	"github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// targetRunner owns one target: its client, what was learned from the
// server, and its probes.
type targetRunner struct {
	m      *Manager
	cfg    config.TargetConfig
	fp     string
	note   string
	logger log.Logger
	hc     *http.Client // shared by the target's clients (keeps connections)

	clientMu  sync.Mutex
	client    *client.Client // for clientModel
	clientMdl string
	tok       workload.Tokenizer
	tokFor    string

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	infoMu     sync.Mutex
	info       serverInfo
	lastTry    time.Time
	lastErr    *discoverError
	discovered bool

	probesMu  sync.Mutex
	probes    map[string]*probeRunner
	probeCfgs []config.ProbeConfig    // in config order, for the status page
	pending   map[string]*probeRunner // built by prepare, started by commit
}

// targetFingerprint covers every target setting except its probes, so that a
// probe-only change keeps the target (and its learned model) running. The API
// key enters as a hash.
func targetFingerprint(t config.TargetConfig) string {
	keyHash := sha256.Sum256([]byte(t.APIKey()))
	v := struct {
		Name, BaseURL, API, Model, Metrics, Key string
		SLO                                     string
		Timeout, TTFT, Stall                    time.Duration
		MaxBody                                 int64
	}{t.Name, t.BaseURL, t.API, t.Model, t.MetricsURL(), hex.EncodeToString(keyHash[:]), t.SLO.String(),
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
		hc:     &http.Client{Transport: client.NewTransport()},
		probes: map[string]*probeRunner{},
	}
	// Build the client now so that bad settings fail the reload, not the
	// first probe.
	if _, err := t.clientFor(tc.Model); err != nil {
		return nil, err
	}
	return t, nil
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
// /tokenize, or, when the server has none, a calibration from the
// usage.prompt_tokens of two requests. It is cached per model.
func (t *targetRunner) tokenizer(ctx context.Context, model string, c *client.Client) (workload.Tokenizer, *discoverError) {
	t.clientMu.Lock()
	defer t.clientMu.Unlock()
	if t.tok != nil && t.tokFor == model {
		return t.tok, nil
	}
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
	switch {
	case err == nil:
		t.tok, t.tokFor = st, model
		level.Info(t.logger).Log("msg", "prompts are sized with the server's /tokenize", "model", model)
		return st, nil
	case !errors.Is(err, workload.ErrTokenizeUnsupported):
		return nil, &discoverError{classifyErr(ctx, err), "POST /tokenize: " + shortErr(err)}
	}
	// No /tokenize: calibrate from usage.prompt_tokens.
	var obs []workload.Observation
	for i, words := range []int{32, workload.DefaultCalibrationWords} {
		text := workload.CalibrationText(words)
		rec := &prober.Record{RequestID: fmt.Sprintf("llmprobe-%s-calibrate-%d", t.m.runID, i), Scheduled: time.Now()}
		req := client.Request{ID: rec.RequestID, MaxTokens: 1}
		if t.cfg.API == config.APIChat {
			req.Messages = []client.Message{{Role: "user", Content: text}}
		} else {
			req.Prompt = text
		}
		c.Do(ctx, req, rec)
		if !rec.OK() {
			return nil, &discoverError{rec.Error, "calibration request: " + rec.ErrorMessage}
		}
		if rec.TokensCounted || rec.PromptTokens <= 0 {
			return nil, &discoverError{prober.ClassInvalidResponse, "server has no /tokenize and reports no usage.prompt_tokens: cannot size prompts"}
		}
		obs = append(obs, workload.Observation{Text: text, PromptTokens: rec.PromptTokens})
	}
	cal, err := workload.Calibrate(obs...)
	if err != nil {
		return nil, &discoverError{prober.ClassInvalidResponse, "calibration: " + err.Error()}
	}
	level.Info(t.logger).Log("msg", "server has no /tokenize: prompts are sized by calibration from usage.prompt_tokens", "model", model)
	t.tok, t.tokFor = cal, model
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

func (t *targetRunner) commit(parent context.Context, tc config.TargetConfig) {
	t.probesMu.Lock()
	defer t.probesMu.Unlock()
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
				t.m.opts.Metrics.DeleteProbe(t.cfg.Name, name)
				level.Info(t.logger).Log("msg", "probe removed", "probe", name)
			}
		}
	}
	for name, pr := range t.pending {
		t.probes[name] = pr
		pr.start(t.ctx)
		level.Info(t.logger).Log("msg", "probe started", "probe", name, "rate", pr.cfg.Rate, "arrival", pr.cfg.Arrival, "max_concurrency", pr.cfg.MaxConcurrency)
	}
	t.pending = nil
}

func (t *targetRunner) stop(cause error) {
	t.probesMu.Lock()
	probes := make([]*probeRunner, 0, len(t.probes))
	for _, pr := range t.probes {
		probes = append(probes, pr)
	}
	t.probesMu.Unlock()
	if t.cancel != nil {
		t.cancel(cause)
	}
	for _, pr := range probes {
		pr.stop(cause)
	}
	t.wg.Wait()
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

// discover asks the server for its model and version. With force false it
// returns the cached outcome when the last attempt is under a second old, so
// a down endpoint is not asked more often than that.
func (t *targetRunner) discover(ctx context.Context, force bool) bool {
	t.infoMu.Lock()
	defer t.infoMu.Unlock()
	if !force && time.Since(t.lastTry) < time.Second {
		return t.discovered
	}
	t.lastTry = time.Now()
	hc := t.m.opts.HTTPClient
	key := t.cfg.APIKey()
	info := t.info
	if t.cfg.Model != "" {
		info.Model = t.cfg.Model
		info.MaxModelLen = maxModelLenOf(ctx, hc, t.cfg.BaseURL, key, t.cfg.Model)
	} else {
		model, maxLen, err := discoverModel(ctx, hc, t.cfg.BaseURL, key)
		if err != nil {
			var de *discoverError
			if e, ok := err.(*discoverError); ok {
				de = e
			} else {
				de = &discoverError{prober.ClassConnect, err.Error()}
			}
			if t.lastErr == nil || t.lastErr.msg != de.msg {
				level.Warn(t.logger).Log("msg", "cannot learn the model from /v1/models; requests fail until it answers", "err", de.msg)
			}
			t.lastErr = de
			return t.discovered
		}
		if info.Model != "" && info.Model != model {
			level.Info(t.logger).Log("msg", "served model changed", "old", info.Model, "new", model)
		}
		info.Model, info.MaxModelLen = model, maxLen
	}
	info.Version = discoverVersion(ctx, hc, t.cfg.BaseURL, key)
	if !t.discovered || info != t.info {
		level.Info(t.logger).Log("msg", "target discovered", "model", info.Model, "max_model_len", info.MaxModelLen, "server_version", info.Version)
		t.m.opts.Metrics.SetTargetInfo(t.cfg.Name, info.Version, info.Model, info.MaxModelLen)
	}
	t.info = info
	t.lastErr = nil
	t.discovered = true
	return true
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
	if t.discover(ctx, false) {
		t.infoMu.Lock()
		defer t.infoMu.Unlock()
		return t.info.Model, nil
	}
	t.infoMu.Lock()
	defer t.infoMu.Unlock()
	if t.lastErr != nil {
		return "", t.lastErr
	}
	return "", &discoverError{prober.ClassConnect, "model not known yet"}
}

func (t *targetRunner) status() web.TargetStatus {
	t.infoMu.Lock()
	info := t.info
	t.infoMu.Unlock()
	st := web.TargetStatus{
		Name: t.cfg.Name, BaseURL: t.cfg.BaseURL, API: t.cfg.API, Model: info.Model,
		ServerVersion: info.Version, SLO: t.cfg.SLO.String(), Note: t.note,
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
