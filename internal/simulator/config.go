package simulator

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config holds every parameter of a Simulator. The zero value is not usable:
// start from DefaultConfig and change what you need, then Validate (New
// validates too). A Config is a plain value; copying it is safe.
type Config struct {
	// Engine is the persona (`--engine`): EngineVLLM (the default; empty
	// means it too), EngineSGLang, EngineTGI, EngineLlamaCpp, EngineOllama
	// or EngineGeneric. It changes the metric names, the info and tokenizer
	// endpoints and the stream's quirks, not the engine model.
	Engine string

	// Model is the served model name (`--model`), the only id /v1/models
	// lists and the only `model` value requests may name. Default "llmprobe-sim".
	Model string

	// MaxNumSeqs is the most sequences in the running batch (`--max-num-seqs`,
	// vLLM's max_num_seqs). Default 256.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the per-step token budget shared by decodes and
	// (chunked) prefills (`--max-num-batched-tokens`). Default 8192.
	MaxNumBatchedTokens int
	// MaxModelLen is the context length: prompt + max_tokens must fit
	// (`--max-model-len`). Default 8192.
	MaxModelLen int
	// BlockSize is the number of tokens per KV cache block (`--block-size`).
	// Default 16.
	BlockSize int
	// NumGPUBlocks is the KV cache capacity in blocks (`--num-gpu-blocks`).
	// Default 24576 (393216 tokens, about what an 8B model leaves on an 80 GB GPU).
	NumGPUBlocks int
	// EnablePrefixCaching turns on prefix caching by chained hashes of full
	// prompt blocks (`--enable-prefix-caching`). Default true, as vLLM V1.
	EnablePrefixCaching bool
	// EnablePromptTokensDetails puts usage.prompt_tokens_details.cached_tokens
	// (the prompt tokens found in the prefix or prompt cache) on every
	// usage, as vLLM's --enable-prompt-tokens-details does
	// (`--enable-prompt-tokens-details`; llama.cpp's persona always does).
	// Default false, as vLLM.
	EnablePromptTokensDetails bool
	// EnablePerRequestMetrics answers a completions or chat request that
	// sets include_metrics with vLLM's per-request timing object
	// (`--enable-per-request-metrics`; servertiming.go): on the final usage
	// chunk of a stream, on the body of a non-streamed answer. The vLLM
	// persona only. Default false, as vLLM.
	EnablePerRequestMetrics bool
	// LegacyMetricNames serves the vLLM persona's metrics under the names
	// vLLM V1 used before 0.9.2 (`--legacy-metric-names`):
	// vllm:gpu_cache_usage_perc, vllm:gpu_prefix_cache_*, the per-step
	// vllm:time_per_output_token_seconds, and none of the names added
	// since (docs/simulator.md). Default false: the current names.
	LegacyMetricNames bool
	// MetricsFormat is the exposition format of /metrics
	// (`--metrics-format`, metricsformat.go): MetricsFormatText (the
	// default; empty means it too), MetricsFormatOpenMetrics (whatever
	// Accept says, as vLLM's Rust frontend) or MetricsFormatProtobuf (when
	// Accept asks for it).
	MetricsFormat string
	// VLLMFrontend is which of vLLM's HTTP servers the vLLM persona looks
	// like (`--vllm-frontend`, vllmrust.go): VLLMFrontendPython (the
	// default; empty means it too) or VLLMFrontendRust, which serves
	// /metrics as OpenMetrics whatever MetricsFormat and Accept say, with
	// the Rust frontend's own families, its stream framing and its
	// /v1/models card.
	VLLMFrontend string
	// PromptCache adds a prompt cache as llama.cpp's llama-server keeps
	// one (`--prompt-cache`, promptcache.go): a prompt's longest common
	// prefix with a cached prompt, token by token, is not computed again,
	// beside (and whatever) the prefix cache's full blocks. Default off.
	// PromptCacheTokens is its capacity (`--prompt-cache-tokens`, default
	// DefaultPromptCacheTokens, at most MaxPromptCacheTokens).
	PromptCache       bool
	PromptCacheTokens int

	// StepBase is the fixed cost of one engine step (`--step-base`). Default 10ms.
	StepBase time.Duration
	// StepPerPrefillToken is the added step cost per prompt token computed in
	// the step (`--step-per-prefill-token`). Default 20µs.
	StepPerPrefillToken time.Duration
	// StepPerSeq is the added step cost per sequence scheduled in the step
	// (`--step-per-seq`). Default 100µs.
	StepPerSeq time.Duration

	// EOSProbability is the probability that any generated token after
	// min_tokens is the end-of-sequence token, for requests without
	// ignore_eos (`--eos-probability`). 0 disables early stops. Default 0.005
	// (a mean natural output length of 200 tokens).
	EOSProbability float64
	// ModelSeed makes the simulator a different model of the same shape
	// behind the same name (`--model-seed`; 0: the default model): its
	// answers to the built-in answer-check prompts start with a token of
	// whitespace the default model never writes, chosen by the seed
	// (answers.go modelPrefix), so its replies differ from the default
	// model's (and from another seed's) from the first token, while every
	// check judges them as it judges the default model's: the same checks
	// pass, at the same rate, with the same faults.
	ModelSeed int64
	// Seed makes every random draw (EOS positions, generated text, faults)
	// deterministic (`--seed`). Default 0.
	Seed int64
	// DeterministicIDs makes the ids generated for requests without an
	// x-request-id header a pure function of Seed and the request number, so
	// they repeat across restarts. When false (the default) the Simulator's
	// start time is mixed in and ids differ from run to run. AddFlags sets it
	// when --seed is given explicitly.
	DeterministicIDs bool

	// TraceFile, when set, is truncated and receives one JSON line per
	// generation request with the socket write times (`--trace-file`).
	TraceFile string

	// ReasoningTokens makes a reasoning model (`--reasoning-tokens`; the
	// vLLM, SGLang, llama.cpp and Ollama personas, Ollama's with
	// ReasoningField "reasoning"): the first ReasoningTokens output tokens of a chat or
	// Responses request are its thinking (reasoning.go). Default 0.
	ReasoningTokens int
	// SpecDraftTokens makes llama-server's speculative decoding
	// (`--spec-draft-tokens`, llamacpp persona only): K draft tokens per
	// decode step, reported per response as timings.draft_n and
	// timings.draft_n_accepted by specDraft's rule with SpecAcceptance
	// (`--spec-acceptance`, in [0, 1]); 0 is off.
	SpecDraftTokens int
	SpecAcceptance  float64
	// ReasoningField is the chat field that carries the thinking
	// (`--reasoning-field`): "reasoning_content" (vLLM up to 0.10, the
	// default) or "reasoning" (the spelling newer vLLM and other servers
	// use).
	ReasoningField string
	// EmbeddingDim is the dimension of the vectors /v1/embeddings answers
	// (`--embedding-dim`, embed.go). Default DefaultEmbeddingDim.
	EmbeddingDim int

	// Faults is the initial fault injection; Simulator.SetFaults changes it
	// at run time. All off by default.
	Faults Faults

	// Light is the light streaming mode (`--light`, off by default): fixed
	// pre-encoded streams instead of the engine model, for measuring
	// clients (see Light).
	Light Light

	// Power is the GPU power model served on DCGMPath (power.go).
	Power Power

	// TLSCertFile and TLSKeyFile make the Simulator serve HTTPS with that
	// certificate (`--tls.cert-file`, `--tls.key-file`, together);
	// TLSGenerateDir makes New write a new CA and certificate there first
	// (GenerateCerts, `--tls.generate`). Default: plain HTTP.
	TLSCertFile, TLSKeyFile, TLSGenerateDir string
	// RequireHeaders are headers every request must carry, as a gateway
	// requires: "Name: value" lines (`--require-header "Name: value"`,
	// repeatable; a string so that a Config stays comparable). 401
	// otherwise, with the value received echoed in the message.
	RequireHeaders string
	// APIKey is required as "Authorization: Bearer <key>" on the /v1
	// routes, as vLLM's --api-key (401 {"error": "Unauthorized"}).
	APIKey string
	// ServedBy, when set, is answered as the x-served-by response header
	// of every generation request, as a gateway names the replica that
	// served it (`--served-by`, servedby.go); with ServedByReplicas > 1
	// the value is ServedBy-<n>, n = request number mod ServedByReplicas
	// (`--served-by-replicas`), as a gateway spreading requests.
	ServedBy         string
	ServedByReplicas int
	// SessionHeader names the request header that keeps a conversation on
	// one replica (`--session-header`, default DefaultSessionHeader; empty:
	// none): with ServedByReplicas > 1, a request carrying it is answered
	// by the replica its value hashes to, as a KV-cache-aware router keeps
	// sessions (Faults.SessionScatter breaks that). Each replica's prefix
	// cache is its own (servedby.go).
	SessionHeader string
	// LoRAModules are the LoRA adapters served beside Model: name=path
	// pairs separated by spaces, as vLLM's `--lora-modules` takes them (the
	// flag is repeatable; none by default). A string keeps Config
	// comparable; LoRA parses it.
	LoRAModules string
	// CloseAfterStream is how the connection of a streamed response ends
	// (`--close-after-stream`): CloseOff (the default; "" too),
	// CloseImmediate (as llama.cpp's llama-server), CloseOnReuse or
	// CloseAnnounced (connclose.go).
	CloseAfterStream string

	// Background is a constant production load served beside the HTTP
	// clients (`--background.rate`, off by default; background.go).
	Background Background
}

// DefaultConfig returns the defaults of `llmprobe simulate`. The timing
// defaults (10ms per step + 100µs per running sequence + 20µs per prefill
// token) mimic a ~8B model on one modern data-centre GPU: a TPOT of 10-20ms
// at moderate batch sizes and a few hundred ms of prefill for long prompts.
func DefaultConfig() Config {
	return Config{
		Engine:              EngineVLLM,
		Model:               "llmprobe-sim",
		SessionHeader:       DefaultSessionHeader,
		MaxNumSeqs:          256,
		MaxNumBatchedTokens: 8192,
		MaxModelLen:         8192,
		BlockSize:           16,
		NumGPUBlocks:        24576,
		EnablePrefixCaching: true,
		MetricsFormat:       MetricsFormatText,
		VLLMFrontend:        VLLMFrontendPython,
		PromptCacheTokens:   DefaultPromptCacheTokens,
		StepBase:            10 * time.Millisecond,
		ReasoningField:      ReasoningContentField,
		StepPerPrefillToken: 20 * time.Microsecond,
		StepPerSeq:          100 * time.Microsecond,
		EOSProbability:      0.005,
		SpecAcceptance:      0.7,
		Faults:              DefaultFaults(),
		Light:               DefaultLight(),
		Power:               DefaultPower(),
		Background:          DefaultBackground(),
	}
}

// Validate reports the first invalid parameter; the error names its flag.
func (c Config) Validate() error {
	switch {
	case c.Engine != "" && !slices.Contains(Engines, c.Engine):
		return fmt.Errorf("--engine must be one of %s, got %q", strings.Join(Engines, ", "), c.Engine)
	case strings.TrimSpace(c.Model) == "":
		return fmt.Errorf("--model must not be empty")
	case validateMetricsFormat(c.MetricsFormat) != nil:
		return validateMetricsFormat(c.MetricsFormat)
	case c.validateVLLMFrontend() != nil:
		return c.validateVLLMFrontend()
	case c.LegacyMetricNames && c.Engine != "" && c.Engine != EngineVLLM:
		return fmt.Errorf("--legacy-metric-names needs --engine %s (vLLM's names), got %q", EngineVLLM, c.Engine)
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("--max-num-seqs must be >= 1, got %d", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 1:
		return fmt.Errorf("--max-num-batched-tokens must be >= 1, got %d", c.MaxNumBatchedTokens)
	case c.MaxNumBatchedTokens < c.MaxNumSeqs:
		return fmt.Errorf("--max-num-batched-tokens (%d) must be >= --max-num-seqs (%d)", c.MaxNumBatchedTokens, c.MaxNumSeqs)
	case c.MaxModelLen < 2:
		return fmt.Errorf("--max-model-len must be >= 2, got %d", c.MaxModelLen)
	case c.BlockSize < 1:
		return fmt.Errorf("--block-size must be >= 1, got %d", c.BlockSize)
	case c.NumGPUBlocks < 1:
		return fmt.Errorf("--num-gpu-blocks must be >= 1, got %d", c.NumGPUBlocks)
	case c.NumGPUBlocks < ceilDiv(c.MaxModelLen, c.BlockSize):
		return fmt.Errorf("--num-gpu-blocks (%d) x --block-size (%d) tokens cannot hold one sequence of --max-model-len (%d)",
			c.NumGPUBlocks, c.BlockSize, c.MaxModelLen)
	case c.StepBase <= 0:
		return fmt.Errorf("--step-base must be > 0, got %s", c.StepBase)
	case c.StepPerPrefillToken < 0:
		return fmt.Errorf("--step-per-prefill-token must be >= 0, got %s", c.StepPerPrefillToken)
	case c.StepPerSeq < 0:
		return fmt.Errorf("--step-per-seq must be >= 0, got %s", c.StepPerSeq)
	case !isProbability(c.EOSProbability):
		return fmt.Errorf("--eos-probability must be in [0, 1], got %v", c.EOSProbability)
	case c.ReasoningField != "" && c.ReasoningField != ReasoningContentField && c.ReasoningField != ReasoningField:
		return fmt.Errorf("--reasoning-field must be %s or %s, got %q", ReasoningContentField, ReasoningField, c.ReasoningField)
	case c.ReasoningTokens < 0 || c.ReasoningTokens > MaxReasoningTokens:
		return fmt.Errorf("--reasoning-tokens must be in [0, %d], got %d", MaxReasoningTokens, c.ReasoningTokens)
	case c.EmbeddingDim < 0 || c.EmbeddingDim > MaxEmbeddingDim:
		return fmt.Errorf("--embedding-dim must be in [0, %d], got %d", MaxEmbeddingDim, c.EmbeddingDim)
	case c.ReasoningTokens > 0 && c.Engine == EngineOllama && c.ReasoningField != ReasoningField:
		return fmt.Errorf("--reasoning-tokens with --engine ollama needs --reasoning-field %s (Ollama streams the thinking as delta.reasoning)", ReasoningField)
	case c.ReasoningTokens > 0 && c.Engine != "" && c.Engine != EngineVLLM && c.Engine != EngineSGLang && c.Engine != EngineLlamaCpp && c.Engine != EngineOllama:
		return fmt.Errorf("--reasoning-tokens is served by the vllm, sglang, llamacpp and ollama personas only, not --engine %s", c.Engine)
	}
	light := func() error {
		if !c.Light.Enabled {
			return nil
		}
		return c.Light.Validate()
	}
	background := func() error { return c.Background.validate(c) }
	for _, check := range []func() error{c.validateLoRA, c.validateSpec, c.validatePromptCache, light, c.Power.Validate,
		c.validateGateway, c.validateCloseAfterStream, c.validateServedBy, background} {
		if err := check(); err != nil {
			return err
		}
	}
	return c.Faults.Validate()
}
