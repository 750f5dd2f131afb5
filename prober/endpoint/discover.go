package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
)

// Info is what discovery learned about an endpoint. Zero values mean "not
// known".
type Info struct {
	// Models are the ids GET /v1/models listed, in its order (nil when it
	// did not answer).
	Models []string
	// Model is the model to request: the configured one, else the first
	// listed.
	Model string
	// Listed reports whether Model is among Models.
	Listed bool
	// Root is vLLM's "root" of Model (the path or name it was loaded from).
	Root string
	// MaxModelLen is vLLM's max_model_len of Model (an integer or a string
	// holding one); 0 when absent or not a positive integer.
	MaxModelLen int
	// MaxModelLenSource names where MaxModelLen was read: "/v1/models
	// max_model_len", or the engine's own field (e.g. "/props
	// default_generation_settings.n_ctx" for llama.cpp, "/info
	// max_total_tokens" for TGI); "" when unknown.
	MaxModelLenSource string
	// ServerVersion is the server's version: vLLM's GET /version, or the
	// engine's own (llama.cpp build_info, TGI /info version, SGLang
	// /get_server_info version, Ollama /api/version); "" when unknown.
	ServerVersion string
	// Engine is the server engine (configured or detected;
	// engine.Unknown when neither).
	Engine engine.Name
	// EngineSource says how Engine became known: EngineFromConfig,
	// EngineFromMetrics, EngineFromModels, or the info endpoint that
	// answered in the engine's shape (e.g. "/props"); "" when unknown.
	EngineSource string
	// EngineConfig holds engine settings read from the server (vLLM: the
	// labels of vllm:cache_config_info; llama.cpp: n_ctx, total_slots; TGI:
	// dtype and batching limits; SGLang: parallelism and cache settings;
	// Ollama: num_ctx, family, quantization); nil when none.
	EngineConfig map[string]string
	// EngineNotes says, per engine endpoint that told nothing, why: the
	// call, the classified error or "not in <engine>'s shape", e.g.
	// "POST /api/show: HTTP 404 Not Found (http_4xx)" (at most
	// maxEngineNotes, redacted); nil when every one answered.
	EngineNotes []string
	// Parent is the base model of Model when Model is a LoRA adapter
	// (vLLM lists adapters with a "parent"); "" for a base model.
	Parent string
}

// Discover reads GET /v1/models, finds the server engine (configured, or
// detected from /metrics, the owned_by of /v1/models or the shape of an
// engine's info endpoint) and reads what that engine's own endpoints tell
// (vLLM: GET /version and vllm:cache_config_info; SGLang: /get_server_info;
// TGI: /info; llama.cpp: /props; Ollama: /api/version and /api/show).
// max_model_len comes from /v1/models when it gives one, else from the
// engine's own field; absent stays 0. Listed ids holding the API key are
// skipped, and root and version are redacted. It returns what it learned and, when
// something is wrong, an *Error classified like a failed request:
//
//   - /v1/models fails (transport, non-200 status, redirect, bad JSON): the
//     error of that call; Info.Model is the configured model, if any, and
//     the engine's endpoints are read only when one is configured;
//   - no model is configured and none is listed: ErrNoModel;
//   - the configured model is not in a non-empty list: ErrModelNotListed,
//     with Info filled in (Model is the configured model).
//
// A caller that has a configured model may go on with Info after an error
// (the daemon does; a sweep refuses). An engine endpoint failing is not an
// error: its fields stay unknown.
func (e *Endpoint) Discover(ctx context.Context) (Info, error) {
	info := Info{Model: e.o.Model}
	var list struct {
		Data []struct {
			ID          string          `json:"id"`
			Root        *string         `json:"root"`
			MaxModelLen json.RawMessage `json:"max_model_len"`
			OwnedBy     string          `json:"owned_by"`
			Parent      *string         `json:"parent"`
		} `json:"data"`
	}
	fillEngine := func(ownedBy string) {
		eng, how, snap := e.detect(ctx, nil, ownedBy)
		info.EngineSource = how
		e.engineInfo(ctx, &info, eng, snap)
	}
	if err := e.getJSON(ctx, "/v1/models", &list); err != nil {
		info.Engine = engine.Unknown
		switch {
		case e.o.Model == "":
		case unreachable(err):
			// One more call at most against a server that does not
			// answer: its version, as vLLM serves it.
			info.Engine = e.Engine().Name()
			info.ServerVersion = e.version(ctx)
		default:
			fillEngine("")
		}
		return info, err
	}
	info.Models = make([]string, 0, len(list.Data))
	found := -1
	for i, d := range list.Data {
		if d.ID == "" || e.echoesKey(d.ID) {
			// An id holding the API key would carry it into the model
			// label, logs and requests: such an id is not a model.
			continue
		}
		info.Models = append(info.Models, d.ID)
		if found < 0 && (e.o.Model == "" || d.ID == e.o.Model) {
			found = i
		}
	}
	if e.o.Model == "" && found >= 0 && list.Data[found].Parent != nil && *list.Data[found].Parent != "" {
		// No model configured: the first base model, not a LoRA adapter.
		for i, d := range list.Data {
			if d.ID != "" && !e.echoesKey(d.ID) && (d.Parent == nil || *d.Parent == "") {
				found = i
				break
			}
		}
	}
	var err error
	ownedBy := ""
	switch {
	case found >= 0:
		d := list.Data[found]
		info.Model, info.Listed, ownedBy = d.ID, true, d.OwnedBy
		if d.Root != nil {
			info.Root = e.Redact(strings.TrimSpace(*d.Root))
		}
		if info.MaxModelLen = engine.PositiveInt(d.MaxModelLen); info.MaxModelLen > 0 {
			info.MaxModelLenSource = "/v1/models max_model_len"
		}
		if d.Parent != nil && *d.Parent != "" && !e.echoesKey(*d.Parent) {
			info.Parent = *d.Parent
			if info.MaxModelLen == 0 {
				// vLLM lists an adapter without max_model_len: its base
				// model's applies.
				for _, b := range list.Data {
					if b.ID == *d.Parent {
						if info.MaxModelLen = engine.PositiveInt(b.MaxModelLen); info.MaxModelLen > 0 {
							info.MaxModelLenSource = "/v1/models max_model_len"
						}
						break
					}
				}
			}
		}
	case e.o.Model == "":
		info.Engine = engine.Unknown
		return info, &Error{Class: prober.ClassInvalidResponse, Msg: "GET /v1/models: no model listed", Err: ErrNoModel}
	case len(info.Models) > 0:
		if nl := e.NotListed(e.o.Model, info.Models); nl != nil { // listed.go
			err = nl
		}
	}
	fillEngine(ownedBy)
	return info, err
}

// unreachable reports whether err says the server did not answer at all
// (connect, timeout, canceled), so that no further call is worth making.
func unreachable(err error) bool {
	var ee *Error
	if !errors.As(err, &ee) {
		return true
	}
	switch ee.Class {
	case prober.ClassConnect, prober.ClassTimeout, prober.ClassCanceled:
		return true
	}
	return false
}

// version reads GET /version ({"version": "..."}); "" on any failure.
func (e *Endpoint) version(ctx context.Context) string {
	body, err := e.getBody(ctx, engine.VersionPath)
	if err != nil {
		return ""
	}
	f, _ := engine.ParseVersion(body)
	// The version goes into a metric label, logs and the landing page:
	// a server that echoes the key there must not publish it.
	return e.Redact(f.Version)
}

// echoesKey reports whether s holds the endpoint's API key or another of
// its secrets.
func (e *Endpoint) echoesKey(s string) bool { return e.red.Holds(s) }

// getJSON GETs path (relative to the base URL) and decodes a 200 answer
// into v. Errors are *Error, redacted.
func (e *Endpoint) getJSON(ctx context.Context, path string, v any) error {
	body, err := e.call(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &Error{Class: prober.ClassInvalidResponse, Msg: e.Redact("GET " + path + ": bad JSON: " + e.short(err.Error()))}
	}
	return nil
}

// call sends method to path (relative to the base URL), with body as JSON
// when it is not nil, and returns a 200 answer's body (at most
// MaxInfoBodyBytes). Errors are *Error, redacted, classified alike for
// every method.
func (e *Endpoint) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	what := method + " " + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.base+path, rd)
	if err != nil {
		return nil, &Error{Class: prober.ClassConnect, Msg: e.Redact(what + ": " + err.Error())}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "llmprobe")
	client.Authorize(req.Header, e.o.APIKey)
	resp, err := bounded.NewClient(e.info, e.o.DiscoveryTimeout).Do(req)
	if err != nil {
		return nil, e.transportError(ctx, what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, &Error{Class: prober.ClassForStatus(resp.StatusCode), Msg: e.Redact(what + ": " + e.statusText(resp))}
	}
	out, err := bounded.ReadBody(resp, "", MaxInfoBodyBytes)
	var tl *bounded.TooLargeError
	if errors.As(err, &tl) {
		return nil, &Error{Class: prober.ClassInvalidResponse, Msg: fmt.Sprintf("%s: response larger than %d bytes", what, MaxInfoBodyBytes)}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, &Error{Class: prober.ClassCanceled, Msg: what + ": canceled", Err: ctx.Err()}
		}
		return nil, &Error{Class: prober.ClassStream, Msg: e.Redact("reading " + what + ": " + e.short(unwrapURL(err).Error()))}
	}
	return out, nil
}

// statusText describes a non-200 answer: "HTTP 503 Service Unavailable",
// and for a redirect where it points.
func (e *Endpoint) statusText(resp *http.Response) string {
	s := "HTTP " + resp.Status
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		s += " (redirect to " + e.short(loc) + "; redirects are not followed: fix base_url)"
	}
	return s
}

// transportError classifies a failed HTTP call: canceled when ctx is done,
// timeout, an HTTP status carried by the error, else connect.
func (e *Endpoint) transportError(ctx context.Context, what string, err error) *Error {
	var ne net.Error
	var he interface{ StatusCode() int }
	class := prober.ClassConnect
	switch {
	case ctx.Err() != nil:
		return &Error{Class: prober.ClassCanceled, Msg: what + ": canceled", Err: ctx.Err()}
	case errors.As(err, &ne) && ne.Timeout():
		class = prober.ClassTimeout
	case errors.As(err, &he):
		class = prober.ClassForStatus(he.StatusCode())
	}
	return &Error{Class: class, Msg: e.Redact(what + ": " + e.short(unwrapURL(err).Error()))}
}

// unwrapURL drops the *url.Error wrapper, which repeats the whole URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// shorten bounds s to 200 bytes at a rune boundary.
// short redacts s (Redact) and then bounds it to 200 bytes: a secret cut
// in two by the bound would no longer be found whole.
func (e *Endpoint) short(s string) string { return shorten(e.Redact(s)) }

func shorten(s string) string {
	const n = 200
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
