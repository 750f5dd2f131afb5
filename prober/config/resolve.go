package config

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/capfile"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/slo"
)

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
	if len(c.Targets) == 0 && len(c.Discovery) == 0 && len(c.Modules) == 0 && len(c.ProbeAllowedTargets) == 0 {
		all.add("targets", errors.New("at least one target or discovery entry is required"))
	}
	if len(c.Targets) > MaxTargets {
		all.add("targets", fmt.Errorf("at most %d targets (each runs its probes; use discovery for more, bounded apart), got %d", MaxTargets, len(c.Targets)))
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
			tp.add("", t.loadFiles(dir))
		}
		for _, fe := range tp {
			all.add(fmt.Sprintf("targets[%d]", i), fe)
		}
	}
	if !globalBad {
		all.add("", c.resolveModules(dir))
	}
	all.add("", c.resolveDiscovery(dir, *g, maxRateOK))
	all.add("tracing", c.Tracing.resolve(dir))
	return all.err()
}

// loadFiles reads what a resolved, valid target names, relative to dir:
// its API key and HTTP config, then (when those loaded) its probes'
// datasets and answer-check sets and its scheduled sweeps' datasets. A
// config target, a discovery template and a module load through it alike.
func (t *TargetConfig) loadFiles(dir string) error {
	var l problems
	l.add("", t.loadKey(dir))
	l.add("", t.loadHTTPConfig(dir))
	if len(l) == 0 {
		l.add("", t.loadDatasets(dir))
		l.add("", t.loadAnswerSets(dir))
		l.add("", t.loadSweepDatasets())
	}
	return l.err()
}

// inheritable are the target keys inherited from global when left out.
var inheritable = []string{"timeout", "ttft_timeout", "stall_timeout", "slo", "goodput_objective"}

// withoutInherited drops the problems of fields the target inherited from an
// invalid global section: they repeat the global problem.
func (t *TargetConfig) withoutInherited(l problems) problems {
	out := l[:0:0]
	for _, fe := range l {
		field, _, _ := strings.Cut(fe.Key, ".")
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
		t.API = client.DefaultAPI
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
	if p.AnswerChecks != nil {
		p.AnswerChecks.resolve()
	} else if p.set != nil && !p.set["rate"] {
		err = errf("rate", "required: requests per second, > 0")
	}
	if p.Arrival == "" && !p.set.has("arrival", false) {
		p.Arrival = DefaultProbeConfig.Arrival
	}
	if !p.set.has("burstiness", p.Burstiness != 0) {
		p.Burstiness = DefaultProbeConfig.Burstiness
	}
	if !p.set.has("max_concurrency", p.MaxConcurrency != 0) && p.Rate > 0 && !math.IsInf(p.Rate, 0) {
		p.MaxConcurrency = int(max(MinDefaultConcurrency, min(DefaultConcurrencyPerRate*math.Ceil(p.Rate), MaxDefaultConcurrency)))
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
		// (a symlink is followed, so Kubernetes secret mounts work), read
		// through the bounded reader.
		if _, err := os.Stat(path); err != nil {
			return errf("api_key_file", "cannot read the key: %w", err)
		}
		data, err := capfile.ReadRegular(path, maxKeyFileBytes)
		var ne *capfile.NotRegularError
		var te *capfile.TooLargeError
		switch {
		case errors.As(err, &ne):
			return errf("api_key_file", "%s is not a regular file", path)
		case errors.As(err, &te):
			return errf("api_key_file", "%s is larger than %v", path, ByteSize(maxKeyFileBytes))
		case err != nil:
			return errf("api_key_file", "cannot read the key: %w", err)
		}
		key = strings.TrimSpace(string(data))
		if key == "" {
			return errf("api_key_file", "%s is empty", path)
		}
		t.secretFiles = append(t.secretFiles, path)
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
