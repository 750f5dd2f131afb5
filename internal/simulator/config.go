package simulator

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
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

	// ReasoningTokens makes a reasoning model (`--reasoning-tokens`, vLLM
	// persona only): the first ReasoningTokens output tokens of a chat or
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

// Faults configures fault injection. Each probability is drawn independently
// per generation request from the seed; 0 (the default) disables the fault.
// A Faults is a plain value; copying it is safe.
type Faults struct {
	// HTTP429, HTTP500 and HTTP503 answer the request with that status and a
	// vLLM-shaped error body (429 carries `Retry-After: 1`).
	HTTP429 float64
	HTTP500 float64
	HTTP503 float64
	// StallBeforeFirstToken holds the request for StallDuration before it
	// enters the engine (streams have already sent their headers).
	StallBeforeFirstToken float64
	// StallMidStream pauses the response for StallDuration once half of the
	// output tokens were written.
	StallMidStream float64
	// StallDuration is how long a stall lasts. Default 30s.
	StallDuration time.Duration
	// CutStream ends a stream after half of its tokens, without usage chunk
	// and without `data: [DONE]` (non-streaming: half of the body, then the
	// connection is aborted).
	CutStream float64
	// MalformedEvent inserts one event whose JSON is truncated once half of
	// the tokens were written (non-streaming: the body is truncated JSON).
	MalformedEvent float64
	// ConnectionReset reads the request, then resets the TCP connection
	// (RST, no response bytes).
	ConnectionReset float64
	// SlowDrip writes the response one byte at a time, flushing each byte
	// and waiting SlowDripInterval between bytes.
	SlowDrip float64
	// SlowDripInterval is the pause between bytes of a slow drip. Default 1ms.
	SlowDripInterval time.Duration
	// Hang accepts the request (streams send their headers) but never
	// produces a token, while /health keeps answering 200.
	Hang float64
	// ErrorEvent ends a stream once half of its tokens were written with
	// an error event (`data: {"error": {...}}`), without usage and
	// without `data: [DONE]`, as llama.cpp and vLLM report an error met
	// mid-generation (non-streaming: a 500).
	ErrorEvent float64
	// WrongAnswers answers a prompt of the built-in answer-check set
	// wrongly (answers.go: yes and no swapped, the first number one higher,
	// the first word reversed). Other prompts are unchanged.
	WrongAnswers float64
	// Truncate cuts such an answer to its first half, then ends it (EOS,
	// finish_reason stop): replies cut short.
	Truncate float64
	// Nondeterministic flips the late, uncertain token of such an answer
	// (its last, when it has two or more) to the other likely one, as
	// batch variance flips a greedy choice; the top-2 margin reported there
	// is FragileMargin.
	Nondeterministic float64
	// TemplateBroken leaks the chat template's role tokens into every
	// answer (<|im_start|>assistant ... <|im_end|>), as a server with a
	// broken chat template does.
	TemplateBroken bool
	// BrokenToolCall breaks the arguments of a tool call (a request with
	// tools): their opening brace is left out, so they are not JSON.
	BrokenToolCall float64
	// WrongCount drops the last embedding of an embeddings answer, the
	// last result of a rerank answer and the last score of a score answer
	// (embed.go): a response with the wrong count.
	WrongCount float64
	// EmptyAnswer answers a generation request with nothing, without
	// engine work: a stream sends chat's role chunk (completions: none),
	// the usage chunk with 0 completion tokens when asked, then [DONE];
	// a non-streamed answer has empty content (text) and no tool call.
	// The finish_reason is stop.
	EmptyAnswer float64
	// SessionScatter sends a request that names its session
	// (Config.SessionHeader) to another replica than its session's
	// (`--fault.session-scatter`): a router that stopped keeping sessions,
	// whose later turns find none of their prefix cached. Only with
	// ServedByReplicas > 1; it draws apart from the other faults and is
	// not named in trace lines.
	SessionScatter float64
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

// DefaultFaults returns Faults with every fault off and the default stall
// duration (30s) and slow-drip interval (1ms).
func DefaultFaults() Faults {
	return Faults{StallDuration: 30 * time.Second, SlowDripInterval: time.Millisecond}
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
	case c.ReasoningTokens > 0 && c.Engine != "" && c.Engine != EngineVLLM:
		return fmt.Errorf("--reasoning-tokens is served by the vllm persona only, not --engine %s", c.Engine)
	}
	if err := c.validateLoRA(); err != nil {
		return err
	}
	if err := c.validateSpec(); err != nil {
		return err
	}
	if err := c.validatePromptCache(); err != nil {
		return err
	}
	if c.Light.Enabled {
		if err := c.Light.Validate(); err != nil {
			return err
		}
	}
	if err := c.Power.Validate(); err != nil {
		return err
	}
	if err := c.validateGateway(); err != nil {
		return err
	}
	if err := c.validateCloseAfterStream(); err != nil {
		return err
	}
	if err := c.validateServedBy(); err != nil {
		return err
	}
	if err := c.Background.validate(c); err != nil {
		return err
	}
	return c.Faults.Validate()
}

// Validate reports the first invalid fault parameter; the error names its flag.
func (f Faults) Validate() error {
	for _, p := range f.probabilities() {
		if !isProbability(p.p) {
			return fmt.Errorf("--fault.%s must be a probability in [0, 1], got %v", p.name, p.p)
		}
	}
	if f.StallDuration < 0 {
		return fmt.Errorf("--fault.stall-duration must be >= 0, got %s", f.StallDuration)
	}
	if f.SlowDripInterval < 0 {
		return fmt.Errorf("--fault.slow-drip-interval must be >= 0, got %s", f.SlowDripInterval)
	}
	return nil
}

type namedProbability struct {
	name string
	p    float64
}

// probabilities lists the fault probabilities in draw order; the names are
// the flag suffixes and the trace file's fault names.
func (f Faults) probabilities() []namedProbability {
	return []namedProbability{
		{faultReset, f.ConnectionReset},
		{faultHTTP429, f.HTTP429},
		{faultHTTP500, f.HTTP500},
		{faultHTTP503, f.HTTP503},
		{faultHang, f.Hang},
		{faultStallBefore, f.StallBeforeFirstToken},
		{faultStallMid, f.StallMidStream},
		{faultCut, f.CutStream},
		{faultMalformed, f.MalformedEvent},
		{faultSlowDrip, f.SlowDrip},
		{faultErrorEvent, f.ErrorEvent},
		{faultWrongAnswers, f.WrongAnswers},
		{faultTruncate, f.Truncate},
		{faultNondeterministic, f.Nondeterministic}, // appending keeps the draws of the others
		{faultBrokenTool, f.BrokenToolCall},         // appending keeps the draws of the others
		{faultWrongCount, f.WrongCount},             // appending keeps the draws of the others
		{faultEmptyAnswer, f.EmptyAnswer},           // appending keeps the draws of the others
		{faultSessionScatter, f.SessionScatter},     // last; drawn in servedby.go, skipped by drawFaults
	}
}

func isProbability(p float64) bool { return p >= 0 && p <= 1 } // false for NaN

// Capacity returns the steady-state request rate (requests per second) the
// engine serves when every request has inputLen prompt tokens (no prefix
// cache hits), ignores EOS and generates outputLen tokens, and the queue
// never runs dry. docs/simulator.md derives it:
//
//	occupancy  = (1/O) * sum_{k=0}^{O-1} ceil((I+k)/block-size)   blocks a running sequence holds on average
//	B_kv       = num-gpu-blocks / occupancy   (floor'ed when a sequence never outgrows its prompt blocks)
//	B          = min(max-num-seqs, B_kv)
//	decode-bound:  X = B / (O*(base + per_seq*B) + per_prefill_token*B*I)
//	budget-bound (when B*(I+O-1)/O > max-num-batched-tokens = T):
//	  P = T*I/(I+O-1), D = T-P, N = min(B, D + 1 + P/I)
//	  X = T / ((I+O-1) * (base + per_prefill_token*P + per_seq*N))
//
// and the result is the smaller of the two. When the batch is KV-bound and
// sequences outgrow the blocks they were admitted with, preemptions
// (recompute) make the true rate up to about 8% lower. It returns 0 when a
// request of that size cannot be served (inputLen+outputLen >
// max-model-len, lengths < 1, a full-length sequence does not fit the KV
// cache).
func (c Config) Capacity(inputLen, outputLen int) float64 {
	if inputLen < 1 || outputLen < 1 || inputLen > c.MaxModelLen-outputLen || c.BlockSize < 1 || c.MaxNumSeqs < 1 {
		return 0
	}
	if c.NumGPUBlocks < ceilDiv(inputLen+outputLen-1, c.BlockSize) {
		return 0
	}
	b := math.Min(float64(c.MaxNumSeqs), c.kvBatch(inputLen, outputLen))
	in, out := float64(inputLen), float64(outputLen)
	base := c.StepBase.Seconds()
	perTok := c.StepPerPrefillToken.Seconds()
	perSeq := c.StepPerSeq.Seconds()

	decodeBound := b / (out*(base+perSeq*b) + perTok*b*in)
	budget := float64(c.MaxNumBatchedTokens)
	work := in + out - 1 // tokens computed per request: the prompt + every output but the last
	if b*work/out <= budget {
		return decodeBound
	}
	prefill := budget * in / work
	seqs := math.Min(b, budget-prefill+1+prefill/in)
	budgetBound := budget / (work * (base + perTok*prefill + perSeq*seqs))
	return math.Min(decodeBound, budgetBound)
}

// kvBatch is how many sequences of inputLen prompt and outputLen output
// tokens the KV cache holds in steady state. A sequence holds
// ceil(computed/block-size) blocks and computes inputLen+k tokens in the
// k-th step of its life (k = 0..outputLen-1), so with ages spread evenly the
// pool holds num-gpu-blocks / (mean blocks over a lifetime) sequences. When
// a sequence never needs more blocks than its prompt's, the pool is
// partitioned exactly and the batch is an integer.
func (c Config) kvBatch(inputLen, outputLen int) float64 {
	first := ceilDiv(inputLen, c.BlockSize)
	last := ceilDiv(inputLen+outputLen-1, c.BlockSize)
	if first == last {
		return float64(c.NumGPUBlocks / last)
	}
	sum := 0
	for k := range outputLen {
		sum += ceilDiv(inputLen+k, c.BlockSize)
	}
	return float64(c.NumGPUBlocks) * float64(outputLen) / float64(sum)
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0, without overflow.
func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// AddFlags registers the simulator's flags (all but --web.listen-address) on
// cmd, with c's current values as defaults; parsing writes into c. A value
// that does not parse fails with an error naming its flag.
func AddFlags(cmd *kingpin.CmdClause, c *Config) {
	intFlag := func(name, help string, p *int) {
		cmd.Flag(name, help).Default(strconv.Itoa(*p)).SetValue(&flagValue[int]{name, p, strconv.Atoi, strconv.Itoa})
	}
	floatFlag := func(name, help string, p *float64) {
		cmd.Flag(name, help).Default(formatFloat(*p)).SetValue(&flagValue[float64]{name, p, parseFloat, formatFloat})
	}
	durationFlag := func(name, help string, p *time.Duration) {
		cmd.Flag(name, help).Default(p.String()).SetValue(&flagValue[time.Duration]{name, p, time.ParseDuration, time.Duration.String})
	}
	cmd.Flag("engine", "Persona: the engine whose metric names, info and tokenizer endpoints and stream quirks are "+
		"served ("+strings.Join(Engines, ", ")+"); the engine model underneath is the same.").
		Default(c.Engine).StringVar(&c.Engine)
	cmd.Flag("model", "Served model name: the id /v1/models lists and requests must name.").
		Default(c.Model).StringVar(&c.Model)
	intFlag("max-num-seqs", "Most sequences in the running batch (vLLM's max_num_seqs).", &c.MaxNumSeqs)
	intFlag("max-num-batched-tokens", "Token budget of one engine step, shared by decodes and chunked prefills.", &c.MaxNumBatchedTokens)
	intFlag("max-model-len", "Context length: prompt tokens + max_tokens must fit.", &c.MaxModelLen)
	intFlag("block-size", "Tokens per KV cache block.", &c.BlockSize)
	intFlag("num-gpu-blocks", "KV cache capacity in blocks; sequences are preempted (recompute) when it runs out.", &c.NumGPUBlocks)
	cmd.Flag("enable-prefix-caching", "Reuse KV blocks of identical prompt prefixes (full blocks, chained hashes).").
		Default(strconv.FormatBool(c.EnablePrefixCaching)).BoolVar(&c.EnablePrefixCaching)
	cmd.Flag("enable-prompt-tokens-details", "Report usage.prompt_tokens_details.cached_tokens (prompt tokens found "+
		"in the cache), as vLLM's flag of that name; llama.cpp's persona always does.").
		Default(strconv.FormatBool(c.EnablePromptTokensDetails)).BoolVar(&c.EnablePromptTokensDetails)
	cmd.Flag("enable-per-request-metrics", "Answer requests that set include_metrics with vLLM's per-request timing "+
		"(metrics{queue_time_ms, time_to_first_token_ms, generation_time_ms, ...}) from the simulator's own clock, as vLLM's flag "+
		"of that name; the vLLM persona only.").
		Default(strconv.FormatBool(c.EnablePerRequestMetrics)).BoolVar(&c.EnablePerRequestMetrics)
	cmd.Flag("legacy-metric-names", "Serve vLLM's metrics under the names of vLLM V1 before 0.9.2 "+
		"(vllm:gpu_cache_usage_perc, vllm:gpu_prefix_cache_*, vllm:time_per_output_token_seconds as the ITL histogram) "+
		"instead of the current ones (docs/engines.md).").
		Default(strconv.FormatBool(c.LegacyMetricNames)).BoolVar(&c.LegacyMetricNames)
	cmd.Flag("metrics-format", "Exposition format of /metrics: text (whatever Accept says), openmetrics (OpenMetrics 1.0 "+
		"whatever Accept says, as vLLM's Rust frontend) or protobuf (when Accept asks for it, else text).").
		Default(c.MetricsFormat).EnumVar(&c.MetricsFormat, MetricsFormats...)
	addPromptCacheFlags(cmd, c, intFlag)
	durationFlag("step-base", "Fixed duration of one engine step.", &c.StepBase)
	durationFlag("step-per-prefill-token", "Added step duration per prompt token computed in the step.", &c.StepPerPrefillToken)
	durationFlag("step-per-seq", "Added step duration per sequence scheduled in the step.", &c.StepPerSeq)
	floatFlag("eos-probability", "Probability that a generated token after min_tokens is EOS (requests without ignore_eos); "+
		"0 never stops early.", &c.EOSProbability)
	cmd.Flag("seed", "Seed of every random draw (EOS positions, text, faults); given explicitly, it also makes the "+
		"generated request ids repeat across restarts.").
		Default(strconv.FormatInt(c.Seed, 10)).IsSetByUser(&c.DeterministicIDs).
		SetValue(&flagValue[int64]{"seed", &c.Seed, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) },
			func(v int64) string { return strconv.FormatInt(v, 10) }})
	cmd.Flag("model-seed", "Serve a different model of the same shape behind the same name: its answers to the built-in "+
		"answer-check prompts differ from the default model's (0) from the first token (a leading whitespace token the seed "+
		"chooses) and pass the same checks; for measuring compare's agreement figure (docs/quality.md).").
		Default(strconv.FormatInt(c.ModelSeed, 10)).Int64Var(&c.ModelSeed)
	cmd.Flag("trace-file", "Write one JSON line per generation request with the Unix-nanosecond times its headers and "+
		"events were flushed (ground truth for client accuracy tests).").
		Default(c.TraceFile).StringVar(&c.TraceFile)
	addLightFlags(cmd, &c.Light)
	addPowerFlags(cmd, &c.Power)
	addGatewayFlags(cmd, c)
	addFeatureFlags(cmd, c)
	addReasoningFlags(cmd, c)
	addSpecFlags(cmd, c)
	cmd.Flag("embedding-dim", "Dimension of the vectors /v1/embeddings answers (0: the default).").
		Default(fmt.Sprint(c.EmbeddingDim)).IntVar(&c.EmbeddingDim)
	addCloseFlags(cmd, c)
	addServedByFlags(cmd, c)
	addBackgroundFlags(cmd, &c.Background)

	f := &c.Faults
	prob := func(name, help string, p *float64) {
		floatFlag("fault."+name, help+" Probability per request, 0..1.", p)
	}
	prob(faultHTTP429, "Answer 429 with Retry-After.", &f.HTTP429)
	prob(faultHTTP500, "Answer 500.", &f.HTTP500)
	prob(faultHTTP503, "Answer 503.", &f.HTTP503)
	prob(faultStallBefore, "Stall --fault.stall-duration before the request enters the engine (after stream headers).", &f.StallBeforeFirstToken)
	prob(faultStallMid, "Stall --fault.stall-duration once half of the tokens were written.", &f.StallMidStream)
	durationFlag("fault.stall-duration", "Duration of injected stalls.", &f.StallDuration)
	prob(faultCut, "End the stream after half of its tokens, without usage and [DONE].", &f.CutStream)
	prob(faultMalformed, "Insert one event with truncated JSON mid-stream.", &f.MalformedEvent)
	prob(faultReset, "Reset the TCP connection instead of answering.", &f.ConnectionReset)
	prob(faultSlowDrip, "Write the response one byte at a time, flushing each byte.", &f.SlowDrip)
	durationFlag("fault.slow-drip-interval", "Pause between bytes of a slow drip.", &f.SlowDripInterval)
	prob(faultHang, "Never produce a token (the request hangs) while /health answers 200.", &f.Hang)
	prob(faultErrorEvent, "End the stream with an error event once half of the tokens were written.", &f.ErrorEvent)
	prob(faultWrongAnswers, "Answer a prompt of the built-in answer-check set wrongly.", &f.WrongAnswers)
	prob(faultTruncate, "Cut the answer to a built-in answer-check prompt to its first half.", &f.Truncate)
	prob(faultNondeterministic, "Flip the late, low-margin token of a built-in answer-check answer (batch variance).", &f.Nondeterministic)
	cmd.Flag("fault."+faultTemplateBroken, "Leak the chat template's role tokens into every answer to a built-in answer-check prompt.").
		BoolVar(&f.TemplateBroken)
	prob(faultBrokenTool, "Break the JSON of a tool call's arguments (requests with tools).", &f.BrokenToolCall)
	prob(faultWrongCount, "Leave the last embedding, rerank result or score out of an answer (a wrong count).", &f.WrongCount)
	prob(faultSessionScatter, "With --served-by-replicas: answer a request that names its session (--session-header) "+
		"from another replica than its session's, as a router that stopped keeping sessions.", &f.SessionScatter)
	prob(faultEmptyAnswer, "Answer with nothing: chat's role chunk (and the usage, when asked), then [DONE]; non-streamed: empty content.", &f.EmptyAnswer)
}

// flagValue is a kingpin value whose parse errors name the flag.
type flagValue[T any] struct {
	name   string
	p      *T
	parse  func(string) (T, error)
	format func(T) string
}

func (v *flagValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return fmt.Errorf("--%s: invalid value %q", v.name, s)
	}
	*v.p = x
	return nil
}

func (v *flagValue[T]) String() string { return v.format(*v.p) }

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Fault names: flag suffixes (--fault.<name>) and the names in trace lines.
const (
	faultHTTP429     = "http-429"
	faultHTTP500     = "http-500"
	faultHTTP503     = "http-503"
	faultStallBefore = "stall-before-first-token"
	faultStallMid    = "stall-mid-stream"
	faultCut         = "cut-stream"
	faultMalformed   = "malformed-event"
	faultReset       = "connection-reset"
	faultSlowDrip    = "slow-drip"
	faultHang        = "hang"
	faultErrorEvent  = "error-event"

	faultWrongAnswers     = "wrong-answers"
	faultTruncate         = "truncate"
	faultNondeterministic = "nondeterministic"
	faultTemplateBroken   = "template-broken"
	faultBrokenTool       = "broken-tool-call"
	faultWrongCount       = "wrong-count"
	faultEmptyAnswer      = "empty-answer"
	faultSessionScatter   = "session-scatter"
)
