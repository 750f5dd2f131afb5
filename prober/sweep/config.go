package sweep

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/knob"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Load modes of a sweep (fingerprint.Load.Mode).
const (
	// ModeOpen: open loop, an arrival process per rate (--rates).
	ModeOpen = "open"
	// ModeClosed: closed loop, N requests always in flight (--concurrency).
	ModeClosed = "closed"
	// ModeBoth: open loop whose arrivals wait for one of --max-concurrency
	// slots; the wait is client queue time.
	ModeBoth = "both"
	// ModeBurst: --rates inf, every request of the step at once.
	ModeBurst = "burst"
)

// Defaults of a Config.
const (
	DefaultDuration        = 5 * time.Second
	DefaultMinPrompts      = 10
	DefaultWarmups         = 2
	DefaultRounds          = 1
	DefaultMetricsInterval = time.Second
	DefaultIdleTimeout     = 30 * time.Second
	DefaultTimeout         = 5 * time.Minute
	DefaultAutoStart       = 1.0
	DefaultAutoMaxSteps    = 16
	DefaultAutoTolerance   = 0.05
	// MaxStepRequests bounds the requests of one step (NumPrompts,
	// MinPrompts, Warmups, and rate x Duration of an open loop): a step
	// holds a summary of every request for its statistics (about 120 bytes
	// plus 8 per ITL gap) and its arrival schedule (8 bytes each), so this
	// bound keeps one step within a few hundred MB.
	MaxStepRequests = 2_000_000
	// DefaultMaxStepBytes is Config.MaxStepBytes when left 0: 1 GiB of
	// records per step.
	DefaultMaxStepBytes = 1 << 30
)

// FieldError is a configuration error that names the Config field at
// fault, as a Go field path ("Rates", "Workload.InputTokens",
// "Validity.MaxSendLag": a Field of the settings table). A surface with
// its own names for the fields (the CLI's flags, the YAML and JSON keys)
// maps Field to them and renders the reason with Reason. Err is the
// reason alone; where it names another setting it holds that setting's
// field path in braces ("needs {Workload.PrefixTokens} > 0"), which
// Reason spells as the surface does ("needs --prefix-len > 0").
type FieldError struct {
	Field string
	Err   error
}

// Error formats the error as "Field: reason", the references in the
// reason as field paths ("needs Workload.PrefixTokens > 0").
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason(nil) }

// Reason is the reason with its references to other settings spelled by
// spell (FlagSpelling, SpecKey; nil: their field paths).
func (e *FieldError) Reason(spell Spelling) string { return knob.Render(e.Err.Error(), spell) }

// Unwrap returns the reason.
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Config is a whole sweep. Build it from a surface's values with the
// settings table (Settings, Setting.Apply; the Parse* helpers for lists),
// or by hand in tests, then Validate. Every field has an entry in the
// table (settings_table.go), a user setting or one marked Internal. A
// Config is a plain value.
type Config struct {
	// Target is the base URL of the OpenAI-compatible server (no /v1).
	Target string
	// MetricsURL is the server's /metrics (default Target + "/metrics").
	MetricsURL string
	// GPUMetricsURL is a DCGM exporter's /metrics and GPUSelector the
	// label selector choosing the target's GPUs on it (energy.go).
	GPUMetricsURL, GPUSelector string
	// Engine is the serving engine whose metric names are read (idle
	// proofs, server-side figures, the probe's queue check): "" or "auto"
	// detects it (prober/endpoint), else one of engine.Names ("vllm",
	// "sglang", "tgi", "llamacpp", "ollama").
	Engine string
	// ServerTiming is ServerTimingAuto ("" is auto: include_metrics to a
	// vLLM server) or ServerTimingOff (docs/measurement.md).
	ServerTiming string
	// Model is the model id; empty means the first of /v1/models.
	Model string
	// API names a row of prober/client's API table (client.APIs).
	API string
	// BatchSize is the inputs of an embeddings request, the documents of a
	// rerank query; RerankPath the path of rerank requests.
	BatchSize  int
	RerankPath string
	// APIKey is sent as a bearer token; it never appears in artifacts.
	APIKey config.Secret
	// Timeout, TTFTTimeout and StallTimeout bound each request (0 = no
	// separate TTFT or stall bound).
	Timeout, TTFTTimeout, StallTimeout time.Duration

	// Workload is the request distribution; WorkloadSource says where it
	// came from ("flags" or the --workload file path).
	Workload       workload.Spec
	WorkloadSource string
	// FreshPrefix draws a new shared prefix for every step (with
	// Workload.PrefixTokens > 0), so steps do not warm each other's cache.
	FreshPrefix bool
	// SavePrompts hands each request's prompt text to the RecordSink
	// (StepRecord.Prompt; records.jsonl with --save-prompts).
	SavePrompts bool

	// Rates are the open-loop rates in req/s (+Inf: a burst step); Auto
	// searches the knee instead; Concurrency lists closed-loop levels.
	// Exactly one of Rates, Auto, Concurrency is set.
	Rates       []float64
	Auto        bool
	Concurrency []int
	// RatesText is --rates as given (for the fingerprint).
	RatesText string
	// MaxConcurrency caps the requests in flight of an open loop; arrivals
	// wait for a slot (mode "both").
	MaxConcurrency int
	// Arrival is the arrival process ("poisson", "gamma", "constant") and
	// Burstiness its gamma shape.
	Arrival    string
	Burstiness float64
	// Unscaled sends each open-loop step on the arrival process's own
	// absolute schedule (N arrivals, the last wherever it falls) instead of
	// vllm bench serve's count-conditioned one (the last arrival at exactly
	// N / rate). Default false: normalized, as vLLM.
	Unscaled bool
	// NumPrompts (requests per step) or Duration (per step): one is set.
	NumPrompts int
	Duration   time.Duration
	// MinPrompts is the least number of requests of an open-loop step
	// bounded by Duration: when fewer arrivals fall in the duration, the
	// step runs until MinPrompts arrivals (so a low rate still gives a
	// sample). Default 0: none.
	MinPrompts int
	// MaxStepBytes caps the bytes one step's records take in the sink
	// (records.jsonl; 0 means DefaultMaxStepBytes). The sink applies it
	// (StepByteCap): when its Record returns ErrStepCapReached, the step
	// stops sending, is flagged FlagByteCap and the sweep stops cleanly
	// after it (Result.InterruptedReason "byte cap: ...").
	MaxStepBytes int64
	// Warmups is the number of unmeasured requests sent before each step.
	Warmups int
	// Rounds repeats each level.
	Rounds int
	// SLO holds the --goodput thresholds.
	SLO slo.SLO
	// Percentiles are extra percentiles reported for every latency metric.
	Percentiles []float64
	// Seed seeds arrivals and workload draws.
	Seed int64
	// PromptNonce is mixed into the prompt texts (not the lengths nor the
	// arrivals, which Seed alone decides), so that a run sends prompts no
	// earlier run sent and a server's prefix or prompt cache cannot answer
	// them (docs/sweep.md "Prompt nonce and cache hits"). 0 (the default):
	// Prepare draws a fresh one (NewPromptNonce); a value repeats the
	// prompt texts of the run that used it (Result.PromptNonce). A dataset
	// is sent as it is.
	PromptNonce int64

	// ShardIndex and ShardCount make this sweep one shard of ShardCount
	// (0 or 1: not sharded; see Sharded): it sends each level at
	// level/ShardCount with a seed of its own and NumPrompts/ShardCount
	// requests, and records the shard in the fingerprint.
	ShardIndex, ShardCount int
	// StartAt, when set, aligns the steps on wall-clock times: the k-th
	// step's load starts at StartAt + k*StepInterval (or as soon as the
	// step is ready, when it is late), so the shards start each step
	// together.
	StartAt      time.Time
	StepInterval time.Duration

	// MetricsInterval is the during-step scrape period; IdleTimeout bounds
	// the wait for an idle server before each step.
	MetricsInterval time.Duration
	IdleTimeout     time.Duration

	// SweepMode is SweepIsolated (the default; "" means it too: every step
	// starts from an idle server) or SweepBackground (steps run beside the
	// server's production traffic and the knee is of its total load,
	// background.go); BackgroundBand is the background mode's band of the
	// production rate within a step (0: DefaultBackgroundBand).
	SweepMode      string
	BackgroundBand float64

	// Validity thresholds.
	Validity ValidityOptions
	// Search tunes --rates auto.
	Search SearchOptions

	// OutDir is the parent of run directories; Name names this run.
	OutDir string
	Name   string
	// Metadata holds --metadata key=value pairs, written into result.json
	// and the fingerprint.
	Metadata map[string]string
	// Embedded is true when Target is the in-process simulator (the CPU
	// check is then skipped: the simulator shares the process).
	Embedded bool
	// ReferenceCapacity is the target's capacity for the workload when it
	// is known independently, in req/s (the built-in simulator's, from its
	// parameters); 0 = unknown. It is reported beside the knee
	// (result.json knee.reference_capacity, the verdict, the table).
	ReferenceCapacity float64
	// HTTPConfig is the target's HTTP client configuration (TLS,
	// credentials, proxy, http_headers: prometheus/common's, as
	// --http.config.file reads it); every request of the sweep, /metrics
	// included, goes through a client built from it. Its secrets never
	// appear in artifacts. Zero: a plain client.
	HTTPConfig config.HTTPClientConfig
	// AttributionHeaders are the response headers that say which backend
	// answered (`--attribution-header`, a daemon target's
	// attribution_headers): every request records them (Record.Attribution,
	// Record.Backend in records.jsonl). At most client.MaxAttributionHeaders.
	AttributionHeaders []string
	// SLOHeaders sends SLO with every request as the headers of SLO-aware
	// routing (endpoint.SLOHeaders; --slo-headers, a daemon sweep's
	// target's slo_headers). Default false.
	SLOHeaders bool

	// Trace, when set, replays a trace instead of drawing arrivals (sweep
	// --trace, see trace.go): one step per TraceSpeeds value (and round),
	// each sending the trace's entries at their offsets divided by the
	// speed, with their lengths and hash_ids prefixes; NumPrompts and
	// Duration, when set, cut it. Rates, Auto and Concurrency stay empty.
	Trace *workload.Trace
	// TraceSpeeds are the replay speeds (1: the trace's own timing, 2:
	// twice as fast), in the order run.
	TraceSpeeds []float64

	// AnswerChecks, when set, is sent once after the last step of a
	// complete sweep, each check in order through the sweep's request path
	// and judged (answers.go): Result.Answers. No step counts them. Nil:
	// none.
	AnswerChecks *answer.Set

	// CostPerHour is the price of the target's serving in USD per hour
	// (--cost-per-hour; 0: no price). With a price, every step and the
	// knee report the cost per million good output tokens (CostPerMillion).
	CostPerHour float64

	// TraceSampleRatio is the share of the sweep's requests traced when
	// Tracer is set (0: DefaultTraceSampleRatio); a traced request's trace
	// id is in its records.jsonl line.
	TraceSampleRatio float64
	// Tracer, when set, gives the tracer of a sampling ratio (the daemon's
	// tracing.Provider.Tracer): the sweep's requests then carry their
	// traceparent and are sent in client spans (prober/tracing). Nil: no
	// tracing.
	Tracer func(ratio float64) trace.Tracer
}

// DefaultTraceSampleRatio is the default Config.TraceSampleRatio: a sweep
// sends many requests, so one in a hundred is traced.
const DefaultTraceSampleRatio = 0.01

// tracer is the sweep's tracer (nil without Config.Tracer).
func (c *Config) tracer() trace.Tracer {
	if c.Tracer == nil {
		return nil
	}
	r := c.TraceSampleRatio
	if r == 0 {
		r = DefaultTraceSampleRatio
	}
	return c.Tracer(r)
}

// Mode returns the load mode: ModeClosed, ModeBurst (every rate inf),
// ModeBoth (rates with MaxConcurrency) or ModeOpen.
func (c *Config) Mode() string {
	switch {
	case len(c.Concurrency) > 0:
		return ModeClosed
	case !c.Auto && len(c.Rates) > 0 && !slices.ContainsFunc(c.Rates, func(r float64) bool { return !math.IsInf(r, 1) }):
		return ModeBurst
	case c.MaxConcurrency > 0:
		return ModeBoth
	}
	return ModeOpen
}

// StepByteCap returns the cap on a step's record bytes: MaxStepBytes, or
// DefaultMaxStepBytes when it is 0.
func (c *Config) StepByteCap() int64 {
	if c.MaxStepBytes > 0 {
		return c.MaxStepBytes
	}
	return DefaultMaxStepBytes
}

// HasBurst reports whether a step runs at rate inf.
func (c *Config) HasBurst() bool {
	return slices.ContainsFunc(c.Rates, func(r float64) bool { return math.IsInf(r, 1) })
}

// The values of Config.ServerTiming.
const (
	ServerTimingAuto = "auto" // include_metrics to a vLLM server
	ServerTimingOff  = "off"  // to no server
)

// Validate checks every field, the numbers against the settings table's
// bounds, and the rules between fields; it is the only validation of a
// sweep's settings. An error is a *FieldError naming the field.
func (c *Config) Validate() error {
	if c.Target != "" && !strings.HasPrefix(c.Target, "http://") && !strings.HasPrefix(c.Target, "https://") {
		return fieldErr("Target", "must be an http:// or https:// URL, got %q", c.Target)
	}
	if _, err := client.ParseAPI(c.API); err != nil {
		return &FieldError{Field: "API", Err: err}
	}
	switch c.RerankPath {
	case "", client.RerankV1, client.RerankBare, client.RerankScore:
	default:
		return fieldErr("RerankPath", "must be %s, %s or %s, got %q", client.RerankV1, client.RerankBare, client.RerankScore, c.RerankPath)
	}
	if _, err := engine.Parse(c.Engine); err != nil {
		return fieldErr("Engine", "must be auto, %s, got %q", engineNames(), c.Engine)
	}
	switch c.ServerTiming {
	case "", ServerTimingAuto, ServerTimingOff:
	default:
		return fieldErr("ServerTiming", "must be %s or %s, got %q", ServerTimingAuto, ServerTimingOff, c.ServerTiming)
	}
	if err := c.Workload.Validate(); err != nil {
		if c.WorkloadSource != "" && c.WorkloadSource != "flags" && c.Workload.Dataset == nil {
			return fieldErr("Workload", "%s: %w", c.WorkloadSource, err)
		}
		return workloadFieldError(err)
	}
	if i := c.Workload.Request.ImagesFeature(); i >= 0 && !c.api().Images {
		return fieldErr("Workload", "request.features[%d].kind: images are sent with api %s only (image content parts), the api is %s",
			i, client.NamesWith(client.WithImages, "and"), c.API)
	}
	if err := c.validateShard(); err != nil {
		return err
	}
	if _, err := client.NewAttribution(c.AttributionHeaders); err != nil {
		return fieldErr("AttributionHeaders", "%w", err)
	}
	if err := c.validateMultiTurn(); err != nil {
		return err
	}
	if c.FreshPrefix && c.Workload.PrefixTokens == 0 {
		return fieldErr("FreshPrefix", "needs {Workload.PrefixTokens} > 0")
	}
	if err := c.validateTrace(); err != nil {
		return err
	}
	if err := c.validateBackground(); err != nil {
		return err
	}
	if err := c.validateEnergy(); err != nil {
		return err
	}
	if err := c.validateAnswerChecks(); err != nil {
		return err
	}
	n := 0 // the loads given: a trace, a rate list, auto, concurrency
	for _, given := range []bool{c.Trace != nil, len(c.Rates) > 0, c.Auto, len(c.Concurrency) > 0} {
		if given {
			n++
		}
	}
	if err := ProblemError(knob.RatesOrConcurrency(len(c.Rates) > 0 || c.Auto, len(c.Concurrency) > 0)); err != nil {
		return err
	}
	if n != 1 {
		return fieldErr("Rates", "give exactly one of {Rates} LIST, {Rates} auto or {Concurrency} LIST")
	}
	for _, r := range c.Rates {
		if err := checkRate(r, r); err != nil {
			return err
		}
	}
	for _, x := range c.Concurrency {
		if err := checkBound("Concurrency", float64(x), x); err != nil {
			return err
		}
	}
	if err := c.validateBounds(); err != nil {
		return err
	}
	if len(c.Concurrency) > 0 && c.MaxConcurrency > 0 {
		return fieldErr("MaxConcurrency", "applies to {Rates} only; {Concurrency} already bounds the requests in flight")
	}
	if err := ProblemError(knob.Arrival(c.Arrival, c.Burstiness)); err != nil {
		return err
	}
	switch {
	case c.NumPrompts > 0 && c.Duration > 0:
		return fieldErr("NumPrompts", "give {NumPrompts} or {Duration} per step, not both")
	case c.NumPrompts == 0 && c.Duration == 0 && c.Trace == nil:
		return fieldErr("Duration", "give {NumPrompts} or {Duration} per step")
	}
	if c.HasBurst() && c.NumPrompts == 0 {
		return fieldErr("NumPrompts", "{Rates} inf sends a step's requests at once: give {NumPrompts}")
	}
	for _, p := range c.Percentiles {
		if err := checkBound("Percentiles", p, p); err != nil {
			return err
		}
	}
	if err := c.SLO.Validate(); err != nil {
		return fieldErr("SLO", "%w", err)
	}
	if c.OutDir == "" {
		return fieldErr("OutDir", "must not be empty")
	}
	return nil
}

// checkRate checks one rate of Rates against the table's bound (the
// reason "rate must be > 0, got X").
func checkRate(r float64, got any) error {
	if p := LookupField("Rates").Bound.check(r); p != "" {
		return fieldErr("Rates", "rate %s, got %v", p, got)
	}
	return nil
}

// workloadFieldError maps a workload.Spec validation error of a flag-built
// spec to the Workload field at fault.
func workloadFieldError(err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "input_tokens"):
		if strings.Contains(msg, "range_ratio") {
			return &FieldError{Field: "Workload.InputTokens.RangeRatio", Err: err}
		}
		return &FieldError{Field: "Workload.InputTokens", Err: err}
	case strings.HasPrefix(msg, "output_tokens"):
		if strings.Contains(msg, "range_ratio") {
			return &FieldError{Field: "Workload.OutputTokens.RangeRatio", Err: err}
		}
		return &FieldError{Field: "Workload.OutputTokens", Err: err}
	case strings.HasPrefix(msg, "prefix_tokens"):
		return &FieldError{Field: "Workload.PrefixTokens", Err: err}
	case strings.HasPrefix(msg, "dataset"):
		return &FieldError{Field: "Workload.Dataset", Err: err}
	}
	return &FieldError{Field: "Workload", Err: err}
}

// ProblemError is the *FieldError of a rule of prober/knob (nil for
// nil): its knob is the field, its reason names other settings as
// references each surface spells.
func ProblemError(p *knob.Problem) error {
	if p == nil {
		return nil
	}
	return &FieldError{Field: p.Knob, Err: errors.New(p.Reason)}
}

// IsFieldError reports whether err is (or wraps) a *FieldError.
func IsFieldError(err error) bool {
	var fe *FieldError
	return errors.As(err, &fe)
}

// engineNames lists the engines --engine takes besides auto.
func engineNames() string {
	s := make([]string, len(engine.Names))
	for i, n := range engine.Names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// rerankPath is the endpoint's rerank path: RerankPath for api rerank, ""
// for the others.
func (c *Config) rerankPath() string {
	if !client.WithPathChoice(c.api()) {
		return ""
	}
	return c.RerankPath
}

// api is the row of the sweep's API (the zero row when it names none).
func (c *Config) api() client.API {
	a, _ := client.Lookup(c.API)
	return a
}
