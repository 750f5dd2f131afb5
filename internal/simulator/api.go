package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/jsonkind"
)

// maxBodyBytes caps request bodies.
const maxBodyBytes = 32 << 20

// excludedHandlers are the handlers vLLM's prometheus_fastapi_instrumentator
// leaves out of http_requests_total (vLLM's mount_metrics; matched with
// re.search, hence substrings).
var excludedHandlers = []string{"/metrics", "/health", "/load", "/ping", "/version"}

// untemplatedHandler is the handler label the instrumentator gives requests
// that match no route fully (unknown paths, known paths with the wrong
// method): should_group_untemplated.
const untemplatedHandler = "none"

func (s *Simulator) routes() http.Handler {
	mux := http.NewServeMux()
	methods := map[string]string{} // route path -> method
	// handle serves path for one method only; any other method gets FastAPI's
	// 405 (GET routes also answer HEAD, as Starlette adds it).
	handle := func(method, path string, h http.HandlerFunc) {
		methods[path] = method
		allow := method
		if method == http.MethodGet {
			allow = "GET, HEAD"
		}
		var next http.Handler = h
		if !slices.ContainsFunc(excludedHandlers, func(x string) bool { return strings.Contains(path, x) }) {
			next = s.instrument(path, h)
		}
		notAllowed := s.instrument(untemplatedHandler, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
		}))
		mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method && (method != http.MethodGet || r.Method != http.MethodHead) {
				notAllowed.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
	handle(http.MethodGet, "/v1/models", s.handleModels)
	handle(http.MethodPost, "/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		s.generate(w, r, kindCompletion)
	})
	handle(http.MethodPost, "/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		s.generate(w, r, kindChat)
	})
	if s.light == nil && (s.cfg.Engine == "" || s.cfg.Engine == EngineVLLM) {
		handle(http.MethodPost, "/v1/responses", func(w http.ResponseWriter, r *http.Request) {
			s.generate(w, r, kindResponses)
		})
		handle(http.MethodPost, "/v1/embeddings", s.handleEmbeddings) // embed.go
		handle(http.MethodPost, "/rerank", s.handleRerank)
		handle(http.MethodPost, "/v1/rerank", s.handleRerank)
		handle(http.MethodPost, "/score", s.handleScore)
	}
	if s.light == nil && s.cfg.Engine != EngineTGI && s.cfg.Engine != EngineGeneric {
		// vLLM, SGLang, llama.cpp and Ollama serve the Anthropic
		// Messages API (testdata/engines/sglang/0.5/README.md,
		// llamacpp/2025-12/README.md, ollama/0.33/README.md).
		handle(http.MethodPost, "/v1/messages", func(w http.ResponseWriter, r *http.Request) {
			s.generate(w, r, kindMessages) // messages.go
		})
	}
	switch s.cfg.Engine {
	case EngineSGLang:
		handle(http.MethodPost, "/tokenize", s.handleTokenizeSGLang)
		handle(http.MethodGet, "/get_server_info", s.handleSGLangServerInfo)
		handle(http.MethodGet, "/get_model_info", s.handleSGLangModelInfo)
		handle(http.MethodGet, "/v1/models/{model...}", s.handleSGLangModel)
	case EngineTGI:
		handle(http.MethodPost, "/tokenize", jsonBody(s, s.handleTokenizeTGI))
		handle(http.MethodPost, "/chat_tokenize", jsonBody(s, s.handleChatTokenizeTGI))
		handle(http.MethodGet, "/info", s.handleTGIInfo)
	case EngineLlamaCpp:
		handle(http.MethodPost, "/tokenize", jsonBody(s, s.handleTokenizeLlamaCpp))
		handle(http.MethodPost, "/detokenize", jsonBody(s, s.handleDetokenizeLlamaCpp))
		handle(http.MethodPost, "/apply-template", jsonBody(s, s.handleApplyTemplate))
		handle(http.MethodGet, "/props", s.handleProps)
	case EngineOllama:
		handle(http.MethodGet, "/api/version", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"version": VersionOllama})
		})
		handle(http.MethodGet, "/api/tags", s.handleOllamaTags)
		handle(http.MethodPost, "/api/show", jsonBody(s, s.handleOllamaShow))
		handle(http.MethodGet, "/api/ps", s.handleOllamaPs)
	default:
		handle(http.MethodPost, "/tokenize", s.handleTokenize)
		handle(http.MethodPost, "/detokenize", s.handleDetokenize)
		handle(http.MethodGet, "/version", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"version": s.cfg.version()})
		})
	}
	if s.light != nil {
		mux.HandleFunc("GET /light/stats", s.handleLightStats)
	}
	if s.cfg.Engine != EngineOllama {
		handle(http.MethodGet, "/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	}
	if s.cfg.Engine != EngineOllama && s.cfg.Engine != EngineGeneric {
		// vLLM mounts prometheus_client's ASGI app on /metrics (and below): any
		// method gets the exposition, and it is not counted.
		metrics := metricsHandler(s.reg, s.cfg.MetricsFormat) // metricsformat.go
		if s.cfg.rustFrontend() {
			metrics = rustMetricsHandler(s.reg) // vllmrust.go
		}
		mux.Handle("/metrics", metrics)
		mux.Handle("/metrics/", metrics)
	}
	mux.Handle(DCGMPath, s.dcgmHandler()) // power.go, dcgm.go
	notFound := s.instrument(untemplatedHandler, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	}))
	if s.cfg.Engine == EngineGeneric {
		notFound = s.versionEverywhere(notFound) // generic.go
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Starlette's redirect_slashes: a route path plus a trailing slash
		// gets a 307 to the route (whatever the method).
		route, ok := strings.CutSuffix(r.URL.Path, "/")
		method, known := methods[route]
		if !ok || !known {
			notFound.ServeHTTP(w, r)
			return
		}
		name := untemplatedHandler
		if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
			name = r.URL.Path
		}
		s.instrument(name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			target := url.URL{Scheme: "http", Host: r.Host, Path: route, RawQuery: r.URL.RawQuery}
			if r.TLS != nil {
				target.Scheme = "https"
			}
			w.Header().Set("Location", target.String())
			w.WriteHeader(http.StatusTemporaryRedirect)
		})).ServeHTTP(w, r)
	}))
	return mux
}

// statusRecorder remembers the status for http_requests_total; Unwrap lets
// http.ResponseController reach Flush and Hijack.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// instrument counts requests in http_requests_total{handler,method,status}
// with status classes (2xx..5xx) as prometheus_fastapi_instrumentator does;
// name is the route path, or "none" for requests that match no route. A
// reset connection (no status) is not counted.
func (s *Simulator) instrument(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		start := time.Now()
		defer func() {
			if rec.status == 0 {
				return
			}
			status := strconv.Itoa(rec.status/100) + "xx"
			if s.m.httpDuration != nil {
				s.m.observeHTTP(name, r.Method, status, time.Since(start).Seconds()) // vllmrust.go
				return
			}
			s.m.httpRequests.With(prometheus.Labels{"handler": name, "method": r.Method, "status": status}).Inc()
		}()
		h.ServeHTTP(rec, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// apiError is a request's failure: its status, vLLM's error type, message
// and param. Each persona writes it in its engine's own shape
// (errors.go, writeError).
type apiError struct {
	Status  int
	Type    string
	Message string
	Param   string // empty: null
	// over, when set, says the request does not fit the context (its
	// figures): the personas word it as their engines do.
	over *contextExcess
	// model is the unknown model a 404 names.
	model string
}

func (e *apiError) Error() string { return e.Message }

// errorBody is vLLM's ErrorResponse JSON, fields in vLLM's order.
type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func (e *apiError) body() errorBody {
	var param *string
	if e.Param != "" {
		param = &e.Param
	}
	return errorBody{errorInfo{Message: e.Message, Type: e.Type, Param: param, Code: e.Status}}
}

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "BadRequestError", Message: fmt.Sprintf(format, args...), Param: param}
}

// jsonBody is a handler that reads the request's JSON body into a T for h,
// answering readJSON's error (a 400) itself.
func jsonBody[T any](s *Simulator, h func(w http.ResponseWriter, req T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req T
		if e := readJSON(w, r, &req); e != nil {
			s.writeError(w, e)
			return
		}
		h(w, req)
	}
}

// readJSON decodes the request body into v; errors are 400s.
func readJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return badRequest("", "request body larger than %d bytes", tooBig.Limit)
		}
		return badRequest("", "read request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return badRequest(te.Field, "%s: expected %s, got a JSON %s", te.Field, jsonkind.Describe(te.Type), te.Value)
		}
		return badRequest("", "invalid JSON body: %v", err)
	}
	return nil
}

// readModelRequest reads a request body into v (readJSON) and checks the
// model it names (*model, read once v is decoded: checkModel); false when
// it answered with the error.
func (s *Simulator) readModelRequest(w http.ResponseWriter, r *http.Request, v any, model **string) bool {
	e := readJSON(w, r, v)
	if e == nil {
		e = s.checkModel(*model)
	}
	if e != nil {
		s.writeError(w, e)
		return false
	}
	return true
}

// checkModel answers vLLM's 404 for a model other than the served one; an
// absent model means the served one.
func (s *Simulator) checkModel(model *string) *apiError {
	if model == nil || *model == s.cfg.Model || s.isLoRA(*model) {
		return nil
	}
	return &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
		Message: fmt.Sprintf("The model `%s` does not exist.", *model), Param: "model", model: *model}
}

func (s *Simulator) handleModels(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Engine != "" && s.cfg.Engine != EngineVLLM {
		s.handlePersonaModels(w, r)
		return
	}
	if s.cfg.rustFrontend() {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.rustModelCard()}})
		return
	}
	card := map[string]any{
		"id": s.cfg.Model, "object": "model", "created": s.created, "owned_by": "vllm",
		"root": s.cfg.Model, "parent": nil, "max_model_len": s.cfg.MaxModelLen,
		"permission": []any{map[string]any{
			"id": "modelperm-llmprobe-sim", "object": "model_permission", "created": s.created,
			"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
			"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
			"organization": "*", "group": nil, "is_blocking": false,
		}},
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": append([]any{card}, s.loraCards()...)})
}

type tokenizeRequest struct {
	Model               *string       `json:"model"`
	Prompt              *string       `json:"prompt"`
	Messages            []chatMessage `json:"messages"`
	AddGenerationPrompt *bool         `json:"add_generation_prompt"`
}

func (s *Simulator) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !s.readModelRequest(w, r, &req, &req.Model) {
		return
	}
	var ids []int
	switch {
	case req.Prompt != nil && req.Messages != nil:
		s.writeError(w, badRequest("", "give either prompt or messages, not both"))
		return
	case req.Prompt != nil:
		ids = tokenize(*req.Prompt)
	case req.Messages != nil:
		text, err := renderChat(req.Messages, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
		if err != nil {
			s.writeError(w, badRequest("messages", "%v", err))
			return
		}
		ids = tokenize(text)
	default:
		s.writeError(w, badRequest("prompt", "either prompt or messages must be given"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"count": len(ids), "max_model_len": s.cfg.MaxModelLen, "tokens": ids, "token_strs": nil,
	})
}

func (s *Simulator) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  *string `json:"model"`
		Tokens *[]int  `json:"tokens"`
	}
	if !s.readModelRequest(w, r, &req, &req.Model) {
		return
	}
	if req.Tokens == nil {
		s.writeError(w, badRequest("tokens", "tokens must be given"))
		return
	}
	text, err := detokenize(*req.Tokens)
	if err != nil {
		s.writeError(w, badRequest("tokens", "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}
