package simulator

import (
	"fmt"
	"net/http"
	"strconv"
)

// The personas' own endpoints. Each answers in the shape of the engine's
// source (docs/engines.md cites it), with the simulator's figures.

// trainedContext is the n_ctx_train / context_length the llama.cpp and
// Ollama personas report for the model: larger than the served context,
// as for a real model run with a smaller one.
func (s *Simulator) trainedContext() int { return max(131072, s.cfg.MaxModelLen) }

// handlePersonaModels answers GET /v1/models as the persona's server does.
func (s *Simulator) handlePersonaModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.personaCard()}})
}

// handleSGLangModel answers SGLang's GET /v1/models/{model}: the served
// model's card, else its OpenAI-shaped 404 model_not_found (a string code;
// http_server.py retrieve_model, testdata/engines/sglang/0.5/README.md).
func (s *Simulator) handleSGLangModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	if name != s.cfg.Model {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": openAIError{Message: fmt.Sprintf("The model '%s' does not exist", name),
			Type: "invalid_request_error", Param: "model", Code: "model_not_found"}})
		return
	}
	writeJSON(w, http.StatusOK, s.personaCard())
}

// openAIError is OpenAI's error object with a string code, fields in
// OpenAI's order.
type openAIError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
	Code    string `json:"code"`
}

// personaCard is the served model's /v1/models card as the persona's
// server writes it.
func (s *Simulator) personaCard() map[string]any {
	card := map[string]any{"id": s.cfg.Model, "object": "model", "created": s.created}
	switch s.cfg.Engine {
	case EngineSGLang:
		card["owned_by"], card["root"], card["max_model_len"] = "sglang", s.cfg.Model, s.cfg.MaxModelLen
	case EngineTGI:
		card["owned_by"] = s.cfg.Model
	case EngineLlamaCpp:
		card["owned_by"] = "llamacpp"
		card["meta"] = map[string]any{"vocab_type": 2, "n_vocab": VocabSize, "n_ctx_train": s.trainedContext(),
			"n_embd": 4096, "n_params": 8030261248, "size": 4920733696}
	case EngineOllama:
		card["owned_by"] = "library"
	case EngineGeneric:
		card["owned_by"] = "system"
	}
	return card
}

// handleTokenizeSGLang answers SGLang's POST /tokenize {"model", "prompt",
// "add_special_tokens"} with {"tokens", "count", "max_model_len"}; it takes
// no chat messages.
func (s *Simulator) handleTokenizeSGLang(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  *string `json:"model"`
		Prompt *string `json:"prompt"`
	}
	if !s.readModelRequest(w, r, &req, &req.Model) {
		return
	}
	if req.Prompt == nil {
		s.writeError(w, badRequest("prompt", "prompt is required"))
		return
	}
	ids := tokenize(*req.Prompt)
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": s.cfg.MaxModelLen})
}

// handleSGLangServerInfo answers GET /get_server_info: server arguments
// (context_length null, as when the server was started without one),
// scheduler figures and the version.
func (s *Simulator) handleSGLangServerInfo(w http.ResponseWriter, _ *http.Request) {
	c := s.cfg
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": c.Model, "tokenizer_path": c.Model, "served_model_name": c.Model, "context_length": nil,
		"tp_size": 1, "dp_size": 1, "pp_size": 1, "dtype": "auto", "kv_cache_dtype": "auto",
		"max_running_requests": c.MaxNumSeqs, "chunked_prefill_size": c.MaxNumBatchedTokens,
		"page_size": c.BlockSize, "disable_radix_cache": !c.EnablePrefixCaching, "schedule_policy": "fcfs",
		"max_total_num_tokens": c.NumGPUBlocks * c.BlockSize, "version": VersionSGLang,
		"internal_states": []any{map[string]any{"last_gen_throughput": 0.0}},
	})
}

// handleSGLangModelInfo answers GET /get_model_info.
func (s *Simulator) handleSGLangModelInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"model_path": s.cfg.Model, "tokenizer_path": s.cfg.Model, "is_generation": true})
}

// tgiTokens is TGI's TokenizeResponse: one {"id", "text", "start", "stop"}
// per token.
func tgiTokens(text string) []map[string]any {
	ids := tokenize(text)
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{"id": id, "text": vocabWord(id), "start": 0, "stop": 0}
	}
	return out
}

// handleTokenizeTGI answers TGI's POST /tokenize {"inputs", "parameters"}.
func (s *Simulator) handleTokenizeTGI(w http.ResponseWriter, req struct {
	Inputs *string `json:"inputs"`
}) {
	if req.Inputs == nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "missing field `inputs`", "error_type": "validation"})
		return
	}
	writeJSON(w, http.StatusOK, tgiTokens(*req.Inputs))
}

// handleChatTokenizeTGI answers TGI's POST /chat_tokenize {"messages"} with
// {"tokenize_response", "templated_text"}.
func (s *Simulator) handleChatTokenizeTGI(w http.ResponseWriter, req struct {
	Messages []chatMessage `json:"messages"`
}) {
	text, err := renderChat(req.Messages, true)
	if err != nil || len(req.Messages) == 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "invalid messages", "error_type": "validation"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokenize_response": tgiTokens(text), "templated_text": text})
}

// handleTGIInfo answers TGI's GET /info.
func (s *Simulator) handleTGIInfo(w http.ResponseWriter, _ *http.Request) {
	c := s.cfg
	writeJSON(w, http.StatusOK, map[string]any{
		"model_id": c.Model, "model_sha": nil, "model_dtype": "torch.float16", "model_device_type": "cuda",
		"model_pipeline_tag": "text-generation", "max_concurrent_requests": 128, "max_best_of": 2,
		"max_stop_sequences": 4, "max_input_tokens": c.MaxModelLen - 1, "max_total_tokens": c.MaxModelLen,
		"validation_workers": 2, "max_client_batch_size": 4, "router": "text-generation-router",
		"version": VersionTGI, "sha": nil, "docker_label": nil,
	})
}

// handleTokenizeLlamaCpp answers llama.cpp's POST /tokenize {"content",
// "add_special", "with_pieces"} with {"tokens": [...]}. Without content it
// answers {"tokens": []}, as llama-server does (the toy tokenizer has no
// special tokens, so add_special changes nothing).
func (s *Simulator) handleTokenizeLlamaCpp(w http.ResponseWriter, req struct {
	Content    *string `json:"content"`
	WithPieces bool    `json:"with_pieces"`
}) {
	var tokens []any
	if req.Content != nil {
		for _, id := range tokenize(*req.Content) {
			if req.WithPieces {
				tokens = append(tokens, map[string]any{"id": id, "piece": " " + vocabWord(id)})
			} else {
				tokens = append(tokens, id)
			}
		}
	}
	if tokens == nil {
		tokens = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": tokens})
}

// handleDetokenizeLlamaCpp answers llama.cpp's POST /detokenize {"tokens"}
// with {"content"}.
func (s *Simulator) handleDetokenizeLlamaCpp(w http.ResponseWriter, req struct {
	Tokens []int `json:"tokens"`
}) {
	text, err := detokenize(req.Tokens)
	s.writeText(w, "tokens", "content", text, err)
}

// handleApplyTemplate answers llama.cpp's POST /apply-template {"messages"}
// with {"prompt"}: the chat prompt /v1/chat/completions would tokenize.
func (s *Simulator) handleApplyTemplate(w http.ResponseWriter, req struct {
	Messages []chatMessage `json:"messages"`
}) {
	text, err := renderChat(req.Messages, true)
	s.writeText(w, "messages", "prompt", text, err)
}

// writeText answers {key: text}, or err as a 400 naming param.
func (s *Simulator) writeText(w http.ResponseWriter, param, key, text string, err error) {
	if err != nil {
		s.writeError(w, badRequest(param, "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{key: text})
}

// handleProps answers llama.cpp's GET /props: n_ctx is the context of one
// slot (the simulator's max-model-len), total_slots its max-num-seqs.
func (s *Simulator) handleProps(w http.ResponseWriter, _ *http.Request) {
	c := s.cfg
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"id": 0, "id_task": -1, "n_ctx": c.MaxModelLen,
			"speculative": false, "is_processing": false, "params": map[string]any{"n_predict": -1}},
		"total_slots": c.MaxNumSeqs, "model_alias": c.Model, "model_path": "/models/" + c.Model + ".gguf",
		"modalities":     map[string]bool{"vision": false, "audio": false},
		"endpoint_slots": true, "endpoint_props": false, "endpoint_metrics": true,
		"chat_template": "{{ messages }}", "bos_token": "", "eos_token": "", "build_info": VersionLlamaCpp,
	})
}

// handleOllamaTags answers Ollama's GET /api/tags: the served model as a
// pulled one, with its digest and details.
func (s *Simulator) handleOllamaTags(w http.ResponseWriter, _ *http.Request) {
	s.ollamaModels(w, map[string]any{"modified_at": "2025-10-01T00:00:00Z", "size": 4920753328})
}

// handleOllamaPs answers Ollama's GET /api/ps: the served model as a
// loaded one (the simulator's model is always loaded), running with
// MaxModelLen as its context_length.
func (s *Simulator) handleOllamaPs(w http.ResponseWriter, _ *http.Request) {
	s.ollamaModels(w, map[string]any{"size": 6654289920, "expires_at": "2099-01-01T00:00:00Z",
		"size_vram": 6654289920, "context_length": s.cfg.MaxModelLen})
}

// ollamaModels answers {"models": [the served model]}: its name, digest
// and details with the fields of m.
func (s *Simulator) ollamaModels(w http.ResponseWriter, m map[string]any) {
	m["name"], m["model"], m["details"] = s.cfg.Model, s.cfg.Model, ollamaDetails
	m["digest"] = "365c0bd3c000a25d28ddbf732fe1c6add414de7275464c4e4d1c3b5fcb5d8ad1"
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{m}})
}

// ollamaDetails is the served model's ModelDetails.
var ollamaDetails = map[string]any{"parent_model": "", "format": "gguf", "family": "llama", "families": []string{"llama"},
	"parameter_size": "8.0B", "quantization_level": "Q4_K_M"}

// handleOllamaShow answers Ollama's POST /api/show {"model"}: parameters
// with num_ctx (the served context), model_info with the trained one.
func (s *Simulator) handleOllamaShow(w http.ResponseWriter, req struct {
	Model string `json:"model"`
	Name  string `json:"name"`
}) {
	m := req.Model
	if m == "" {
		m = req.Name
	}
	if m != s.cfg.Model {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model '%s' not found", m)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":    "FROM " + m,
		"parameters":   "num_ctx                        " + strconv.Itoa(s.cfg.MaxModelLen) + "\nstop                           \"<|eot_id|>\"",
		"template":     "{{ .Prompt }}",
		"details":      ollamaDetails,
		"model_info":   map[string]any{"general.architecture": "llama", "llama.context_length": s.trainedContext()},
		"capabilities": []string{"completion"},
	})
}
