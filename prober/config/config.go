// Package config owns llmprobe's daemon configuration: the YAML schema
// (global defaults, targets and their probes), its defaults, strict decoding
// (unknown keys are errors), validation at load with errors that name the
// file, the line and the field, API keys read from a file or an environment
// variable at load, restart keys to see what a reload changed, and
// SafeConfig, the holder the daemon swaps on SIGHUP and POST /-/reload.
//
// The schema and every default are documented in docs/configuration.md; a
// full example is deploy/examples/llmprobe.yml.
package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// The APIs a target can be probed on.
const (
	APICompletions = "completions" // POST /v1/completions
	APIChat        = "chat"        // POST /v1/chat/completions
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

// MaxDefaultConcurrency caps the default max_concurrency (4 × ceil(rate)):
// enough for 4 s of latency at 64 req/s. Above it requests in flight hold
// sockets, goroutines and buffers in the prober and batch slots in the
// target; a probe that needs more sets max_concurrency itself.
const MaxDefaultConcurrency = 256

// DefaultMaxRate is the default global max_rate: the highest rate a probe
// may set, in requests per second.
const DefaultMaxRate = 100

// MaxConfigFileBytes caps what Load reads from a configuration file: a
// larger (or endless, such as /dev/zero) file is an error naming the cap.
const MaxConfigFileBytes = 4 << 20

// maxKeyFileBytes caps what is read from an api_key_file.
const maxKeyFileBytes = 64 << 10

var (
	// nameRE is what target and probe names must match: they are label values.
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9_.:-]+$`)
	envRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
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
// 64MiB response body cap. Timeouts and SLO are inherited from global.
var DefaultTargetConfig = TargetConfig{
	API:          APICompletions,
	MaxBodyBytes: 64 << 20,
}

// DefaultProbeConfig holds the defaults of a probe written in a file: Poisson
// arrivals, burstiness 1 and workload.DefaultSpec() (64 input tokens, 16
// output tokens, ignore_eos). Rate has no default: a written probe must set
// it. The default max_concurrency (4 × ceil(rate), between 4 and
// MaxDefaultConcurrency) and seed (derived from the target and probe names)
// are computed at load.
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
	// API is APICompletions (default) or APIChat.
	API string `yaml:"api"`
	// Model is the model to request; empty means the first id of
	// GET /v1/models, asked when the probe starts.
	Model string `yaml:"model,omitempty"`
	// Engine is the server engine whose metric names, info endpoints and
	// tokenizer shape llmprobe uses: vllm, sglang, tgi, llamacpp or ollama;
	// empty (or "auto", stored as empty) detects it (prober/engine,
	// docs/engines.md).
	Engine string `yaml:"engine,omitempty"`
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
	// HTTPConfig is the target's HTTP client configuration,
	// prometheus/common's (the name Alertmanager uses): tls_config,
	// authorization / bearer_token(_file), basic_auth, oauth2, proxy_url,
	// http_headers. Every request of the target goes through a client built
	// from it (client.NewHTTPClient), /metrics included. Validated at load,
	// relative files resolved against the config file's directory, secret
	// files read once to be redacted; follow_redirects and enable_http2
	// must not be true (httpconfig.go). Its secrets print as <secret>.
	HTTPConfig config.HTTPClientConfig `yaml:"http_config,omitempty"`

	set keySet
	// key is a pointer so that fmt's %v of a TargetConfig prints an address,
	// never the key.
	key *apiKey
	// httpHash is a salted hash of HTTPConfig's secrets as read at load
	// (RestartKey).
	httpHash string
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
	// cap full is skipped and counted. Default 4 × ceil(Rate), at least 4
	// and at most MaxDefaultConcurrency.
	MaxConcurrency int `yaml:"max_concurrency"`
	// Workload is the request distribution; workload.DefaultSpec() when left
	// out, and each of its length keys defaults to DefaultSpec's when left out.
	Workload workload.Spec `yaml:"workload"`
	// Seed seeds the arrival and workload generators. 0 (or left out) means
	// derived from the names (see DeriveSeed); after load it holds the seed
	// in use.
	Seed uint64 `yaml:"seed"`

	set         keySet
	workloadSet keySet
	dataset     *workload.Dataset // workload.dataset, loaded with the config
}

// apiKey holds a key read at load.
type apiKey struct{ s config.Secret }

// keySet records which keys a YAML mapping set (to a non-null value). A nil
// keySet means the value was built in code, where a non-zero field counts as
// set.
type keySet map[string]bool

func (s keySet) has(key string, nonZero bool) bool {
	if s == nil {
		return nonZero
	}
	return s[key]
}

// UnmarshalYAML applies DefaultGlobalConfig and decodes strictly.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = Config{Global: DefaultGlobalConfig}
	type plain Config
	if err := unmarshal((*plain)(c)); err != nil {
		return err
	}
	_, values, err := presentKeys(unmarshal)
	if err != nil {
		return err
	}
	return noEmptyEntries(values, "targets")
}

// UnmarshalYAML applies DefaultGlobalConfig, decodes strictly and records
// which keys were set.
func (g *GlobalConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*g = DefaultGlobalConfig
	type plain GlobalConfig
	if err := unmarshal((*plain)(g)); err != nil {
		return err
	}
	set, _, err := presentKeys(unmarshal)
	g.set = set
	return err
}

// UnmarshalYAML applies DefaultTargetConfig, decodes strictly and records
// which keys were set (the others are inherited from global at load).
func (t *TargetConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*t = DefaultTargetConfig
	type plain TargetConfig
	if err := unmarshal((*plain)(t)); err != nil {
		return err
	}
	set, values, err := presentKeys(unmarshal)
	if err != nil {
		return err
	}
	t.set = set
	return noEmptyEntries(values, "probes")
}

// UnmarshalYAML applies DefaultProbeConfig, decodes strictly and records
// which keys were set. The workload is decoded from scratch (a length
// distribution written in the file never merges with the default one).
func (p *ProbeConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*p = DefaultProbeConfig
	p.Workload = workload.Spec{}
	type plain ProbeConfig
	if err := unmarshal((*plain)(p)); err != nil {
		return err
	}
	set, values, err := presentKeys(unmarshal)
	if err != nil {
		return err
	}
	p.set = set
	p.workloadSet = keySet{}
	if w, ok := values["workload"]; ok && set["workload"] {
		p.workloadSet = mappingKeys(&w)
	}
	return nil
}

// presentKeys decodes the mapping being unmarshalled a second time, into its
// keys and value nodes (merge keys expanded by yaml), and returns the keys
// set to a non-null value.
func presentKeys(unmarshal func(any) error) (keySet, map[string]yaml.Node, error) {
	var values map[string]yaml.Node
	if err := unmarshal(&values); err != nil {
		return nil, nil, err
	}
	set := make(keySet, len(values))
	for k, v := range values {
		if resolveAlias(&v).ShortTag() != "!!null" {
			set[k] = true
		}
	}
	return set, values, nil
}

// noEmptyEntries rejects null entries in the list under key: yaml would
// drop them silently, shifting the indexes that errors report.
func noEmptyEntries(values map[string]yaml.Node, key string) error {
	v, ok := values[key]
	if !ok {
		return nil
	}
	n := resolveAlias(&v)
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range n.Content {
		if resolveAlias(item).ShortTag() == "!!null" {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: empty list entry", item.Line)}}
		}
	}
	return nil
}

// resolveAlias follows alias nodes.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mappingKeys returns the keys of mapping n that have a non-null value,
// merge keys (<<) included.
func mappingKeys(n *yaml.Node) keySet {
	s := keySet{}
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return s
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		if k.ShortTag() == "!!merge" {
			merged := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				merged = v.Content
			}
			for _, m := range merged {
				for key := range mappingKeys(m) {
					s[key] = true
				}
			}
			continue
		}
		if v.ShortTag() != "!!null" {
			s[k.Value] = true
		}
	}
	return s
}

// Load reads, parses and validates the configuration file at path. The
// error is an *Error when the file has one problem and Errors, every problem
// in file order, when it has more, e.g.
//
//	llmprobe.yml:12: targets[0].probes[1].rate: must be > 0, got -1
//	llmprobe.yml:14: targets[0].probes[1].arrival: must be one of poisson, gamma, constant, got "gamma2"
//
// Validation goes on past a problem wherever the rest can still be checked:
// every target, probe and field is checked, except that a YAML syntax or type
// error stops at the decoding, and a field that is a consequence of another
// problem (an inherited value of an invalid global section, the default
// max_concurrency of an invalid rate) is not reported again.
//
// At most MaxConfigFileBytes are read: a larger file, or an endless one such
// as /dev/zero, is an error naming the file and the cap.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path, MaxConfigFileBytes)
	if err != nil {
		var pe *os.PathError
		var te *TooLargeError
		switch {
		case errors.As(err, &te):
			err = fmt.Errorf("the file is larger than %v, the cap on a configuration file", ByteSize(te.Limit))
		case errors.As(err, &pe):
			err = pe.Err
		}
		return nil, &Error{File: path, Err: err}
	}
	return Parse(data, path)
}

// TooLargeError is the error of ReadFile for a file over its cap.
type TooLargeError struct {
	Path  string
	Limit int64
}

// Error says which file is over which cap.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %v", e.Path, ByteSize(e.Limit))
}

// ReadFile reads the file at path, at most limit bytes: a larger file, or
// an endless one such as /dev/zero or a FIFO fed forever, is a
// *TooLargeError once limit+1 bytes are read. Other errors are os.Open's
// and Read's (*os.PathError). Use it for every file llmprobe reads whose
// size a user controls.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// Parse parses and validates a configuration; filename names it in errors
// (an *Error or Errors, as for Load), and relative api_key_file paths are
// relative to its directory.
func Parse(data []byte, filename string) (*Config, error) {
	c := &Config{Global: DefaultGlobalConfig}
	if es := httpConfigProblems(filename, data); len(es) > 0 {
		// prometheus/common validates while decoding: checked first, so
		// that its errors name their line and field.
		return nil, errorOf(es)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		yerr := newNodeIndex(data).yamlErrors(filename, err)
		if strings.Contains(err.Error(), "excessive aliasing") {
			return nil, yerr
		}
		return nil, withIntegerProblems(integerProblems(filename, data), yerr)
	}
	if ints := integerProblems(filename, data); len(ints) > 0 {
		// Like yaml's type errors, these stop at the decoding.
		return nil, errorOf(ints)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: filename, Line: extra.Line, Err: errors.New("only one YAML document is allowed")}
	} else if !errors.Is(err, io.EOF) {
		return nil, newNodeIndex(data).yamlErrors(filename, err)
	}
	if err := c.resolve(filepath.Dir(filename)); err != nil {
		return nil, errorOf(located(filename, newNodeIndex(data), err))
	}
	return c, nil
}

// withIntegerProblems merges integer problems into the error of yaml's
// decoder (an *Error or Errors), in line order; yaml's own problem of the
// same field wins.
func withIntegerProblems(ints []*Error, err error) error {
	if len(ints) == 0 {
		return err
	}
	var es []*Error
	var many Errors
	var one *Error
	switch {
	case errors.As(err, &many):
		es = append(es, many...)
	case errors.As(err, &one):
		es = append(es, one)
	default:
		return err
	}
	for _, ie := range ints {
		dup := false
		for _, e := range es {
			dup = dup || e.Line == ie.Line && e.Path == ie.Path
		}
		if !dup {
			es = append(es, ie)
		}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return errorOf(es)
}

// ForTarget returns the configuration of one target probed with
// DefaultProbe: the target is named after the URL's host:port and path
// (http://gw:8080/llama is gw:8080_llama, so two targets on one host get
// two names and two seeds; characters not allowed in a name become _), the
// api is APICompletions when empty, and
// everything else is a default. Errors name the field (base_url, api): an
// *Error, or Errors when both are invalid.
// Setting Name afterwards keeps the seed derived from the original name.
func ForTarget(baseURL, model, api string) (*Config, error) {
	t := DefaultTargetConfig
	t.Name = nameFromURL(baseURL)
	t.BaseURL = baseURL
	t.Model = model
	if api != "" {
		t.API = api
	}
	c := &Config{Global: DefaultGlobalConfig, Targets: []TargetConfig{t}}
	if err := c.resolve(""); err != nil {
		es := located("", nil, err)
		for _, e := range es {
			e.Path = strings.TrimPrefix(e.Path, "targets[0].")
		}
		return nil, errorOf(es)
	}
	return c, nil
}

func nameFromURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "target"
	}
	b := []byte(u.Host + strings.TrimRight(u.EscapedPath(), "/"))
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("_.:-", ch) >= 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// located turns a validation error (one or several joined) into *Error
// values with their lines, in file order.
func located(file string, idx *nodeIndex, err error) []*Error {
	var es []*Error
	for _, fe := range flatten(err) {
		e := &Error{File: file, Path: fe.path, Err: fe.err}
		if idx != nil {
			e.Line = idx.line(fe.path)
		}
		es = append(es, e)
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return es
}

// resolve fills in defaults and inherited values, validates, and reads the
// API keys of the targets that are valid (an invalid target never touches
// key files or the environment). It returns every problem found.
func (c *Config) resolve(dir string) error {
	g := &c.Global
	if !g.set.has("ttft_timeout", false) && g.Timeout > 0 && g.TTFTTimeout > g.Timeout {
		g.TTFTTimeout = g.Timeout
	}
	if !g.set.has("stall_timeout", false) && g.Timeout > 0 && g.StallTimeout > g.Timeout {
		g.StallTimeout = g.Timeout
	}
	if !g.set.has("goodput_objective", g.GoodputObjective != 0) {
		g.GoodputObjective = DefaultGoodputObjective
	}
	if !g.set.has("max_rate", g.MaxRate != 0) {
		g.MaxRate = DefaultMaxRate
	}
	var all problems
	globalBad := all.add("global", g.Validate())
	maxRateOK := validateMaxRate(g.MaxRate) == nil
	if len(c.Targets) == 0 {
		all.add("targets", errors.New("at least one target is required"))
	}
	seen := make(map[string]int, len(c.Targets))
	for i := range c.Targets {
		t := &c.Targets[i]
		var tp problems
		tp.add("", t.resolve(*g))
		tp.add("", t.readSchemaFiles(dir))
		tp.add("", t.readSweepFiles(dir))
		if maxRateOK {
			tp.add("", t.validateRates(g.MaxRate))
		}
		tp.add("", t.Validate())
		if globalBad {
			tp = t.withoutInherited(tp)
		}
		if validateName(t.Name) == nil {
			if j, dup := seen[t.Name]; dup {
				tp.add("name", fmt.Errorf("duplicate target name %q (also targets[%d])", t.Name, j))
			} else {
				seen[t.Name] = i
			}
		}
		if len(tp) == 0 {
			tp.add("", t.loadKey(dir))
			tp.add("", t.loadHTTPConfig(dir))
		}
		if len(tp) == 0 {
			tp.add("", t.loadDatasets(dir))
			tp.add("", t.loadSweepDatasets())
		}
		for _, fe := range tp {
			all.add(fmt.Sprintf("targets[%d]", i), fe)
		}
	}
	return all.err()
}

// inheritable are the target keys inherited from global when left out.
var inheritable = []string{"timeout", "ttft_timeout", "stall_timeout", "slo", "goodput_objective"}

// withoutInherited drops the problems of fields the target inherited from an
// invalid global section: they repeat the global problem.
func (t *TargetConfig) withoutInherited(l problems) problems {
	out := l[:0:0]
	for _, fe := range l {
		field, _, _ := strings.Cut(fe.path, ".")
		inherited := false
		for _, k := range inheritable {
			if field == k && !t.set.has(k, true) {
				inherited = true
			}
		}
		if !inherited {
			out = append(out, fe)
		}
	}
	return out
}

func (t *TargetConfig) resolve(g GlobalConfig) error {
	t.BaseURL = strings.TrimRight(t.BaseURL, "/")
	if n, err := engine.Parse(t.Engine); err == nil {
		t.Engine = string(n) // "auto" is stored as ""
	}
	if t.API == "" && !t.set.has("api", false) {
		t.API = APICompletions
	}
	if !t.set.has("max_body_bytes", t.MaxBodyBytes != 0) {
		t.MaxBodyBytes = DefaultTargetConfig.MaxBodyBytes
	}
	if !t.set.has("timeout", t.Timeout != 0) {
		t.Timeout = g.Timeout
	}
	if !t.set.has("ttft_timeout", t.TTFTTimeout != 0) {
		t.TTFTTimeout = g.TTFTTimeout
		if t.Timeout > 0 && t.TTFTTimeout > t.Timeout {
			t.TTFTTimeout = t.Timeout
		}
	}
	if !t.set.has("stall_timeout", t.StallTimeout != 0) {
		t.StallTimeout = g.StallTimeout
		if t.Timeout > 0 && t.StallTimeout > t.Timeout {
			t.StallTimeout = t.Timeout
		}
	}
	if !t.set.has("slo", t.SLO != (slo.SLO{})) {
		t.SLO = g.SLO
	}
	if !t.set.has("goodput_objective", t.GoodputObjective != 0) {
		t.GoodputObjective = g.GoodputObjective
	}
	if t.Probes == nil {
		t.Probes = []ProbeConfig{DefaultProbe}
	}
	var l problems
	for i := range t.Probes {
		l.add(fmt.Sprintf("probes[%d]", i), t.Probes[i].resolve(t.Name))
	}
	return l.err()
}

// resolve fills in the probe's defaults; it reports a missing rate (after
// resolving the rest, so that the other fields can still be validated).
func (p *ProbeConfig) resolve(target string) error {
	var err error
	if p.set != nil && !p.set["rate"] {
		err = errf("rate", "required: requests per second, > 0")
	}
	if p.Arrival == "" && !p.set.has("arrival", false) {
		p.Arrival = DefaultProbeConfig.Arrival
	}
	if !p.set.has("burstiness", p.Burstiness != 0) {
		p.Burstiness = DefaultProbeConfig.Burstiness
	}
	if !p.set.has("max_concurrency", p.MaxConcurrency != 0) && p.Rate > 0 && !math.IsInf(p.Rate, 0) {
		p.MaxConcurrency = int(max(4, min(4*math.Ceil(p.Rate), MaxDefaultConcurrency)))
	}
	def := DefaultProbeConfig.Workload
	w, ws := &p.Workload, p.workloadSet
	if !ws.has("input_tokens", w.InputTokens.Dist != "") && w.Dataset == nil {
		w.InputTokens = def.InputTokens
	}
	if !ws.has("output_tokens", w.OutputTokens.Dist != "") && w.Dataset == nil {
		w.OutputTokens = def.OutputTokens
	}
	if !ws.has("prefix_tokens", w.PrefixTokens != 0) {
		w.PrefixTokens = def.PrefixTokens
	}
	if !ws.has("ignore_eos", w.IgnoreEOS != nil) {
		w.IgnoreEOS = def.IgnoreEOS
	}
	if p.Seed == 0 {
		p.Seed = DeriveSeed(target, p.Name)
	}
	return err
}

// DeriveSeed returns the default seed of a probe: the first 53 bits of
// SHA-256(target + "/" + probe), read big-endian (53 bits, so that the seed
// survives JSON tools that read numbers as float64).
func DeriveSeed(target, probe string) uint64 {
	sum := sha256.Sum256([]byte(target + "/" + probe))
	return binary.BigEndian.Uint64(sum[:8]) >> 11
}

// Validate checks the global section: timeouts, SLO, goodput objective and
// max_rate. Every problem is returned (several joined with errors.Join).
func (g GlobalConfig) Validate() error {
	var l problems
	l.add("", validateTimeouts(g.Timeout, g.TTFTTimeout, g.StallTimeout))
	l.add("", validateSLO(g.SLO, g.Timeout, ""))
	l.add("", validateObjective(g.GoodputObjective))
	l.add("max_rate", validateMaxRate(g.MaxRate))
	return l.err()
}

// validateMaxRate checks global.max_rate: > 0 and at most what the arrival
// generator yields (arrival.MaxRate).
func validateMaxRate(v float64) error {
	if err := validatePositive(v); err != nil {
		return err
	}
	if v > arrival.MaxRate {
		return fmt.Errorf("must be <= %v (the most arrivals per second a probe's arrival process yields), got %v", float64(arrival.MaxRate), v)
	}
	return nil
}

// validateRates checks the rate of every probe against global.max_rate
// (maxRate, valid); a rate that is invalid on its own is left to
// ProbeConfig.Validate.
func (t TargetConfig) validateRates(maxRate float64) error {
	var l problems
	for i, p := range t.Probes {
		if validatePositive(p.Rate) == nil && p.Rate > maxRate {
			l.add(fmt.Sprintf("probes[%d].rate", i), fmt.Errorf("must be <= global.max_rate (%v), got %v", maxRate, p.Rate))
		}
	}
	return l.err()
}

// Validate checks every field of a resolved target and its probes, and the
// rules between them: one API key source, timeouts and SLO within timeout,
// unique probe names. It does not read the API key. Every problem is
// returned (several joined with errors.Join), at most one per field.
func (t TargetConfig) Validate() error {
	var l problems
	l.add("name", validateName(t.Name))
	switch {
	case t.BaseURL == "":
		l.add("base_url", errors.New("required"))
	case l.add("base_url", validateURL(t.BaseURL, false)):
	default:
		if u, _ := url.Parse(t.BaseURL); strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
			l.add("base_url", errors.New("must be the server root, without /v1 (llmprobe adds /v1/completions or /v1/chat/completions)"))
		}
	}
	if t.API != APICompletions && t.API != APIChat {
		l.add("api", fmt.Errorf("must be one of %s, %s, got %q", APICompletions, APIChat, t.API))
	}
	if _, err := engine.Parse(t.Engine); err != nil {
		names := []string{"auto"}
		for _, n := range engine.Names {
			names = append(names, string(n))
		}
		l.add("engine", fmt.Errorf("must be one of %s, got %q", strings.Join(names, ", "), t.Engine))
	}
	if t.APIKeyFile != "" && t.APIKeyEnv != "" {
		l.add("api_key_file", errors.New("set either api_key_file or api_key_env, not both"))
	} else if t.APIKeyEnv != "" && !envRE.MatchString(t.APIKeyEnv) {
		// Never echo the value: it may be a key pasted in the wrong place.
		l.add("api_key_env", errors.New("must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself"))
	}
	if t.RawMetricsURL != "" && t.RawMetricsURL != MetricsURLNone {
		l.add("metrics_url", validateURL(t.RawMetricsURL, true))
	}
	l.add("", t.validateHTTPConfig())
	l.add("", validateTimeouts(t.Timeout, t.TTFTTimeout, t.StallTimeout))
	note := ""
	if !t.set.has("slo", true) {
		note = " (inherited from global.slo)"
	}
	l.add("", validateSLO(t.SLO, t.Timeout, note))
	l.add("", validateObjective(t.GoodputObjective))
	if t.MaxBodyBytes <= 0 {
		l.add("max_body_bytes", fmt.Errorf("must be > 0, got %d", int64(t.MaxBodyBytes)))
	}
	if len(t.Probes) == 0 {
		l.add("probes", errors.New("at least one probe is required (leave probes out for the default probe)"))
	}
	l.add("", t.validateSweeps())
	validateLabels(&l, t.Labels)
	l.add("cost_per_hour", validateCostPerHour(t.CostPerHour))
	l.add("", t.validateMultiTurn())
	seen := make(map[string]int, len(t.Probes))
	for i, p := range t.Probes {
		path := fmt.Sprintf("probes[%d]", i)
		l.add(path, p.Validate())
		if validateName(p.Name) != nil {
			continue
		}
		if j, dup := seen[p.Name]; dup {
			l.add(path+".name", fmt.Errorf("duplicate probe name %q (also probes[%d])", p.Name, j))
		} else {
			seen[p.Name] = i
		}
	}
	return l.err()
}

// Validate checks every field of a resolved probe, and that burstiness other
// than 1 comes with gamma arrivals. Every problem is returned (several joined
// with errors.Join), at most one per field; the default max_concurrency of
// an invalid rate is not reported.
func (p ProbeConfig) Validate() error {
	var l problems
	l.add("name", validateName(p.Name))
	rateBad := l.add("rate", validatePositive(p.Rate))
	arrivalOK := true
	switch p.Arrival {
	case ArrivalPoisson, ArrivalGamma, ArrivalConstant:
	default:
		arrivalOK = false
		l.add("arrival", fmt.Errorf("must be one of %s, %s, %s, got %q", ArrivalPoisson, ArrivalGamma, ArrivalConstant, p.Arrival))
	}
	burstBad := l.add("burstiness", validatePositive(p.Burstiness))
	if !burstBad && arrivalOK && p.Burstiness != 1 && p.Arrival != ArrivalGamma {
		burstBad = l.add("burstiness", fmt.Errorf("%v needs arrival: gamma (arrival is %s)", p.Burstiness, p.Arrival))
	}
	if !burstBad && (p.Burstiness < arrival.MinBurstiness || p.Burstiness > arrival.MaxBurstiness) {
		// Below the minimum nearly every gap is 0: runs of millions of
		// arrivals at once.
		burstBad = l.add("burstiness", fmt.Errorf("must be between %v and %v (gaps with a coefficient of variation of 10 to 0.03), got %v",
			arrival.MinBurstiness, float64(arrival.MaxBurstiness), p.Burstiness))
	}
	if !rateBad && arrivalOK && !burstBad {
		// Whatever else the arrival process refuses, refused here, at load,
		// and never when the probe starts.
		l.add("arrival", arrival.Validate(p.Arrival, p.Rate, p.Burstiness))
	}
	if p.MaxConcurrency < 1 && (!rateBad || p.set.has("max_concurrency", p.MaxConcurrency != 0)) {
		l.add("max_concurrency", fmt.Errorf("must be >= 1, got %d", p.MaxConcurrency))
	}
	if p.Workload.Trace != nil {
		l.add("workload.trace", errProbeTrace)
		return l.err()
	}
	if p.Workload.Dataset != nil {
		l.add("", validateDatasetWorkload(p.Workload))
		return l.err()
	}
	workloadBad := l.add("workload.input_tokens", p.Workload.InputTokens.Validate())
	workloadBad = l.add("workload.output_tokens", p.Workload.OutputTokens.Validate()) || workloadBad
	if p.Workload.PrefixTokens < 0 {
		workloadBad = l.add("workload.prefix_tokens", fmt.Errorf("must be >= 0, got %d", p.Workload.PrefixTokens))
	}
	workloadBad = validateMultiTurn(&l, p.Workload.MultiTurn) || workloadBad
	if !workloadBad {
		// Anything else workload.Spec checks.
		l.add("workload", workloadProblem(p.Workload.Validate()))
	}
	return l.err()
}

func validateName(s string) error {
	if s == "" {
		return errors.New("required")
	}
	if !nameRE.MatchString(s) {
		return fmt.Errorf("must match [a-zA-Z0-9_.:-]+, got %q", s)
	}
	return nil
}

func validatePositive(v float64) error {
	if math.IsInf(v, 0) {
		return fmt.Errorf("must be finite, got %v", v)
	}
	if !(v > 0) {
		return fmt.Errorf("must be > 0, got %v", v)
	}
	return nil
}

// validateURL checks an http(s) URL without ever echoing it (it may hold
// credentials).
func validateURL(s string, allowQuery bool) error {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("invalid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.User != nil {
		return errors.New("must not contain credentials (user:password@); use api_key_file or api_key_env")
	}
	if u.Host == "" {
		return errors.New("host is missing")
	}
	if !allowQuery && (u.RawQuery != "" || u.ForceQuery) {
		return errors.New("must not contain a query (?...)")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("must not contain a fragment (#...)")
	}
	return nil
}

// validateTimeouts checks timeout, and ttft and stall against it when it is
// valid; every problem is returned.
func validateTimeouts(timeout, ttft, stall time.Duration) error {
	var l problems
	if timeout <= 0 {
		l.add("timeout", fmt.Errorf("must be > 0, got %v", timeout))
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"ttft_timeout", ttft}, {"stall_timeout", stall}} {
		if f.v < 0 {
			l.add(f.name, fmt.Errorf("must be >= 0 (0 disables it), got %v", f.v))
		} else if timeout > 0 && f.v > timeout {
			l.add(f.name, fmt.Errorf("must be <= timeout (%v), got %v", timeout, f.v))
		}
	}
	return l.err()
}

// validateSLO checks an SLO, and its thresholds against timeout when that is
// valid; every problem is returned.
func validateSLO(s slo.SLO, timeout time.Duration, note string) error {
	if err := s.Validate(); err != nil {
		return under("slo", err)
	}
	if timeout <= 0 {
		return nil // reported as a timeout problem
	}
	var l problems
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"e2el", s.E2EL}} {
		if f.v > timeout {
			l.add("slo."+f.name, fmt.Errorf("must be <= timeout (%v), got %v%s", timeout, f.v, note))
		}
	}
	return l.err()
}

// validateObjective checks a goodput objective: a share strictly between 0
// and 1 (1 would leave no error budget to burn).
func validateObjective(v float64) error {
	if !(v > 0 && v < 1) {
		return errf("goodput_objective", "must be > 0 and < 1 (e.g. 0.99 for 99 %%), got %v", v)
	}
	return nil
}

// loadKey reads the API key named by APIKeyFile or APIKeyEnv. Errors name
// the file or variable, never the key.
func (t *TargetConfig) loadKey(dir string) error {
	var key string
	switch {
	case t.APIKeyFile != "":
		path := t.APIKeyFile
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		// A FIFO or device would block or stream forever: regular files only
		// (os.Stat follows symlinks, so Kubernetes secret mounts work).
		if fi, err := os.Stat(path); err != nil {
			return errf("api_key_file", "cannot read the key: %w", err)
		} else if !fi.Mode().IsRegular() {
			return errf("api_key_file", "%s is not a regular file", path)
		}
		f, err := os.Open(path)
		if err != nil {
			return errf("api_key_file", "cannot read the key: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
		f.Close()
		if err != nil {
			return errf("api_key_file", "cannot read the key: %w", err)
		}
		if len(data) > maxKeyFileBytes {
			return errf("api_key_file", "%s is larger than %v", path, ByteSize(maxKeyFileBytes))
		}
		key = strings.TrimSpace(string(data))
		if key == "" {
			return errf("api_key_file", "%s is empty", path)
		}
		if !validKey(key) {
			return errf("api_key_file", "the key in %s contains spaces or control characters (write the key alone, without \"Bearer\")", path)
		}
	case t.APIKeyEnv != "":
		v, ok := os.LookupEnv(t.APIKeyEnv)
		if !ok {
			return errf("api_key_env", "environment variable %s is not set", t.APIKeyEnv)
		}
		key = strings.TrimSpace(v)
		if key == "" {
			return errf("api_key_env", "environment variable %s is empty", t.APIKeyEnv)
		}
		if !validKey(key) {
			return errf("api_key_env", "the key in environment variable %s contains spaces or control characters (set the key alone, without \"Bearer\")", t.APIKeyEnv)
		}
	default:
		t.key = nil
		return nil
	}
	t.key = &apiKey{s: config.Secret(key)}
	return nil
}

// validKey accepts visible ASCII only: a key goes into an HTTP header.
func validKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}

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
// so does anything else fingerprint.RedactText recognises. Use it for
// whatever people or other systems see: the /config page, logs.
func (c *Config) Redacted() string {
	cp := *c
	cp.Targets = make([]TargetConfig, len(c.Targets))
	for i, t := range c.Targets {
		t.BaseURL = redactURL(t.BaseURL)
		if t.RawMetricsURL != MetricsURLNone {
			t.RawMetricsURL = redactURL(t.RawMetricsURL)
		}
		cp.Targets[i] = t
	}
	return cp.String()
}

// redactURL removes the userinfo and every query value of a URL.
func redactURL(s string) string {
	s = fingerprint.RedactText(s)
	base, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, v, hasValue := strings.Cut(p, "=")
		switch {
		case hasValue && v != "":
			parts[i] = k + "=" + fingerprint.Redacted
		case !hasValue && p != "":
			parts[i] = fingerprint.Redacted
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
