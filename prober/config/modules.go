package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// The modules of GET /probe (the blackbox convention: the scraper names the
// target and a module, the module says how to probe it).
const (
	// DefaultModuleName is the module that exists without configuration
	// (every key at its default); a module of that name in the file
	// replaces it.
	DefaultModuleName = "default"
	// MaxModules bounds the modules map.
	MaxModules = 64
	// MaxProbeAllowedTargets bounds probe_allowed_targets.
	MaxProbeAllowedTargets = 256
	// MaxProbeTargetLen bounds a /probe target URL and an entry of
	// probe_allowed_targets (bytes).
	MaxProbeTargetLen = 2048
)

// moduleURL is the base URL a module is resolved and validated with; GET
// /probe replaces it with the target it is given (Config.ModuleTarget).
const moduleURL = "http://probe.module.invalid"

// ModuleConfig is one module of GET /probe: the keys of a target that say
// how to probe it (api, model, engine, the API key, slo, timeouts,
// max_body_bytes, http_config, attribution_headers) and those of a probe
// that say what to send (workload, seed, prompt_nonce). The target's URL
// comes with each /probe request; nothing about rates applies (a /probe
// request sends ?count requests one after the other). Left-out keys take
// the values a target and a probe take (global's timeouts and slo
// included). A module never reads the server's /metrics (metrics_url is
// none): engine auto-detection uses /v1/models and the info endpoints.
type ModuleConfig struct {
	API                string                  `yaml:"api"`
	Model              string                  `yaml:"model,omitempty"`
	Engine             string                  `yaml:"engine,omitempty"`
	APIKeyFile         string                  `yaml:"api_key_file,omitempty"`
	APIKeyEnv          string                  `yaml:"api_key_env,omitempty"`
	SLO                slo.SLO                 `yaml:"slo,omitempty"`
	Timeout            time.Duration           `yaml:"timeout"`
	TTFTTimeout        time.Duration           `yaml:"ttft_timeout"`
	StallTimeout       time.Duration           `yaml:"stall_timeout"`
	MaxBodyBytes       ByteSize                `yaml:"max_body_bytes"`
	HTTPConfig         config.HTTPClientConfig `yaml:"http_config,omitempty"`
	AttributionHeaders []string                `yaml:"attribution_headers,omitempty"`
	Workload           workload.Spec           `yaml:"workload"`
	Seed               uint64                  `yaml:"seed"`
	PromptNonce        uint64                  `yaml:"prompt_nonce"`

	set         keySet
	workloadSet keySet
	// target is the module resolved as a target of one probe (resolve).
	target *TargetConfig
}

// UnmarshalYAML decodes a module strictly and records which keys were set.
func (m *ModuleConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*m = ModuleConfig{}
	type plain ModuleConfig
	if err := unmarshal((*plain)(m)); err != nil {
		return err
	}
	var err error
	m.set, m.workloadSet, err = presentWorkloadKeys(unmarshal)
	return err
}

// probeKeys are the module keys that belong to its probe.
var probeKeys = []string{"workload", "seed", "prompt_nonce"}

// resolve builds the module's target (one probe) with the defaults and
// inherited values of a target, validates it and reads its key and files,
// as Config.resolve does for a target. Errors are under the module's keys.
func (m *ModuleConfig) resolve(name string, g GlobalConfig, dir string) error {
	tset, pset := keySet{}, keySet{"rate": true, "max_concurrency": true}
	for k, v := range m.set {
		if slices.Contains(probeKeys, k) {
			pset[k] = v
		} else {
			tset[k] = v
		}
	}
	if m.set == nil { // built in code: a non-zero field counts as set
		tset, pset = nil, nil
	}
	p := ProbeConfig{Name: name, Rate: 1, Arrival: ArrivalPoisson, Burstiness: 1, MaxConcurrency: 1,
		Workload: m.Workload, Seed: m.Seed, PromptNonce: m.PromptNonce, set: pset, workloadSet: m.workloadSet}
	if m.set == nil && m.workloadSet == nil && m.Workload.InputTokens.Dist == "" && m.Workload.Dataset == nil {
		p.Workload = DefaultProbeConfig.Workload
	}
	t := TargetConfig{
		Name: name, BaseURL: moduleURL, API: m.API, Model: m.Model, Engine: m.Engine,
		APIKeyFile: m.APIKeyFile, APIKeyEnv: m.APIKeyEnv, RawMetricsURL: MetricsURLNone,
		SLO: m.SLO, Timeout: m.Timeout, TTFTTimeout: m.TTFTTimeout, StallTimeout: m.StallTimeout,
		MaxBodyBytes: m.MaxBodyBytes, HTTPConfig: m.HTTPConfig, AttributionHeaders: m.AttributionHeaders,
		Probes: []ProbeConfig{p}, set: tset,
	}
	var tp problems
	tp.add("", t.resolve(g))
	tp.add("", t.readSchemaFiles(dir))
	tp.add("", t.Validate())
	if len(tp) == 0 {
		tp.add("", t.loadFiles(dir))
	}
	var out problems
	for _, fe := range tp {
		path := strings.TrimPrefix(strings.TrimPrefix(fe.Key, "probes[0]"), ".")
		if path == "name" || path == "probes[0].name" {
			continue // the module's name is checked by the caller
		}
		out = append(out, &fieldError{Key: path, Err: fe.Err})
	}
	if len(out) == 0 {
		m.target = &t
	}
	return out.err()
}

// resolveModules resolves every module (the built-in default one when the
// file has none of that name) and checks probe_allowed_targets.
func (c *Config) resolveModules(dir string) error {
	var l problems
	if len(c.Modules) > MaxModules {
		l.add("modules", fmt.Errorf("at most %d modules, got %d", MaxModules, len(c.Modules)))
	}
	if _, ok := c.Modules[DefaultModuleName]; !ok {
		d := &ModuleConfig{set: keySet{}, workloadSet: keySet{}}
		l.add("global", d.resolve(DefaultModuleName, c.Global, dir))
		c.defaultModule = d
	}
	names := make([]string, 0, len(c.Modules))
	for n := range c.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		path := "modules." + n
		m := c.Modules[n]
		if m == nil {
			l.add(path, errors.New("empty module: write {} for a module with every key at its default"))
			continue
		}
		if err := validateName(n); err != nil {
			l.add(path, fmt.Errorf("module name: %w", err))
			continue
		}
		l.add(path, m.resolve(n, c.Global, dir))
	}
	if len(c.ProbeAllowedTargets) > MaxProbeAllowedTargets {
		l.add("probe_allowed_targets", fmt.Errorf("at most %d entries, got %d", MaxProbeAllowedTargets, len(c.ProbeAllowedTargets)))
	}
	for i, p := range c.ProbeAllowedTargets {
		if _, err := parseAllowedTarget(p); err != nil {
			l.add(fmt.Sprintf("probe_allowed_targets[%d]", i), err)
		}
	}
	return l.err()
}

// Module returns the named module ("" is DefaultModuleName) and whether
// it exists.
func (c *Config) Module(name string) (*ModuleConfig, bool) {
	if name == "" {
		name = DefaultModuleName
	}
	m, ok := c.Modules[name]
	if !ok && name == DefaultModuleName {
		m = c.defaultModule
	}
	if m == nil || m.target == nil {
		return nil, false
	}
	return m, true
}

// MarshalYAML writes the module with every default and inherited value
// filled in (as Config.String writes targets), so that it parses back to
// the same module; before resolve, as written.
func (m *ModuleConfig) MarshalYAML() (any, error) {
	type plain ModuleConfig
	out := plain(*m)
	if t := m.target; t != nil {
		p := t.Probes[0]
		out.API, out.Model, out.Engine = t.API, t.Model, t.Engine
		out.SLO, out.Timeout, out.TTFTTimeout, out.StallTimeout = t.SLO, t.Timeout, t.TTFTTimeout, t.StallTimeout
		out.MaxBodyBytes, out.HTTPConfig, out.AttributionHeaders = t.MaxBodyBytes, t.HTTPConfig, t.AttributionHeaders
		out.Workload, out.Seed, out.PromptNonce = p.Workload, p.Seed, p.PromptNonce
	}
	return out, nil
}

// Target returns the module as a target of one probe at baseURL (the
// /probe target), or an error naming what is wrong with baseURL. The
// target's name is made from the URL as serve --target names one.
func (m *ModuleConfig) Target(baseURL string) (TargetConfig, error) {
	if len(baseURL) > MaxProbeTargetLen {
		return TargetConfig{}, fmt.Errorf("target is longer than %d bytes", MaxProbeTargetLen)
	}
	baseURL = strings.TrimRight(baseURL, "/")
	if err := validateURL(baseURL, false); err != nil {
		return TargetConfig{}, fmt.Errorf("target %q: %w", baseURL, err)
	}
	if err := checkURLPath(baseURL); err != nil {
		return TargetConfig{}, fmt.Errorf("target %q: %w", baseURL, err)
	}
	if u, _ := url.Parse(baseURL); strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		return TargetConfig{}, fmt.Errorf("target %q: must be the server root, without /v1", baseURL)
	}
	t := *m.target
	t.BaseURL = baseURL
	t.Probes = slices.Clone(t.Probes)
	t.Name = nameFromURL(baseURL)
	return t, nil
}
