package simulator

// The personas' error answers: one apiError, written in the shape (and,
// for a request that does not fit the context, the wording) of each
// engine's source, as testdata/engines/<engine>/<version>/README.md reads
// it. internal/conformance (TestPersonaConformance) holds each shape to the
// corpus's error bodies.

import (
	"fmt"
	"net/http"
)

// contextExcess is a request that does not fit the context: its prompt
// tokens, the output tokens it asked for (0: none) and the context length.
type contextExcess struct{ prompt, output, context int }

// rendererCheck is vLLM's chat token check (the renderer's
// TokenizeParams._token_len_check; testdata/engines/vllm/0.24/README.md):
// a prompt longer than the context less the output asked for
// (max_completion_tokens, else max_tokens, else 0) is refused with param
// input_tokens, the count reported at most one past that limit (the
// tokenizer truncates there). An output larger than the context is left to
// the max-tokens check; nil for other personas and APIs.
func (s *Simulator) rendererCheck(kind apiKind, prompt int, maxTokens *int) *apiError {
	if (s.cfg.Engine != "" && s.cfg.Engine != EngineVLLM) || (kind != kindChat && kind != kindMessages) {
		return nil
	}
	ctx, out := s.cfg.MaxModelLen, 0
	if maxTokens != nil {
		out = *maxTokens
	}
	if out < 0 || out > ctx || prompt <= ctx-out {
		return nil
	}
	limit := ctx - out
	e := badRequest("input_tokens", "You passed %d input tokens and requested %d output tokens. However, the model's context "+
		"length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt.",
		min(prompt, limit+1), out, ctx, limit)
	e.over = &contextExcess{prompt: prompt, output: out, context: ctx}
	return e
}

// writeError answers e in the persona's shape.
func (s *Simulator) writeError(w http.ResponseWriter, e *apiError) {
	status, body := s.errorAnswer(e)
	writeJSON(w, status, body)
}

// errorAnswer is the status and body with which the persona answers e:
// vLLM's nested ErrorResponse unless the persona's engine writes another.
func (s *Simulator) errorAnswer(e *apiError) (int, any) {
	switch s.cfg.Engine {
	case EngineSGLang:
		return e.Status, sglangError(e)
	case EngineTGI:
		return tgiError(e)
	case EngineLlamaCpp:
		return e.Status, llamaCppError(e)
	case EngineOllama:
		return e.Status, ollamaError(e)
	}
	return e.Status, e.body()
}

// sglangErrorBody is SGLang's ErrorResponse, flat (not under "error"),
// fields in its order.
type sglangErrorBody struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// sglangError writes e as SGLang's create_error_response does; a request
// over the context in the tokenizer manager's wording (a prompt as long as
// the context, or prompt and output beyond it).
func sglangError(e *apiError) sglangErrorBody {
	b := sglangErrorBody{Object: "error", Message: e.Message, Type: e.Type, Code: e.Status}
	if e.Param != "" {
		b.Param = &e.Param
	}
	if x := e.over; x != nil {
		b.Param = nil
		if x.prompt >= x.context {
			b.Message = fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", x.prompt, x.context)
		} else {
			b.Message = fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. "+
				"You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. "+
				"Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
				x.context, uint64(x.prompt)+uint64(x.output), x.prompt, x.output)
		}
	}
	return b
}

// tgiError writes e as TGI's router does (`{"error", "error_type"}`): a
// refused request is a 422 validation error ("Input validation error:
// ...", a request over the context in Validation's MaxTotalTokens
// wording), a 429 "Model is overloaded"; other statuses keep theirs with
// error_type "generation".
func tgiError(e *apiError) (int, map[string]string) {
	switch {
	case e.Status == http.StatusBadRequest:
		msg := e.Message
		if x := e.over; x != nil {
			msg = fmt.Sprintf("`inputs` tokens + `max_new_tokens` must be <= %d. Given: %d `inputs` tokens and %d `max_new_tokens`",
				x.context, x.prompt, x.output)
		}
		return http.StatusUnprocessableEntity, map[string]string{"error": "Input validation error: " + msg, "error_type": "validation"}
	case e.Status == http.StatusTooManyRequests:
		return e.Status, map[string]string{"error": "Model is overloaded", "error_type": "overloaded"}
	}
	return e.Status, map[string]string{"error": e.Message, "error_type": "generation"}
}

// llamaCppErrorInfo is llama-server's format_error_response: code,
// message, type in that order; a prompt over the context adds its token
// count and the context (exceed_context_size_error).
type llamaCppErrorInfo struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	Type     string `json:"type"`
	NPrompt  *int   `json:"n_prompt_tokens,omitempty"`
	NContext *int   `json:"n_ctx,omitempty"`
}

// llamaCppLoading is the answer of llama-server's middleware while the
// model loads: a literal object, message, type and code in that order.
type llamaCppLoading struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// llamaCppTypes are format_error_response's types by status.
var llamaCppTypes = map[int]string{
	http.StatusBadRequest: "invalid_request_error", http.StatusUnauthorized: "authentication_error",
	http.StatusForbidden: "permission_error", http.StatusNotFound: "not_found_error",
	http.StatusInternalServerError: "server_error", http.StatusNotImplemented: "not_supported_error",
	http.StatusServiceUnavailable: "unavailable_error",
}

// llamaCppError writes e as llama-server does: `{"error": {...}}`; every
// 503 is the loading middleware's; a prompt as long as the context or
// longer is exceed_context_size_error. A status llama-server has no type
// for keeps e's type.
func llamaCppError(e *apiError) map[string]any {
	if e.Status == http.StatusServiceUnavailable {
		return map[string]any{"error": llamaCppLoading{Message: "Loading model", Type: "unavailable_error", Code: e.Status}}
	}
	info := llamaCppErrorInfo{Code: e.Status, Message: e.Message, Type: e.Type}
	if t, ok := llamaCppTypes[e.Status]; ok {
		info.Type = t
	}
	if x := e.over; x != nil && x.prompt >= x.context {
		info.Message, info.Type = "the request exceeds the available context size, try increasing it", "exceed_context_size_error"
		info.NPrompt, info.NContext = &x.prompt, &x.context
	}
	return map[string]any{"error": info}
}

// ollamaErrorInfo is Ollama's openai.Error: param and code always null.
type ollamaErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   any     `json:"param"`
	Code    *string `json:"code"`
}

// ollamaError writes e as Ollama's OpenAI middleware does (openai.NewError:
// the type by status); an unknown model in the chat handler's wording.
func ollamaError(e *apiError) map[string]any {
	info := ollamaErrorInfo{Message: e.Message, Type: "api_error"}
	switch e.Status {
	case http.StatusBadRequest:
		info.Type = "invalid_request_error"
	case http.StatusNotFound:
		info.Type = "not_found_error"
		if e.model != "" {
			info.Message = fmt.Sprintf("model %q not found, try pulling it first", e.model)
		}
	}
	return map[string]any{"error": info}
}
