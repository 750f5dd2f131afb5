package config

import (
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v3"

	// The service discovery mechanisms a discovery entry may use: each
	// registers its <name>_sd_configs key with discovery's YAML decoding.
	// Only these (and kubernetes, sd_kubernetes.go) are linked, to keep
	// the binary small.
	_ "github.com/prometheus/prometheus/discovery/dns"
	_ "github.com/prometheus/prometheus/discovery/file"
	httpsd "github.com/prometheus/prometheus/discovery/http"
)

// DefaultDiscoveryMaxTargets is the default max_targets of a discovery
// entry: the most targets it may start.
const DefaultDiscoveryMaxTargets = 100

// MaxDiscoveredTargets bounds the targets that discovery may start, all
// entries together (and so each entry's max_targets): every target runs
// its probes, holds clients and exports its series.
const MaxDiscoveredTargets = 1000

// MaxDiscoveryEntries bounds the entries of the discovery list.
const MaxDiscoveryEntries = 64

// MaxTargetNameLen bounds the name of a discovered target, in bytes (it
// is a label value and a directory name).
const MaxTargetNameLen = 200

// MaxDiscoveredLabelNameLen bounds the name, in bytes, of each label of a
// discovered target after relabelling (the __meta_* labels excepted: they
// are read by relabelling only, never kept); a longer one drops the target
// as invalid.
const MaxDiscoveredLabelNameLen = 256

// MaxDiscoveredLabelValueLen bounds the value, in bytes, of each label of
// a discovered target after relabelling (__meta_* excepted, as for names):
// __address__, __scheme__, __path_prefix__, __target_name__ and any other;
// a longer one drops the target as invalid before any label set is built
// from it. The labels a target keeps have the tighter
// MaxTargetLabelValueLen.
const MaxDiscoveredLabelValueLen = 4096

// DiscoveredNameLabel is the label that, when relabelling sets it, names a
// discovered target (instead of <entry name>:<address><path prefix>).
const DiscoveredNameLabel = "__target_name__"

// templateBaseURL stands in for a discovered target's base_url while its
// template is validated at load.
const templateBaseURL = "http://discovered.invalid"

// DiscoveryConfig is one entry of the top-level discovery list: Prometheus
// service discovery (the <mechanism>_sd_configs and static_configs keys of a
// Prometheus scrape_config, decoded by prometheus/discovery itself), the
// relabelling of what it finds (relabel_configs, as in a scrape_config) and
// the template of the targets it yields. docs/discovery.md.
type DiscoveryConfig struct {
	// Name identifies the entry: required, unique, [a-zA-Z0-9_.:-]+; it is
	// the discovery label of llmprobe_discovery_* and the first part of
	// its targets' names.
	Name string `yaml:"name"`
	// ServiceDiscoveryConfigs are the entry's static_configs,
	// file_sd_configs, http_sd_configs, dns_sd_configs and
	// kubernetes_sd_configs, inlined in the entry as in a scrape_config:
	// at least one.
	ServiceDiscoveryConfigs discovery.Configs `yaml:"-"`
	// RelabelConfigs rewrite each discovered label set, as a
	// scrape_config's relabel_configs do; a dropped one is no target.
	RelabelConfigs []*relabel.Config `yaml:"relabel_configs,omitempty"`
	// Target is the template of every target of the entry: any key of a
	// target except name and base_url (which discovery gives); metrics_url
	// only as none. After load it is resolved (defaults, inherited values,
	// API key read) with an empty Name and BaseURL.
	Target TargetConfig `yaml:"target"`
	// MaxTargets is the most targets the entry starts (1 to
	// MaxDiscoveredTargets, default DefaultDiscoveryMaxTargets); the rest
	// are dropped and counted.
	MaxTargets int `yaml:"max_targets"`
}

// reDynamicType matches the name of the struct type discovery decodes an
// entry into, in yaml's "field x not found in type ..." errors.
var reDynamicType = regexp.MustCompile(`not found in type struct \{.*\}$`)

// UnmarshalYAML applies the defaults and decodes strictly through
// prometheus/discovery, which adds the keys of the registered mechanisms.
func (d *DiscoveryConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*d = DiscoveryConfig{MaxTargets: DefaultDiscoveryMaxTargets, Target: DefaultTargetConfig}
	err := discovery.UnmarshalYAMLWithInlineConfigs(d, unmarshal)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for i, s := range te.Errors {
			te.Errors[i] = reDynamicType.ReplaceAllString(s, "not found in type config.DiscoveryConfig")
		}
	}
	for i, sc := range d.ServiceDiscoveryConfigs {
		d.ServiceDiscoveryConfigs[i] = NoRedirects(sc) // sdinput.go
	}
	return err
}

// MarshalYAML writes the mechanisms' keys inline, as they were read.
func (d DiscoveryConfig) MarshalYAML() (any, error) {
	return discovery.MarshalYAMLWithInlineConfigs(&d)
}

// sdKeys are the YAML keys of the mechanisms an entry may use.
func sdKeys() []string {
	keys := []string{"static_configs"}
	for _, n := range discovery.RegisteredConfigNames() {
		if n != "static" {
			keys = append(keys, n+"_sd_configs")
		}
	}
	return keys
}

// discoveryPathRE matches the path of a mechanism's list item.
var discoveryPathRE = regexp.MustCompile(`^discovery\[\d+\]\.([a-z_]+_configs)\[\d+\]$`)

// discoveryProblems checks every mechanism's item of every discovery
// entry before the whole is decoded: the mechanisms validate while they
// decode, and yaml would report such a failure without its line or field.
// Type errors and unknown keys are left to the strict decoding.
func discoveryProblems(file string, data []byte) []*Error {
	if !strings.Contains(string(data), "discovery") {
		return nil
	}
	var es []*Error
	for mech, e := range sdItems(data) {
		one := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: mech},
			{Kind: yaml.SequenceNode, Content: []*yaml.Node{e.value}},
		}}
		var d DiscoveryConfig
		err := one.Decode(&d)
		var te *yaml.TypeError
		if err != nil && !errors.As(err, &te) {
			es = append(es, &Error{File: file, Line: e.keyLine, Path: e.path, Err: errors.New(strings.TrimPrefix(err.Error(), "yaml: "))})
		}
	}
	return es
}

// sdItems yields, for every item of a discovery mechanism's list
// (discovery[i].<mechanism>_configs[j]) in data, the mechanism's key and
// the item's node entry.
func sdItems(data []byte) iter.Seq2[string, indexEntry] {
	return func(yield func(string, indexEntry) bool) {
		keys := sdKeys()
		for _, e := range newNodeIndex(data).entries {
			m := discoveryPathRE.FindStringSubmatch(e.path)
			if m == nil || !slices.Contains(keys, m[1]) {
				continue
			}
			if !yield(m[1], e) {
				return
			}
		}
	}
}

// resolveDiscovery validates the discovery entries and resolves their
// target templates as targets are (inherited values, files, keys), the
// problems of a template under discovery[i].target. Relative paths of the
// mechanisms (files, http_sd's TLS files) are made relative to dir, as
// Prometheus does.
func (c *Config) resolveDiscovery(dir string, g GlobalConfig, maxRateOK bool) error {
	var all problems
	if len(c.Discovery) > MaxDiscoveryEntries {
		all.add("discovery", fmt.Errorf("at most %d entries, got %d", MaxDiscoveryEntries, len(c.Discovery)))
		return all.err()
	}
	seen := map[string]int{}
	for i := range c.Discovery {
		d := &c.Discovery[i]
		var l problems
		if l.add("name", validateName(d.Name)) {
		} else if j, dup := seen[d.Name]; dup {
			l.add("name", fmt.Errorf("duplicate discovery name %q (also discovery[%d])", d.Name, j))
		} else {
			seen[d.Name] = i
		}
		if len(d.ServiceDiscoveryConfigs) == 0 {
			l.add("", fmt.Errorf("at least one of %s is required", strings.Join(sdKeys(), ", ")))
		}
		for _, sc := range d.ServiceDiscoveryConfigs {
			if ds, ok := sc.(promconfig.DirectorySetter); ok && dir != "" {
				ds.SetDirectory(dir)
			}
		}
		if d.MaxTargets < 1 || d.MaxTargets > MaxDiscoveredTargets {
			l.add("max_targets", fmt.Errorf("must be in 1..%d (the most targets discovery may start, all entries together), got %d",
				MaxDiscoveredTargets, d.MaxTargets))
		}
		for j, rc := range d.RelabelConfigs {
			if rc == nil {
				l.add(fmt.Sprintf("relabel_configs[%d]", j), errors.New("empty relabel config"))
				continue
			}
			l.add(fmt.Sprintf("relabel_configs[%d]", j), rc.Validate(model.LegacyValidation))
		}
		l.add("target", d.resolveTemplate(dir, g, maxRateOK))
		all.add(fmt.Sprintf("discovery[%d]", i), l.err())
	}
	if len(all) == 0 {
		all.add("discovery", checkTargetBudget(c.Discovery))
	}
	return all.err()
}

// checkTargetBudget checks that the entries' max_targets, which each entry
// has reserved, add up to at most MaxDiscoveredTargets: so no entry, however
// many targets its source lists, takes another's share.
func checkTargetBudget(ds []DiscoveryConfig) error {
	sum := 0
	for _, d := range ds {
		sum += d.MaxTargets
	}
	if sum <= MaxDiscoveredTargets {
		return nil
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s %d", d.Name, d.MaxTargets)
	}
	return fmt.Errorf("the entries' max_targets add up to %d (%s), more than the %d discovered targets all entries may start: "+
		"each entry's max_targets is reserved for it, lower some (the default is %d)",
		sum, strings.Join(parts, ", "), MaxDiscoveredTargets, DefaultDiscoveryMaxTargets)
}

// resolveTemplate resolves and validates the target template, with the
// entry's name and a stand-in base URL in place of what discovery gives.
func (d *DiscoveryConfig) resolveTemplate(dir string, g GlobalConfig, maxRateOK bool) error {
	t := &d.Target
	var l problems
	if t.Name != "" {
		l.add("name", errors.New("not allowed in a discovery target template: a discovered target is named "+
			"<discovery name>:<address>, or by the "+DiscoveredNameLabel+" label relabelling sets"))
	}
	if t.BaseURL != "" {
		l.add("base_url", errors.New("not allowed in a discovery target template: a discovered target's base URL is "+
			"<__scheme__>://<__address__><__path_prefix__>"))
	}
	if t.RawMetricsURL != "" && t.RawMetricsURL != MetricsURLNone {
		l.add("metrics_url", fmt.Errorf("only %q is allowed in a discovery target template (a discovered target's "+
			"metrics URL is its base URL + /metrics), got %q", MetricsURLNone, t.RawMetricsURL))
	}
	if len(l) > 0 {
		return l.err()
	}
	t.Name, t.BaseURL = d.Name, templateBaseURL
	if validateName(d.Name) != nil {
		t.Name = "template"
	}
	l.add("", t.resolve(g))
	l.add("", t.readSchemaFiles(dir))
	l.add("", t.readSweepFiles(dir))
	if maxRateOK {
		l.add("", t.validateRates(g.MaxRate))
	}
	l.add("", t.Validate())
	if len(l) == 0 {
		l.add("", t.loadFiles(dir))
	}
	t.Name, t.BaseURL = "", ""
	return l.err()
}

// NewTarget returns the target of the entry discovered at baseURL, named
// name, with labels: the template with that name and base URL, and the
// seeds of its probes that the template left out derived from the new name.
// The error says what is invalid (name, base URL, labels); such a target is
// dropped by the caller. Labels are the discovered labels (exported on
// every series of the target); they are checked as static labels are.
func (d *DiscoveryConfig) NewTarget(name, baseURL string, labels map[string]string) (TargetConfig, error) {
	t := d.Target
	t.Name = name
	t.BaseURL = strings.TrimRight(baseURL, "/")
	t.Probes = slices.Clone(d.Target.Probes)
	for i := range t.Probes {
		if p := &t.Probes[i]; !p.set.has("seed", false) {
			p.Seed = DeriveSeed(name, p.Name)
		}
	}
	var l problems
	if len(name) > MaxTargetNameLen {
		l.add("name", fmt.Errorf("at most %d bytes, got %d", MaxTargetNameLen, len(name)))
	}
	l.add("", t.Validate())
	validateLabels(&l, labels)
	if err := l.err(); err != nil {
		return TargetConfig{}, err
	}
	return t, nil
}

// DiscoveredName returns the default name of a target of the entry named
// entry at address with pathPrefix: entry:address followed by the path
// prefix, every character outside [a-zA-Z0-9_.:-] replaced by _
// (pods:10.0.0.7:8000, gw:gw.example:443_llama).
func DiscoveredName(entry, address, pathPrefix string) string {
	b := []byte(entry + ":" + address + strings.TrimRight(pathPrefix, "/"))
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("_.:-", ch) >= 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// redactedDiscovery returns the entries with the credentials an http_sd
// URL can carry (userinfo, query values) redacted, for Config.Redacted;
// the mechanisms' secrets print as <secret> already.
func redactedDiscovery(ds []DiscoveryConfig) []DiscoveryConfig {
	out := slices.Clone(ds)
	for i := range out {
		out[i].ServiceDiscoveryConfigs = slices.Clone(out[i].ServiceDiscoveryConfigs)
		for j, sc := range out[i].ServiceDiscoveryConfigs {
			if h, ok := sc.(*httpsd.SDConfig); ok {
				cp := *h
				cp.URL = redactURL(cp.URL)
				out[i].ServiceDiscoveryConfigs[j] = &cp
			}
		}
	}
	return out
}
