package simulator

// The simulator's command-line flags (`llmprobe simulate`), each writing
// into a Config.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

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
	cmd.Flag("vllm-frontend", "Which vLLM HTTP server the vllm persona looks like: python (FastAPI) or rust "+
		"(VLLM_USE_RUST_FRONTEND=1: /metrics always OpenMetrics with its own families, no token counters or cache_config_info; "+
		"the finish_reason on a chunk of its own; /v1/models owned_by vllm-frontend-rs without max_model_len).").
		Default(c.VLLMFrontend).EnumVar(&c.VLLMFrontend, VLLMFrontends...)
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
