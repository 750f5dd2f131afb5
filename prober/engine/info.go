package engine

import (
	"bufio"
	"encoding/json"
	"strconv"
	"strings"
)

// Fingerprint is what an engine's own info endpoint says about the server
// and the served model. Zero values are unknown: nothing is guessed.
type Fingerprint struct {
	// Version is the engine's version or build (llama.cpp: build_info).
	Version string
	// Model is the model the endpoint reports (TGI model_id, llama.cpp
	// model_path, SGLang model_path).
	Model string
	// ContextLength is the most prompt + output tokens one request may
	// hold, as the engine enforces it; 0 when the endpoint does not say.
	ContextLength int
	// ContextSource names the field ContextLength was read from, e.g.
	// "/props default_generation_settings.n_ctx".
	ContextSource string
	// Config holds engine settings as strings (keys as the engine names
	// them).
	Config map[string]string
}

// InfoEndpoint is an engine's info endpoint: a GET whose answer Parse
// reads. Parse's ok is false when the body is not this engine's shape,
// which also makes it a detection probe.
type InfoEndpoint struct {
	Path  string
	Parse func(body []byte) (f Fingerprint, ok bool)
}

// Info returns the engine's info endpoint: vLLM's and the generic
// adapter's GET /version (the version only; vLLM's configuration comes from
// /metrics, see ConfigLabels), llama.cpp's /props, TGI's /info, SGLang's
// /get_server_info, Ollama's /api/version (its model's details come from
// ModelInfo). ok is false for no engine today; callers still check it.
func (e *Engine) Info() (InfoEndpoint, bool) {
	switch e.name {
	case LlamaCpp:
		return InfoEndpoint{Path: "/props", Parse: ParseProps}, true
	case TGI:
		return InfoEndpoint{Path: "/info", Parse: ParseTGIInfo}, true
	case SGLang:
		return InfoEndpoint{Path: "/get_server_info", Parse: ParseSGLangServerInfo}, true
	case Ollama:
		return InfoEndpoint{Path: OllamaVersionPath, Parse: ParseOllamaVersion}, true
	}
	return InfoEndpoint{Path: VersionPath, Parse: ParseVersion}, true
}

// Detection returns the engine's detection probe: a GET whose answer, in
// the shape Parse accepts, only this engine gives. llama.cpp, TGI and
// SGLang are recognised by their info endpoints (/props with
// default_generation_settings, /info with model_id and max_total_tokens,
// /get_server_info with version and model_path); Ollama by GET /api/tags
// listing models with their digests (ParseOllamaTags), never by
// /api/version: {"version": "..."} is what vLLM's /version answers too, and
// a server with a catch-all route answers it on any path (issue 22 V4).
// ok is false for the engines found otherwise (vLLM: its /metrics names
// and owned_by) and the generic adapter.
func (e *Engine) Detection() (InfoEndpoint, bool) {
	switch e.name {
	case LlamaCpp, TGI, SGLang:
		return e.Info()
	case Ollama:
		return InfoEndpoint{Path: OllamaTagsPath, Parse: ParseOllamaTags}, true
	}
	return InfoEndpoint{}, false
}

// ModelInfoEndpoint is an engine's per-model info endpoint: a POST of
// {"model": id} whose answer Parse reads (context length, model settings).
type ModelInfoEndpoint struct {
	Path  string
	Parse func(body []byte) (f Fingerprint, ok bool)
}

// ModelInfo returns the engine's per-model info endpoint (Ollama's POST
// /api/show); ok is false for the engines without one.
func (e *Engine) ModelInfo() (ModelInfoEndpoint, bool) {
	if e.name == Ollama {
		return ModelInfoEndpoint{Path: OllamaShowPath, Parse: ParseOllamaShow}, true
	}
	return ModelInfoEndpoint{}, false
}

// HasConfigLabels reports whether the engine's /metrics carries its
// configuration (vLLM's vllm:cache_config_info), read with ConfigLabels.
func (e *Engine) HasConfigLabels() bool { return e.name == VLLM }

// NoMetricsReason says why the engine serves no Prometheus /metrics at
// all ("Ollama serves no Prometheus /metrics"); "" for the engines that
// serve one and for the generic adapter, whose /metrics is still tried.
func (e *Engine) NoMetricsReason() string { return e.noMetrics }

// VersionPath is vLLM's version endpoint: GET /version answers
// {"version": "0.11.0"}.
const VersionPath = "/version"

// ParseVersion reads a {"version": "..."} answer (vLLM's GET /version; the
// generic adapter tries it too); ok is false when version is not a string.
func ParseVersion(body []byte) (Fingerprint, bool) {
	var v struct {
		Version any `json:"version"`
	}
	if json.Unmarshal(body, &v) != nil {
		return Fingerprint{}, false
	}
	s, ok := v.Version.(string)
	if !ok {
		return Fingerprint{}, false
	}
	return Fingerprint{Version: strings.TrimSpace(s)}, true
}

// Ollama's endpoints (docs.ollama.com/api): GET /api/version answers
// {"version"}; GET /api/tags lists the local models ({"models": [{"name",
// "model", "digest", "size", "details", ...}]}); POST /api/show {"model"}
// answers the model's details.
const (
	OllamaVersionPath = "/api/version"
	OllamaTagsPath    = "/api/tags"
	OllamaShowPath    = "/api/show"
	// OllamaPsPath lists the loaded models, each with the context it runs
	// with (ProcessModelResponse.context_length): the served context,
	// which /api/show states only when the Modelfile sets num_ctx.
	OllamaPsPath = "/api/ps"
)

// OllamaPsContextSource names ParseOllamaPs's context length as its source.
const OllamaPsContextSource = "/api/ps context_length (the loaded model's)"

// ParseOllamaPs reads Ollama's GET /api/ps ({"models": [{"name", "model",
// ..., "context_length"}]}) for model: the context the loaded model runs
// with (Ollama picks it from num_ctx, OLLAMA_CONTEXT_LENGTH or the VRAM,
// clamped to the trained one). loaded is false when model is not in the
// list (Ollama loads a model at its first request and unloads it after
// keep_alive); ok is false when the body is not that shape.
func ParseOllamaPs(body []byte, model string) (ctx int, loaded, ok bool) {
	var v struct {
		Models []struct {
			Name          string          `json:"name"`
			Model         string          `json:"model"`
			ContextLength json.RawMessage `json:"context_length"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &v) != nil {
		return 0, false, false
	}
	for _, m := range v.Models {
		if m.Name == model || m.Model == model {
			n := PositiveInt(m.ContextLength)
			return n, n > 0, true
		}
	}
	return 0, false, true
}

// DetectionOrder lists the engines whose detection probe (Detection) is
// tried, in order, when /metrics and /v1/models did not say.
var DetectionOrder = []Name{LlamaCpp, TGI, SGLang, Ollama}

// FromOwner returns the engine named by the owned_by field of a
// /v1/models entry, for the engines that set it to their own name
// ("vllm", "sglang", "llamacpp"); ok is false otherwise.
func FromOwner(ownedBy string) (*Engine, bool) {
	switch n := Name(strings.ToLower(strings.TrimSpace(ownedBy))); n {
	case VLLM, SGLang, LlamaCpp:
		return engines[n], true
	}
	return generic, false
}

// ParseProps reads llama.cpp's GET /props: build_info, model_path,
// total_slots and default_generation_settings.n_ctx (the context of one
// slot: the most one request may hold). ok is false without
// default_generation_settings.
func ParseProps(body []byte) (Fingerprint, bool) {
	var p struct {
		Settings *struct {
			NCtx json.RawMessage `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots json.RawMessage `json:"total_slots"`
		ModelPath  string          `json:"model_path"`
		ModelAlias string          `json:"model_alias"`
		BuildInfo  string          `json:"build_info"`
	}
	if json.Unmarshal(body, &p) != nil || p.Settings == nil {
		return Fingerprint{}, false
	}
	f := Fingerprint{Version: strings.TrimSpace(p.BuildInfo), Model: strings.TrimSpace(p.ModelPath), Config: map[string]string{}}
	if n := PositiveInt(p.Settings.NCtx); n > 0 {
		f.ContextLength, f.ContextSource = n, "/props default_generation_settings.n_ctx"
		f.Config["n_ctx"] = strconv.Itoa(n)
	}
	if n := PositiveInt(p.TotalSlots); n > 0 {
		f.Config["total_slots"] = strconv.Itoa(n)
	}
	if p.ModelAlias != "" {
		f.Config["model_alias"] = p.ModelAlias
	}
	return f, true
}

// ParseTGIInfo reads TGI's GET /info: version, model_id and
// max_total_tokens (the most input + generated tokens of one request),
// with max_input_tokens (max_input_length before TGI 2.1), the dtype,
// device and batching limits as Config. ok is false without model_id and
// max_total_tokens.
func ParseTGIInfo(body []byte) (Fingerprint, bool) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return Fingerprint{}, false
	}
	model := jsonString(raw["model_id"])
	total := PositiveInt(raw["max_total_tokens"])
	if model == "" || raw["max_total_tokens"] == nil {
		return Fingerprint{}, false
	}
	f := Fingerprint{Version: jsonString(raw["version"]), Model: model, Config: map[string]string{}}
	if total > 0 {
		f.ContextLength, f.ContextSource = total, "/info max_total_tokens"
	}
	configFrom(f.Config, raw, "max_total_tokens", "max_input_tokens", "max_input_length", "model_dtype",
		"model_device_type", "model_sha", "max_concurrent_requests", "max_batch_total_tokens",
		"max_batch_prefill_tokens", "max_batch_size", "max_best_of", "sha", "docker_label")
	return f, true
}

// ParseSGLangServerInfo reads SGLang's GET /get_server_info (its server
// arguments plus scheduler information): version, model_path and
// context_length (only when the server was started with one; the model's
// own is on /v1/models as max_model_len), with parallelism, batching and
// cache settings as Config. ok is false without version and model_path.
func ParseSGLangServerInfo(body []byte) (Fingerprint, bool) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return Fingerprint{}, false
	}
	version, model := jsonString(raw["version"]), jsonString(raw["model_path"])
	if version == "" || model == "" {
		return Fingerprint{}, false
	}
	f := Fingerprint{Version: version, Model: model, Config: map[string]string{}}
	if n := PositiveInt(raw["context_length"]); n > 0 {
		f.ContextLength, f.ContextSource = n, "/get_server_info context_length"
	}
	configFrom(f.Config, raw, "context_length", "tp_size", "dp_size", "pp_size", "dtype", "kv_cache_dtype",
		"max_running_requests", "max_total_tokens", "max_total_num_tokens", "max_prefill_tokens",
		"chunked_prefill_size", "schedule_policy", "disable_radix_cache", "page_size", "attention_backend",
		"quantization", "mem_fraction_static")
	return f, true
}

// ParseOllamaVersion reads Ollama's GET /api/version ({"version"}); ok is
// false without a version.
func ParseOllamaVersion(body []byte) (Fingerprint, bool) {
	var v struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(body, &v) != nil || strings.TrimSpace(v.Version) == "" {
		return Fingerprint{}, false
	}
	return Fingerprint{Version: strings.TrimSpace(v.Version)}, true
}

// ParseOllamaTags reads Ollama's GET /api/tags as detection evidence: ok
// only for {"models": [...]} listing at least one model, each with a
// non-empty name (or model) and digest, as Ollama lists what it has
// pulled. The Fingerprint is empty (the version comes from /api/version).
func ParseOllamaTags(body []byte) (Fingerprint, bool) {
	var v struct {
		Models []struct {
			Name   string `json:"name"`
			Model  string `json:"model"`
			Digest string `json:"digest"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &v) != nil || len(v.Models) == 0 {
		return Fingerprint{}, false
	}
	for _, m := range v.Models {
		if strings.TrimSpace(m.Name+m.Model) == "" || strings.TrimSpace(m.Digest) == "" {
			return Fingerprint{}, false
		}
	}
	return Fingerprint{}, true
}

// ParseOllamaShow reads Ollama's POST /api/show answer: the num_ctx of its
// parameters (the context the model runs with, when set) as ContextLength,
// and the model's trained <architecture>.context_length, family, size,
// quantization and format as Config. The trained context is not the
// served one (Ollama runs a model with num_ctx, by default smaller), so it
// is never ContextLength. ok is false when the body is not an object.
func ParseOllamaShow(body []byte) (Fingerprint, bool) {
	var s struct {
		Parameters string                     `json:"parameters"`
		Details    map[string]json.RawMessage `json:"details"`
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
	}
	if json.Unmarshal(body, &s) != nil {
		return Fingerprint{}, false
	}
	f := Fingerprint{Config: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(s.Parameters))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "num_ctx" {
			if n, err := strconv.Atoi(fields[1]); err == nil && n > 0 {
				f.ContextLength, f.ContextSource = n, "/api/show parameters num_ctx"
				f.Config["num_ctx"] = fields[1]
			}
		}
	}
	configFrom(f.Config, s.Details, "family", "parameter_size", "quantization_level", "format")
	if arch := jsonString(s.ModelInfo["general.architecture"]); arch != "" {
		if n := PositiveInt(s.ModelInfo[arch+".context_length"]); n > 0 {
			f.Config["context_length_trained"] = strconv.Itoa(n)
		}
	}
	return f, true
}

// PositiveInt reads a positive integer written as a JSON number or a
// string holding one; 0 otherwise.
func PositiveInt(raw json.RawMessage) int {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	n, err := strconv.ParseInt(s, 10, 0)
	if err != nil || n <= 0 {
		return 0
	}
	return int(n)
}

// jsonString returns a JSON string's value, "" for anything else.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// configFrom copies the scalar fields keys of raw into cfg as strings
// (strings unquoted, numbers and booleans as written; null and objects are
// skipped).
func configFrom(cfg map[string]string, raw map[string]json.RawMessage, keys ...string) {
	for _, k := range keys {
		v, ok := raw[k]
		if !ok {
			continue
		}
		s := strings.TrimSpace(string(v))
		switch {
		case s == "" || s == "null" || strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
			continue
		case strings.HasPrefix(s, `"`):
			s = jsonString(v)
		}
		if s != "" && len(s) <= 200 {
			cfg[k] = s
		}
	}
}
