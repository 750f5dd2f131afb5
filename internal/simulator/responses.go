package simulator

import "encoding/json"

// Response shapes: vLLM 0.11's protocol.py models, fields in declaration
// order (pydantic's serialisation order). A json.RawMessage field with
// omitempty is left out when nil and written as null when jsonNull, which
// mirrors pydantic's exclude_unset for fields that are set to None.

// jsonNull marks a field that is present with the value null.
var jsonNull = json.RawMessage("null")

// usage is UsageInfo. PromptTokensDetails is null in model_dump() answers
// and absent where vLLM excludes unset or None fields.
type usage struct {
	PromptTokens        int             `json:"prompt_tokens"`
	TotalTokens         int             `json:"total_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	PromptTokensDetails json.RawMessage `json:"prompt_tokens_details,omitempty"`
	// CompletionTokensDetails carries reasoning_tokens for a request that
	// thought (reasoning.go); absent otherwise.
	CompletionTokensDetails json.RawMessage `json:"completion_tokens_details,omitempty"`
}

// completionChoice is CompletionResponseChoice (non-streaming).
type completionChoice struct {
	Index          int     `json:"index"`
	Text           string  `json:"text"`
	Logprobs       any     `json:"logprobs"`
	FinishReason   *string `json:"finish_reason"`
	StopReason     any     `json:"stop_reason"`
	TokenIDs       any     `json:"token_ids"`
	PromptLogprobs any     `json:"prompt_logprobs"`
	PromptTokenIDs any     `json:"prompt_token_ids"`
}

// completionResponse is CompletionResponse.
type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []completionChoice `json:"choices"`
	ServiceTier       any                `json:"service_tier"`
	SystemFingerprint any                `json:"system_fingerprint"`
	Usage             usage              `json:"usage"`
	KVTransferParams  any                `json:"kv_transfer_params"`
	Timings           map[string]any     `json:"timings,omitempty"` // llama.cpp's
	Metrics           *perRequestMetrics `json:"metrics,omitempty"` // vLLM's include_metrics
}

// completionStreamChoice is CompletionResponseStreamChoice; a nil
// PromptTokenIDs is written as null.
type completionStreamChoice struct {
	Index          int     `json:"index"`
	Text           string  `json:"text"`
	Logprobs       any     `json:"logprobs"`
	FinishReason   *string `json:"finish_reason"`
	StopReason     any     `json:"stop_reason"`
	PromptTokenIDs []int   `json:"prompt_token_ids"`
	TokenIDs       any     `json:"token_ids"`
}

// completionChunk is CompletionStreamResponse; a nil Usage is written as
// null (token chunks are dumped with exclude_unset=False).
type completionChunk struct {
	ID      string                   `json:"id"`
	Object  string                   `json:"object"`
	Created int64                    `json:"created"`
	Model   string                   `json:"model"`
	Choices []completionStreamChoice `json:"choices"`
	Usage   *usage                   `json:"usage"`
	// SystemFingerprint is set by the TGI persona only (vLLM has none).
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	// Metrics rides on the final usage chunk (include_metrics).
	Metrics *perRequestMetrics `json:"metrics,omitempty"`
}

// chatDelta is DeltaMessage with the fields serving_chat sets.
type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
	// ReasoningContent and ToolCalls: a reasoning model's thinking and a
	// tool call's fragments (reasoning.go).
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	Reasoning        string          `json:"reasoning,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

// toolCallDelta is DeltaToolCall: the first fragment of a call carries its
// id, type and function name, the next ones only the arguments.
type toolCallDelta struct {
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Index    int               `json:"index"`
	Function toolFunctionDelta `json:"function"`
}

type toolFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"` // absent from the start chunk (toolStartChunk)
}

// chatChunkChoice is ChatCompletionResponseStreamChoice (exclude_unset).
type chatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	Logprobs     any             `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
	TokenIDs     json.RawMessage `json:"token_ids,omitempty"`
}

// chatChunk is ChatCompletionStreamResponse (exclude_unset).
type chatChunk struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Created        int64             `json:"created"`
	Model          string            `json:"model"`
	Choices        []chatChunkChoice `json:"choices"`
	Usage          *usage            `json:"usage,omitempty"`
	PromptTokenIDs json.RawMessage   `json:"prompt_token_ids,omitempty"`
	// SystemFingerprint is set by the TGI persona only (vLLM has none).
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	// Metrics rides on the final usage chunk (include_metrics).
	Metrics *perRequestMetrics `json:"metrics,omitempty"`
}

// chatMessageOut is ChatMessage.
type chatMessageOut struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	Refusal          any    `json:"refusal"`
	Annotations      any    `json:"annotations"`
	Audio            any    `json:"audio"`
	FunctionCall     any    `json:"function_call"`
	ToolCalls        []any  `json:"tool_calls"`
	ReasoningContent any    `json:"reasoning_content"`
	Reasoning        any    `json:"reasoning,omitempty"`
}

// chatChoice is ChatCompletionResponseChoice.
type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     any            `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
	StopReason   any            `json:"stop_reason"`
	TokenIDs     any            `json:"token_ids"`
}

// chatResponse is ChatCompletionResponse.
type chatResponse struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []chatChoice   `json:"choices"`
	ServiceTier       any            `json:"service_tier"`
	SystemFingerprint any            `json:"system_fingerprint"`
	Usage             usage          `json:"usage"`
	PromptLogprobs    any            `json:"prompt_logprobs"`
	PromptTokenIDs    any            `json:"prompt_token_ids"`
	KVTransferParams  any            `json:"kv_transfer_params"`
	Timings           map[string]any `json:"timings,omitempty"` // llama.cpp's
	// Metrics is vLLM's per-request timing (include_metrics).
	Metrics *perRequestMetrics `json:"metrics,omitempty"`
}
