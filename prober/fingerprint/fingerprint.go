// Package fingerprint owns the experiment fingerprint written into a run
// directory's manifest.json (DESIGN.md §9 point 3): which llmprobe build ran,
// the exact command line with secrets redacted, the client host, the target
// (model, server version, engine config), the workload and its hash, the load
// settings and the UTC start and end of every step.
//
// A field that could not be read holds the string "not-recorded" (NotRecorded),
// never a guess. Numeric fields that may be unknown use Int, which encodes as
// a JSON number or as "not-recorded"; label sets use Labels, which encodes a
// nil map as "not-recorded".
//
// The package reads the local build and host (Tool, Host) and parses
// vllm:cache_config_info from a /metrics exposition (EngineConfig); what the
// target serves comes from prober/endpoint's discovery and everything else
// is filled by the caller (the sweep).
package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmprobe/llmprobe/prober/redact"
)

// NotRecorded is the value of every fingerprint field that could not be read.
const NotRecorded = "not-recorded"

// Fingerprint describes one experiment. The zero value is not useful: start
// from New, which fills Tool and Host and sets every unknown string field to
// NotRecorded. A Fingerprint is a plain value; it is not safe for concurrent
// mutation.
type Fingerprint struct {
	// Tool is the llmprobe build that ran the experiment.
	Tool Tool `json:"llmprobe"`
	// Command is the full command line (program name first), redacted with
	// redact.Args.
	Command []string `json:"command"`
	// Client is the host that generated the load.
	Client Host `json:"client"`
	// Target is the endpoint under test.
	Target Target `json:"target"`
	// Workload is the request distribution and its hash.
	Workload Workload `json:"workload"`
	// Load holds the arrival and sweep settings.
	Load Load `json:"load"`
	// Steps holds the UTC start and end of every step, in run order.
	Steps []StepWindow `json:"steps"`
	// Start and End are the UTC wall-clock start and end of the whole run
	// (zero End while it runs).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Metadata holds free --metadata key=value pairs (values redacted when
	// the key looks secret).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Target describes the endpoint under test. Fields the sweep could not read
// are NotRecorded.
type Target struct {
	// URL is the base URL, with any userinfo redacted.
	URL string `json:"url"`
	// API is the name of a row of prober/client's API table.
	API string `json:"api"`
	// Model is the model id the requests named.
	Model string `json:"model"`
	// ServedModel and Root come from GET /v1/models.
	ServedModel string `json:"served_model"`
	Root        string `json:"root"`
	// MaxModelLen is the most prompt + output tokens one request may hold:
	// /v1/models max_model_len when the server lists it, else the engine's
	// own context length (llama.cpp /props n_ctx, TGI /info
	// max_total_tokens, ...). MaxModelLenSource names where it was read,
	// e.g. "/v1/models max_model_len" or "/props
	// default_generation_settings.n_ctx" (NotRecorded with it).
	MaxModelLen       Int    `json:"max_model_len"`
	MaxModelLenSource string `json:"max_model_len_source"`
	// ServerVersion is the server's version: vLLM's GET /version, or the
	// engine's own (llama.cpp /props build_info, TGI /info, SGLang
	// /get_server_info, Ollama /api/version).
	ServerVersion string `json:"server_version"`
	// Engine is the serving engine whose metrics were read ("vllm",
	// "sglang", "tgi", "llamacpp", "ollama") and EngineSource how it
	// became known: "config" (--engine), "/metrics names", "/v1/models
	// owned_by" or the info endpoint that answered in its shape (e.g.
	// "/props"). Both are NotRecorded for a server that was not
	// recognised.
	Engine       string `json:"engine"`
	EngineSource string `json:"engine_source"`
	// EngineConfig holds the engine's settings: the labels of
	// vllm:cache_config_info, or what the engine's info endpoint reports.
	EngineConfig Labels `json:"engine_config"`
	// NotRecorded says, per field read from the server's own endpoints
	// ("server_version", "engine_config") that is NotRecorded, why: the
	// engine endpoint calls that failed with their error class (e.g.
	// "POST /api/show: HTTP 404 Not Found (http_4xx)"); nil (left out)
	// when each was recorded.
	NotRecorded map[string]string `json:"not_recorded,omitempty"`
	// Tokenizer is how token lengths were made to match the server:
	// "server /tokenize", "calibrated" or NotRecorded.
	Tokenizer string `json:"tokenizer"`
	// MetricsURL is the /metrics URL scraped for snapshots (NotRecorded when
	// none was scraped).
	MetricsURL string `json:"metrics_url"`
	// CostPerHour is the price of the target's serving in USD per hour, as
	// given (--cost-per-hour, the target's cost_per_hour); 0 (left out):
	// no price.
	CostPerHour float64 `json:"cost_per_hour_usd,omitempty"`
	// HTTPConfig summarises the target's HTTP client configuration
	// without its secrets (SummarizeHTTP); nil (left out) in a fingerprint
	// written before it was recorded.
	HTTPConfig *HTTPConfig `json:"http_config,omitempty"`
	// GPU describes the GPUs whose energy a sweep read (--gpu-metrics-url,
	// a target's gpu_metrics_url); nil (left out) without a GPU source.
	GPU *GPU `json:"gpu,omitempty"`
}

// GPU is what a DCGM exporter said of the selected GPUs when the sweep
// began: their count, modelName and summed power limit (0: not exposed),
// beside the redacted source and the selector.
type GPU struct {
	MetricsURL  string  `json:"metrics_url"`
	Selector    string  `json:"selector,omitempty"`
	Count       int     `json:"count"`
	Model       string  `json:"model"`
	PowerLimitW float64 `json:"power_limit_w,omitempty"`
}

// Workload identifies the request distribution: its canonical JSON form and
// the SHA-256 of that form (see CanonicalJSON).
type Workload struct {
	// Spec is the workload in canonical JSON (keys sorted, no spaces).
	Spec json.RawMessage `json:"spec,omitempty"`
	// SHA256 is the hex SHA-256 of Spec, or NotRecorded.
	SHA256 string `json:"sha256"`
	// Source is where the workload came from: a file path or "flags".
	Source string `json:"source"`
	// SavePrompts says whether prompt text was written to records.jsonl.
	SavePrompts bool `json:"save_prompts"`
	// Dataset identifies the dataset file the prompts came from (nil for a
	// drawn workload).
	Dataset *Dataset `json:"dataset,omitempty"`
	// Trace is the replayed trace (nil: none).
	Trace *Trace `json:"trace,omitempty"`
}

// Dataset identifies a workload's dataset file: never its text.
type Dataset struct {
	// Path is the file as given, Format "jsonl" or "sharegpt", SHA256 the
	// hex SHA-256 of its bytes; Entries its usable entries, Sampled (at the
	// end) those measured (the subset of at most MaxEntries chosen from the
	// seed; 0: every entry) and Used those of the subset left after
	// ShareGPT's length pruning.
	Path    string `json:"path"`
	Format  string `json:"format"`
	Entries int    `json:"entries"`
	Used    int    `json:"used"`
	SHA256  string `json:"sha256"`
	// Sampling is the sampling mode; Tokenizer how the entries' tokens
	// were counted (server-tokenize or calibrated).
	Sampling  string `json:"sampling"`
	Tokenizer string `json:"tokenizer"`
	// Sampled and MaxEntries: see Path.
	Sampled    int `json:"sampled"`
	MaxEntries int `json:"max_entries"`
}

// Load holds the arrival process and the sweep's settings as the user gave
// them. Zero numbers mean "not set".
type Load struct {
	// Mode is "open" (rates), "closed" (concurrency), "both" (rates with a
	// max concurrency) or "burst" (rate inf).
	Mode string `json:"mode"`
	// Arrival is "poisson", "gamma" or "constant"; Burstiness is the gamma
	// shape (1 = Poisson).
	Arrival    string  `json:"arrival,omitempty"`
	Burstiness float64 `json:"burstiness,omitempty"`
	// Unscaled is true when open-loop steps used the arrival process's own
	// schedule rather than vllm bench serve's normalized one.
	Unscaled bool `json:"unscaled_arrivals,omitempty"`
	// Rates are the requested rates as given ("1,2,4", "auto", "inf").
	Rates []string `json:"rates,omitempty"`
	// Concurrency lists the closed-loop levels; MaxConcurrency caps an open
	// loop.
	Concurrency    []int `json:"concurrency,omitempty"`
	MaxConcurrency int   `json:"max_concurrency,omitempty"`
	// NumPrompts per step, or Duration per step; with a Duration,
	// MinPrompts is the least number of requests of an open-loop step.
	NumPrompts int    `json:"num_prompts,omitempty"`
	Duration   string `json:"duration,omitempty"`
	MinPrompts int    `json:"min_prompts,omitempty"`
	// FreshPrefix is true when every step drew a new shared prefix.
	FreshPrefix bool `json:"fresh_prefix"`
	// Warmups is the number of unmeasured warmup requests per step.
	Warmups int `json:"warmups"`
	// Rounds repeats each step.
	Rounds int `json:"rounds,omitempty"`
	// Seed seeds arrivals and workload draws.
	Seed int64 `json:"seed"`
	// Goodput holds the SLO thresholds in milliseconds by vLLM key
	// (ttft, tpot, e2el).
	Goodput map[string]float64 `json:"goodput_ms,omitempty"`
	// Validity holds the thresholds that decided each step's validity.
	Validity *Validity `json:"validity,omitempty"`
	// Search holds the --rates auto settings (nil for a ladder).
	Search *Search `json:"search,omitempty"`
	// Shard is set when the run is one shard of a sharded sweep (nil
	// otherwise, and in a merged run).
	Shard *Shard `json:"shard,omitempty"`
	// StartAt is the wall-clock time the steps were aligned on (RFC 3339,
	// with StepInterval between step starts), when given.
	StartAt      string `json:"start_at,omitempty"`
	StepInterval string `json:"step_interval,omitempty"`
}

// Shard identifies one shard of a sharded sweep: Index in 0..Count-1 and
// the seed it drew from (derived from Load.Seed and Index).
type Shard struct {
	Index int   `json:"index"`
	Count int   `json:"count"`
	Seed  int64 `json:"seed"`
}

// Validity holds the validity thresholds of a sweep.
type Validity struct {
	// MaxSendLagMS is the send-lag p99 (ms) above which a step is
	// client-saturated; with fewer than 100 requests, at least two sends
	// must exceed it.
	MaxSendLagMS float64 `json:"max_send_lag_ms"`
	// MaxClientCPU is the process CPU (cores) above which a step is
	// client-saturated; CPUChecked is false when the check was skipped (the
	// in-process simulator shares the process).
	MaxClientCPU float64 `json:"max_client_cpu"`
	CPUChecked   bool    `json:"client_cpu_checked"`
	// MaxSchedLatencyMS is the Go scheduling-latency p99 (ms) above which
	// a step is client-read-lag (0 in results written before the check).
	MaxSchedLatencyMS float64 `json:"max_sched_latency_ms,omitempty"`
	// MaxErrorRate is the failed/requests ratio above which a step is
	// flagged errors.
	MaxErrorRate float64 `json:"max_error_rate"`
	// GoodputRatio is the keep-up ratio a level must reach for the knee.
	GoodputRatio float64 `json:"goodput_ratio"`
}

// Search holds the settings of an adaptive knee search.
type Search struct {
	// Start is the first rate as given: "probe" (a closed-loop throughput
	// probe chooses it) or a number in req/s.
	Start string `json:"start"`
	// MaxSteps, Tolerance and Retries bound the search: the most steps
	// run, the relative width at which it stops and the reruns of an
	// invalid level.
	MaxSteps  int     `json:"max_steps"`
	Tolerance float64 `json:"tolerance"`
	Retries   int     `json:"retries"`
}

// StepWindow is the UTC wall-clock window of one step.
type StepWindow struct {
	Index int `json:"index"`
	// Label names the step, e.g. "rate=4" or "concurrency=8".
	Label string    `json:"label"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Requests is the number of measured requests the step sent.
	Requests int `json:"requests"`
}

// New returns a Fingerprint with Tool and Host read from this process, the
// redacted command line, Start set to start in UTC, and every other string
// field NotRecorded.
func New(args []string, start time.Time) Fingerprint {
	return Fingerprint{
		Tool:    ReadTool(),
		Command: redact.Args(args),
		Client:  ReadHost(),
		Target: Target{
			URL: NotRecorded, API: NotRecorded, Model: NotRecorded, ServedModel: NotRecorded,
			Root: NotRecorded, MaxModelLenSource: NotRecorded, ServerVersion: NotRecorded, Engine: NotRecorded,
			EngineSource: NotRecorded, Tokenizer: NotRecorded, MetricsURL: NotRecorded,
		},
		Workload: Workload{SHA256: NotRecorded, Source: NotRecorded},
		Load:     Load{Mode: NotRecorded},
		Steps:    []StepWindow{},
		Start:    start.UTC(),
	}
}

// OrNotRecorded returns s, or NotRecorded when s is empty.
func OrNotRecorded(s string) string {
	if s == "" {
		return NotRecorded
	}
	return s
}

// Int is an integer field that may be unknown. It encodes as a JSON number
// when Recorded and as the string "not-recorded" otherwise; it decodes both.
// The zero value is not recorded.
type Int struct {
	Value    int64
	Recorded bool
}

// Known returns a recorded Int.
func Known(v int64) Int { return Int{Value: v, Recorded: true} }

// String returns the number or "not-recorded".
func (i Int) String() string {
	if !i.Recorded {
		return NotRecorded
	}
	return fmt.Sprint(i.Value)
}

// MarshalJSON implements json.Marshaler.
func (i Int) MarshalJSON() ([]byte, error) {
	if !i.Recorded {
		return json.Marshal(NotRecorded)
	}
	return json.Marshal(i.Value)
}

// UnmarshalJSON implements json.Unmarshaler.
func (i *Int) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != NotRecorded {
			return fmt.Errorf("fingerprint: integer field holds string %q", s)
		}
		*i = Int{}
		return nil
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("fingerprint: integer field: %w", err)
	}
	*i = Known(v)
	return nil
}

// Labels is a label set that may be unknown: a nil Labels encodes as the
// string "not-recorded", a non-nil one (even empty) as a JSON object.
type Labels map[string]string

// MarshalJSON implements json.Marshaler.
func (l Labels) MarshalJSON() ([]byte, error) {
	if l == nil {
		return json.Marshal(NotRecorded)
	}
	return json.Marshal(map[string]string(l))
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *Labels) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != NotRecorded {
			return fmt.Errorf("fingerprint: label set holds string %q", s)
		}
		*l = nil
		return nil
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("fingerprint: label set: %w", err)
	}
	*l = m
	return nil
}

// CanonicalJSON encodes v as canonical JSON: object keys sorted at every
// level, no insignificant whitespace, numbers kept as written. Two workloads
// that differ only in key order or struct layout hash the same.
func CanonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode workload: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("decode workload: %w", err)
	}
	// encoding/json writes map keys sorted, so re-encoding the generic form
	// sorts every object.
	out, err := json.Marshal(generic)
	if err != nil {
		return nil, fmt.Errorf("encode workload: %w", err)
	}
	return out, nil
}

// HashWorkload returns a Workload with the canonical JSON of spec and its
// SHA-256, or an error when spec cannot be encoded.
func HashWorkload(spec any, source string) (Workload, error) {
	c, err := CanonicalJSON(spec)
	if err != nil {
		return Workload{SHA256: NotRecorded, Source: OrNotRecorded(source)}, err
	}
	sum := sha256.Sum256(c)
	return Workload{Spec: c, SHA256: hex.EncodeToString(sum[:]), Source: OrNotRecorded(source)}, nil
}
