// Package config owns llmprobe's daemon configuration: the YAML schema
// (global defaults, targets and their probes), its defaults, strict decoding
// (unknown keys are errors), validation at load with errors that name the
// file, the line and the field, API keys read from a file or an environment
// variable at load, restart keys to see what a reload changed, and
// SafeConfig, the holder the daemon swaps on SIGHUP and POST /-/reload.
// It is the daemon's schema only: a scheduled sweep's spec is data here,
// built into a sweep by prober/sweep (FromSpec, registered with
// RegisterSweepCheck), and the rules a probe shares with a sweep are
// prober/knob's; this package imports no sweep engine.
//
// The schema and every default are documented in docs/configuration.md; a
// full example is deploy/examples/llmprobe.yml.
package config

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/knob"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// The arrival processes of a probe (the names of prober/arrival).
const (
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
	ArrivalConstant = "constant"
)

// MetricsURLNone is the metrics_url value that disables scraping the target's
// own /metrics.
const MetricsURLNone = "none"

// The default max_concurrency of a probe is DefaultConcurrencyPerRate ×
// ceil(rate), clamped to [MinDefaultConcurrency, MaxDefaultConcurrency]:
// four times the rate absorbs 4 s of latency before arrivals are skipped.
// MaxDefaultConcurrency is enough for 4 s of latency at 64 req/s; above it
// requests in flight hold sockets, goroutines and buffers in the prober
// and batch slots in the target, so a probe that needs more sets
// max_concurrency itself.
const (
	DefaultConcurrencyPerRate = 4
	MinDefaultConcurrency     = 4
	MaxDefaultConcurrency     = 256
)

// DefaultMaxBodyBytes is the default max_body_bytes of a target: the
// client's own cap on a response body.
const DefaultMaxBodyBytes = ByteSize(client.DefaultMaxBodyBytes)

// DefaultMaxRate is the default global max_rate: the highest rate a probe
// may set, in requests per second.
const DefaultMaxRate = 100

// MinProbeRate is the lowest rate of a probe, in requests per second: one
// request per 1000 s on average. A lower rate (1e-300 was accepted) never
// fires, so the probe would export nothing while looking configured.
const MinProbeRate = 0.001

// MaxPromptNonce bounds a probe's prompt_nonce: the nonces of sweeps and
// probes share the range [1, 2^63-1] (a sweep's prompt_nonce is an
// int64), so a sweep's nonce can be given to a probe and back.
const MaxPromptNonce = math.MaxInt64

// MaxProbeConcurrency bounds a probe's max_concurrency: every request in
// flight holds a socket, a goroutine and its buffers (as the sweeps'
// knob.MaxInFlight).
const MaxProbeConcurrency = knob.MaxInFlight

// MaxTimeout bounds a target's or probe's timeout (and so its ttft_timeout
// and stall_timeout, which may not exceed it): knob.MaxTimeout, 24h.
const MaxTimeout = knob.MaxTimeout

// MaxTargets bounds the targets list: every target runs its probes (each
// its own arrivals, goroutines and clients) and exports its series;
// discovery's targets are bounded apart (MaxDiscoveredTargets).
const MaxTargets = 1000

// MaxProbesPerTarget bounds a target's probes (and a discovery template's):
// each probe runs its own arrival process and requests.
const MaxProbesPerTarget = 64

// MaxSweepsPerTarget bounds a target's scheduled sweeps: each holds a
// schedule and its run directories.
const MaxSweepsPerTarget = 64

// MaxResponseBodyBytes bounds a target's or module's max_body_bytes: each
// request in flight may hold a body that large.
const MaxResponseBodyBytes = 1 << 30

// MaxConfigFileBytes caps what Load reads from a configuration file: a
// larger (or endless, such as /dev/zero) file is an error naming the cap.
const MaxConfigFileBytes = 4 << 20

// maxKeyFileBytes caps what is read from an api_key_file.
const maxKeyFileBytes = 64 << 10

const (
	// namePattern is what target, probe and sweep names must match: they
	// are label values and directory names.
	namePattern = `[a-zA-Z0-9_.:-]+`
	// envPattern is what api_key_env must match: the name of an
	// environment variable.
	envPattern = `[A-Za-z_][A-Za-z0-9_]*`
)

var (
	nameRE = regexp.MustCompile(`^` + namePattern + `$`)
	envRE  = regexp.MustCompile(`^` + envPattern + `$`)
)

// DefaultGoodputObjective is the default goodput objective: 99 % of
// requests must be good.
const DefaultGoodputObjective = 0.99

// DefaultGlobalConfig holds the global defaults: a 2m total request timeout,
// a 30s time-to-first-token timeout, a 15s mid-stream stall timeout, no SLO
// (every successful request is good), a goodput objective of
// DefaultGoodputObjective and a max_rate of DefaultMaxRate.
var DefaultGlobalConfig = GlobalConfig{
	Timeout:          2 * time.Minute,
	TTFTTimeout:      30 * time.Second,
	StallTimeout:     15 * time.Second,
	GoodputObjective: DefaultGoodputObjective,
	MaxRate:          DefaultMaxRate,
}

// DefaultTargetConfig holds a target's defaults: the completions API and a
// response body cap of DefaultMaxBodyBytes (64MiB). Timeouts and SLO are
// inherited from global.
var DefaultTargetConfig = TargetConfig{
	API:          client.DefaultAPI,
	MaxBodyBytes: DefaultMaxBodyBytes,
	ServerTiming: true,
}

// DefaultProbeConfig holds the defaults of a probe written in a file: Poisson
// arrivals, burstiness 1 and workload.DefaultSpec() (64 input tokens, 16
// output tokens, ignore_eos). Rate has no default: a written probe must set
// it. The default max_concurrency (DefaultConcurrencyPerRate × ceil(rate),
// between MinDefaultConcurrency and MaxDefaultConcurrency) and seed
// (derived from the target and probe names) are computed at load.
var DefaultProbeConfig = ProbeConfig{
	Arrival:    ArrivalPoisson,
	Burstiness: 1,
	Workload:   workload.DefaultSpec(),
}

// DefaultProbe is the probe a target gets when its probes key is left out:
// named "default", 1 request per second, otherwise DefaultProbeConfig.
var DefaultProbe = ProbeConfig{
	Name:       "default",
	Rate:       1,
	Arrival:    ArrivalPoisson,
	Burstiness: 1,
	Workload:   workload.DefaultSpec(),
}

// Config is the whole daemon configuration. A *Config returned by Load,
// Parse or ForTarget is resolved (defaults and inherited values filled in,
// API keys read) and valid; treat it as immutable, since it is shared by
// readers of SafeConfig.
type Config struct {
	Global  GlobalConfig   `yaml:"global"`
	Targets []TargetConfig `yaml:"targets"`
	// Modules and ProbeAllowedTargets configure GET /probe (modules.go):
	// how to probe a target the scraper names, and which targets it may
	// name (only the configured targets' base URLs when left out).
	Modules             map[string]*ModuleConfig `yaml:"modules,omitempty"`
	ProbeAllowedTargets []string                 `yaml:"probe_allowed_targets,omitempty"`

	defaultModule *ModuleConfig // the built-in default module, unless Modules has one

	// Discovery lists the service discovery entries whose targets are
	// probed besides Targets (discovery.go, docs/discovery.md).
	Discovery []DiscoveryConfig `yaml:"discovery,omitempty"`

	// Tracing is the OTLP collector of the daemon's spans (tracing.go,
	// docs/tracing.md): read at start only.
	Tracing TracingConfig `yaml:"tracing,omitempty"`
}

// GlobalConfig holds the defaults every target inherits unless it sets them.
type GlobalConfig struct {
	// Timeout is the total request timeout (> 0).
	Timeout time.Duration `yaml:"timeout"`
	// TTFTTimeout fails a request with no token event this long after it
	// was sent (0 disables it; <= Timeout).
	TTFTTimeout time.Duration `yaml:"ttft_timeout"`
	// StallTimeout fails a request whose stream is silent this long after
	// its first token event (0 disables it; <= Timeout).
	StallTimeout time.Duration `yaml:"stall_timeout"`
	// SLO is the default SLO of every target (each threshold <= Timeout).
	SLO slo.SLO `yaml:"slo,omitempty"`
	// GoodputObjective is the default goodput objective of every target: the
	// share of requests that must be good, 0 < x < 1, default
	// DefaultGoodputObjective. Its error budget is 1 - GoodputObjective.
	GoodputObjective float64 `yaml:"goodput_objective"`
	// MaxRate is the highest rate any probe may set, in requests per second:
	// > 0, at most arrival.MaxRate, default DefaultMaxRate. It guards the
	// target and the prober against a typo such as rate: 1e9.
	MaxRate float64 `yaml:"max_rate"`

	set keySet
}

// TargetConfig is one endpoint to probe. After load every field holds its
// effective value (inherited and default values filled in).
type TargetConfig struct {
	// Name identifies the target; it is the target label value: required,
	// unique, [a-zA-Z0-9_.:-]+.
	Name string `yaml:"name"`
	// BaseURL is the server root, e.g. http://vllm:8000 (http or https, no
	// query, no credentials, no trailing slash after load, not ending in /v1).
	BaseURL string `yaml:"base_url"`
	// API names a row of the API table (prober/client's api.go);
	// default client.DefaultAPI.
	API string `yaml:"api"`
	// BatchSize is the inputs of an embeddings request or the documents
	// of a rerank query (api embeddings and rerank only; 0 is 1, at most
	// client.MaxInputs); RerankPath the path of rerank requests
	// (client.RerankV1 when empty, client.RerankBare or client.RerankScore).
	BatchSize  int    `yaml:"batch_size,omitempty"`
	RerankPath string `yaml:"rerank_path,omitempty"`
	// Model is the model to request; empty means the first id of
	// GET /v1/models, asked when the probe starts.
	Model string `yaml:"model,omitempty"`
	// Engine is the server engine whose metric names, info endpoints and
	// tokenizer shape llmprobe uses: vllm, sglang, tgi, llamacpp or ollama;
	// empty (or "auto", stored as empty) detects it (prober/engine,
	// docs/engines.md).
	Engine string `yaml:"engine,omitempty"`
	// ServerTiming asks a vLLM target (engine: vllm, or detected) for its
	// per-request timing with include_metrics on completions and chat
	// requests (the server must run with --enable-per-request-metrics):
	// each request's server queue, server TTFT and generation time, and the
	// rest of its TTFT (llmprobe_server_*_seconds,
	// llmprobe_ttft_overhead_seconds; docs/measurement.md). Other engines
	// are never sent the field. Default true; false sends it to no one.
	ServerTiming bool `yaml:"server_timing"`
	// APIKeyFile and APIKeyEnv name where the API key is read at load (a
	// file, relative to the config file's directory, or an environment
	// variable); at most one is set. The key itself is returned by APIKey.
	APIKeyFile string `yaml:"api_key_file,omitempty"`
	APIKeyEnv  string `yaml:"api_key_env,omitempty"`
	// RawMetricsURL is metrics_url as written: empty for BaseURL + /metrics,
	// MetricsURLNone to disable scraping. Use MetricsURL for the effective URL.
	RawMetricsURL string `yaml:"metrics_url,omitempty"`
	// SLO replaces global.slo as a whole when set.
	SLO slo.SLO `yaml:"slo,omitempty"`
	// GoodputObjective is as in GlobalConfig, inherited from it when left
	// out. The daemon exports it as llmprobe_goodput_objective_ratio for the
	// burn-rate rules.
	GoodputObjective float64 `yaml:"goodput_objective"`
	// Timeout, TTFTTimeout and StallTimeout are as in GlobalConfig, inherited
	// from it when left out. An inherited or default TTFTTimeout or
	// StallTimeout larger than the target's Timeout is lowered to it.
	Timeout      time.Duration `yaml:"timeout"`
	TTFTTimeout  time.Duration `yaml:"ttft_timeout"`
	StallTimeout time.Duration `yaml:"stall_timeout"`
	// MaxBodyBytes caps a response body (default 64MiB); a larger one fails
	// the request.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// Probes are the probes of this target; DefaultProbe when left out.
	Probes []ProbeConfig `yaml:"probes"`
	// MaxSweepRate caps the open-loop rate of every sweep the daemon runs
	// against this target (the sweep API and Sweeps), in requests per
	// second; 0 (left out): no cap. With a cap, closed-loop sweeps are
	// refused and rates auto searches up to it.
	MaxSweepRate float64 `yaml:"max_sweep_rate,omitempty"`
	// Sweeps are the capacity sweeps the daemon runs on a schedule.
	Sweeps []ScheduledSweep `yaml:"sweeps,omitempty"`
	// Labels are static labels of the target, e.g. {canary: chat-v2, role:
	// baseline}, exported once per target on llmprobe_target_labels (never
	// on the histograms) so that rules join them on target: at most
	// MaxTargetLabels, names valid Prometheus label names outside
	// ReservedTargetLabels, values of 1 to MaxTargetLabelValueLen bytes.
	Labels map[string]string `yaml:"labels,omitempty"`
	// CostPerHour is the price of the target's serving in USD per hour;
	// sweeps against the target report the cost per million good output
	// tokens with it. 0 (left out): no price.
	CostPerHour float64 `yaml:"cost_per_hour,omitempty"`
	// GPUMetricsURL is a DCGM exporter's /metrics and GPUSelector the label
	// selector choosing the target's GPUs on it: the target's sweeps record
	// energy per good output token (docs/measurement.md "Energy"). Empty:
	// energy not-recorded.
	GPUMetricsURL string `yaml:"gpu_metrics_url,omitempty"`
	GPUSelector   string `yaml:"gpu_selector,omitempty"`
	// TraceSampleRatio is the share of the target's probe requests traced
	// when the daemon traces (serve --tracing.endpoint, docs/tracing.md):
	// in (0, 1]; 0 or left out: the daemon's --tracing.sample-ratio.
	TraceSampleRatio float64 `yaml:"trace_sample_ratio,omitempty"`
	// HTTPConfig is the target's HTTP client configuration,
	// prometheus/common's (the name Alertmanager uses): tls_config,
	// authorization / bearer_token(_file), basic_auth, oauth2, proxy_url,
	// http_headers. Every request of the target goes through a client built
	// from it (client.NewHTTPClient), /metrics included. Validated at load,
	// relative files resolved against the config file's directory, secret
	// files read once to be redacted; follow_redirects and enable_http2
	// must not be true (httpconfig.go). Its secrets print as <secret>.
	HTTPConfig config.HTTPClientConfig `yaml:"http_config,omitempty"`
	// AttributionHeaders are the response headers that say which backend
	// answered a request (x-served-by, x-gateway-destination-endpoint...),
	// recorded per request (Record.Attribution, Record.Backend) and as the
	// backend label of llmprobe_backend_requests_total: at most
	// client.MaxAttributionHeaders header names, no duplicates
	// (attribution.go; docs/discovery.md, "Which backend answered").
	AttributionHeaders []string `yaml:"attribution_headers,omitempty"`
	// SLOHeaders sends the target's SLO with every workload request (not
	// the answer checks) for an SLO-aware router: x-slo-ttft-ms and
	// x-slo-tpot-ms in milliseconds for the thresholds slo sets, and
	// x-prediction-based-scheduling: true (endpoint.SLOHeaders; the Gateway
	// API Inference Extension's names, docs/configuration.md). Default
	// false: no such header.
	SLOHeaders bool `yaml:"slo_headers,omitempty"`

	set keySet
	// key is a pointer so that fmt's %v of a TargetConfig prints an address,
	// never the key.
	key *apiKey
	// httpHash is a salted hash of HTTPConfig's secrets as read at load
	// (RestartKey).
	httpHash string
	// secretFiles are the files the credentials were read from at load
	// (api_key_file, http_config's *_file and header files), as opened:
	// SecretFiles.
	secretFiles []string
}

// ProbeConfig is one open-loop probe of a target.
type ProbeConfig struct {
	// Name identifies the probe within its target; it is the probe label
	// value: required, unique in the target, [a-zA-Z0-9_.:-]+.
	Name string `yaml:"name"`
	// Rate is the mean request rate in requests per second: required, > 0,
	// at most global.max_rate.
	Rate float64 `yaml:"rate"`
	// Arrival is the arrival process: ArrivalPoisson (default), ArrivalGamma
	// or ArrivalConstant.
	Arrival string `yaml:"arrival"`
	// Burstiness is the gamma shape (vLLM's --burstiness): between
	// arrival.MinBurstiness and arrival.MaxBurstiness, default 1; a value
	// other than 1 needs ArrivalGamma.
	Burstiness float64 `yaml:"burstiness"`
	// MaxConcurrency caps the requests in flight; an arrival that finds the
	// cap full is skipped and counted. Default DefaultConcurrencyPerRate ×
	// ceil(Rate), at least MinDefaultConcurrency and at most
	// MaxDefaultConcurrency.
	MaxConcurrency int `yaml:"max_concurrency"`
	// Workload is the request distribution; workload.DefaultSpec() when left
	// out, and each of its length keys defaults to DefaultSpec's when left out.
	Workload workload.Spec `yaml:"workload"`
	// Seed seeds the arrival and workload generators. 0 (or left out) means
	// derived from the names (see DeriveSeed); after load it holds the seed
	// in use.
	Seed uint64 `yaml:"seed"`
	// PromptNonce is mixed into the prompt texts (not the lengths or the
	// arrivals, which Seed decides; workload.Generator.SetPromptNonce).
	// 0 (or left out): the probe draws a fresh one each time it starts
	// (daemon start, a reload that restarts it), so its prompts never
	// repeat those of an earlier start a server's prompt cache still holds;
	// a value (1 to MaxPromptNonce) repeats the prompts on purpose.
	PromptNonce uint64 `yaml:"prompt_nonce"`
	// AnswerChecks, when set, makes this an answer-check probe: it sends
	// its check set every AnswerChecks.Every (answerchecks.go) and takes
	// none of the workload keys (rate, arrival, burstiness,
	// max_concurrency, workload, prompt_nonce).
	AnswerChecks *AnswerChecks `yaml:"answer_checks,omitempty"`

	set         keySet
	workloadSet keySet
	dataset     *workload.Dataset // workload.dataset, loaded with the config
}

// apiKey holds a key read at load.
type apiKey struct{ s config.Secret }

// MetricsURL returns the URL of the target's own /metrics: metrics_url, or
// BaseURL + /metrics when it was left out, or "" when it is "none".
func (t TargetConfig) MetricsURL() string {
	switch t.RawMetricsURL {
	case MetricsURLNone:
		return ""
	case "":
		return t.BaseURL + "/metrics"
	}
	return t.RawMetricsURL
}

// APIKey returns the API key read at load ("" when the target has none). It
// prints and marshals as <secret>; send it only in the Authorization header.
func (t TargetConfig) APIKey() config.Secret {
	if t.key == nil {
		return ""
	}
	return t.key.s
}

// Redacted returns String with the credentials a URL can carry removed:
// the userinfo and every query value of base_url and metrics_url become
// <redacted> (a signed metrics URL holds its secret in any parameter), and
// so does anything else redact.Text recognises. Use it for
// whatever people or other systems see: the /config page, logs.
func (c *Config) Redacted() string {
	cp := *c
	cp.Targets = make([]TargetConfig, len(c.Targets))
	for i, t := range c.Targets {
		t.BaseURL = redactURL(t.BaseURL)
		if t.RawMetricsURL != MetricsURLNone {
			t.RawMetricsURL = redactURL(t.RawMetricsURL)
		}
		t.GPUMetricsURL = redactURL(t.GPUMetricsURL)
		cp.Targets[i] = t
	}
	cp.Discovery = redactedDiscovery(c.Discovery)
	return cp.String()
}

// redactURL removes the userinfo and every query value of a URL.
func redactURL(s string) string {
	s = redact.Text(s)
	base, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, v, hasValue := strings.Cut(p, "=")
		switch {
		case hasValue && v != "":
			parts[i] = k + "=" + redact.Redacted
		case !hasValue && p != "":
			parts[i] = redact.Redacted
		}
	}
	return base + "?" + strings.Join(parts, "&")
}

// String returns the configuration as YAML, with every default and
// inherited value filled in; it parses back to the same configuration. API
// keys are never included (only where they are read from), but URLs are as
// written: show people Redacted.
func (c *Config) String() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("# cannot marshal the config: %v\n", err)
	}
	return string(b)
}
