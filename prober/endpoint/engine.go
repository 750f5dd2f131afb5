package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// Ways an engine became known (Info.EngineSource).
const (
	EngineFromConfig  = "config"
	EngineFromMetrics = "/metrics names"
	EngineFromModels  = "/v1/models owned_by"
)

// Engine returns the endpoint's engine adapter: the configured one
// (Options.Engine), else the one detected so far, else the generic
// adapter (engine.Unknown).
func (e *Endpoint) Engine() *engine.Engine {
	if e.o.Engine != engine.Auto {
		return engine.Get(e.o.Engine)
	}
	e.engMu.Lock()
	defer e.engMu.Unlock()
	if e.detected != nil {
		return e.detected
	}
	return engine.Get(engine.Unknown)
}

// Metrics reads the server's Prometheus endpoint (Options.MetricsURL, by
// default GET /metrics) with the endpoint's timeouts; the API key goes only
// to the server's own host (a metrics_url elsewhere — an exporter, a
// gateway — gets no credentials). The error is redacted.
func (e *Endpoint) Metrics(ctx context.Context) (*scrape.Snapshot, error) {
	u := e.o.MetricsURL
	switch u {
	case NoMetrics:
		return nil, &Error{Class: prober.ClassInvalidResponse, Msg: "the server's /metrics is not read (metrics_url: none)"}
	case "":
		u = e.base + "/metrics"
	}
	hc := bounded.NewClient(e.info, 0)
	opts := []scrape.Option{scrape.WithTimeout(e.o.DiscoveryTimeout), scrape.WithUserAgent("llmprobe")}
	if sameHost(u, e.base) {
		opts = append(opts, scrape.WithBearerToken(e.o.APIKey))
	}
	snap, err := scrape.Fetch(ctx, hc, u, opts...)
	if err != nil {
		return nil, &Error{Class: prober.ClassInvalidResponse, Msg: e.Redact(e.short(err.Error()))}
	}
	return snap, nil
}

// detect finds the engine of an endpoint without a configured one: from the
// names on /metrics (snap, fetched when nil), else the owned_by of its
// /v1/models entry, else the first engine whose detection probe answers in
// its shape (engine.DetectionOrder, Engine.Detection: evidence only that
// engine gives). A known result is kept for the
// endpoint's life; Unknown is tried again next time. It returns the engine,
// how it was found ("" when not), and the /metrics snapshot if one was read.
func (e *Endpoint) detect(ctx context.Context, snap *scrape.Snapshot, ownedBy string) (*engine.Engine, string, *scrape.Snapshot) {
	if e.o.Engine != engine.Auto {
		return engine.Get(e.o.Engine), EngineFromConfig, snap
	}
	e.engMu.Lock()
	eng, how := e.detected, e.detectedBy
	e.engMu.Unlock()
	if eng != nil {
		return eng, how, snap
	}
	if snap == nil {
		snap, _ = e.Metrics(ctx)
	}
	eng, how = nil, ""
	if m, ok := engine.FromMetrics(snap); ok {
		eng, how = m, EngineFromMetrics
	} else if o, ok := engine.FromOwner(ownedBy); ok {
		eng, how = o, EngineFromModels
	} else {
		for _, n := range engine.DetectionOrder {
			cand := engine.Get(n)
			ie, ok := cand.Detection()
			if !ok {
				continue
			}
			body, err := e.getBody(ctx, ie.Path)
			if err != nil {
				if unreachable(err) {
					break // the server stopped answering: no more probes
				}
				continue
			}
			if _, ok := ie.Parse(body); ok {
				eng, how = cand, ie.Path
				break
			}
		}
	}
	if eng == nil || ctx.Err() != nil {
		return engine.Get(engine.Unknown), "", snap
	}
	e.engMu.Lock()
	e.detected, e.detectedBy = eng, how
	e.engMu.Unlock()
	level.Info(e.logger).Log("msg", "server engine detected", "engine", eng.Name(), "from", how)
	return eng, how, snap
}

// engineInfo fills what the engine's own endpoints tell into info: the
// server version and context length (kept from /v1/models when it gave
// max_model_len), the engine configuration; text the server chose (the
// version, config values) is redacted like every other server answer.
// Failures leave fields unknown.
func (e *Endpoint) engineInfo(ctx context.Context, info *Info, eng *engine.Engine, snap *scrape.Snapshot) {
	info.Engine = eng.Name()
	addConfig := func(m map[string]string) {
		for k, v := range m {
			if info.EngineConfig == nil {
				info.EngineConfig = map[string]string{}
			}
			info.EngineConfig[k] = e.Redact(v)
		}
	}
	// read takes the context length and configuration from an engine
	// endpoint's answer (body, or the error fetching it), noting under
	// what ("GET /path") why not; ok when it parsed.
	read := func(what string, body []byte, err error, parse func([]byte) (engine.Fingerprint, bool)) (engine.Fingerprint, bool) {
		if err != nil {
			info.noteEngine(what, err)
			return engine.Fingerprint{}, false
		}
		f, parsed := parse(body)
		if !parsed {
			info.noteEngine(what, &Error{Class: prober.ClassInvalidResponse, Msg: what + ": not in " + string(eng.Name()) + "'s shape"})
			return f, false
		}
		if info.MaxModelLen == 0 && f.ContextLength > 0 {
			info.MaxModelLen, info.MaxModelLenSource = f.ContextLength, f.ContextSource
		}
		addConfig(f.Config)
		return f, true
	}
	if ie, ok := eng.Info(); ok {
		body, err := e.getBody(ctx, ie.Path)
		if f, ok := read("GET "+ie.Path, body, err, ie.Parse); ok {
			// The version goes into a metric label, logs and the
			// landing page: a server that echoes the key there must
			// not publish it.
			info.ServerVersion = e.Redact(f.Version)
		}
	}
	if eng.HasConfigLabels() {
		if snap == nil {
			snap, _ = e.Metrics(ctx)
		}
		addConfig(eng.ConfigLabels(snap))
	}
	if mi, ok := eng.ModelInfo(); ok && info.Model != "" {
		body, err := e.postBody(ctx, mi.Path, map[string]string{"model": info.Model})
		read("POST "+mi.Path, body, err, mi.Parse)
	}
	if eng.Name() == engine.Ollama && info.Model != "" {
		e.ollamaLoadedContext(ctx, info)
	}
}

// ollamaLoadedContext reads the context Ollama's loaded model runs with
// from GET /api/ps: the served context, which outranks /api/show's num_ctx
// (Ollama clamps it to the trained one) and is the only source of it when
// the Modelfile sets none. A model that is not loaded now (before its
// first request, or after keep_alive) tells nothing, and neither does a
// failed call: the context stays as /api/show gave it.
func (e *Endpoint) ollamaLoadedContext(ctx context.Context, info *Info) {
	body, err := e.getBody(ctx, engine.OllamaPsPath)
	if err != nil {
		return
	}
	if n, loaded, _ := engine.ParseOllamaPs(body, info.Model); loaded {
		info.MaxModelLen, info.MaxModelLenSource = n, engine.OllamaPsContextSource
	}
}

// maxEngineNotes bounds Info.EngineNotes (one per engine endpoint read;
// no engine reads more than three).
const maxEngineNotes = 8

// noteEngine records why the engine endpoint call (e.g. "POST /api/show")
// told nothing: the classified error's text (already redacted) and its
// class.
// Nothing is noted for an unknown engine: its GET /version is a guess
// (vLLM's), whose absence says nothing.
func (info *Info) noteEngine(call string, err error) {
	if info.Engine == engine.Unknown || len(info.EngineNotes) >= maxEngineNotes {
		return
	}
	msg, class := err.Error(), prober.ClassInvalidResponse
	var ee *Error
	if errors.As(err, &ee) {
		class = ee.Class
	}
	if !strings.HasPrefix(msg, call) {
		msg = call + ": " + msg
	}
	info.EngineNotes = append(info.EngineNotes, msg+" ("+string(class)+")")
}

// getBody GETs path and returns a 200 answer's body (bounded); errors are
// *Error.
func (e *Endpoint) getBody(ctx context.Context, path string) ([]byte, error) {
	var raw json.RawMessage
	if err := e.getJSON(ctx, path, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// postBody POSTs body as JSON to path and returns a 200 answer's body;
// errors are *Error, as getJSON's.
func (e *Endpoint) postBody(ctx context.Context, path string, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return e.call(ctx, http.MethodPost, path, b)
}

// sameHost reports whether URLs a and b name the same scheme, host and port.
func sameHost(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	return ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}
