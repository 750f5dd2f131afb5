package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/workload"
)

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
	if err := noEmptyEntries(values, "discovery"); err != nil {
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
	var err error
	p.set, p.workloadSet, err = presentWorkloadKeys(unmarshal)
	return err
}

// presentWorkloadKeys is presentKeys' set (see there) and the keys set
// under its workload (none when workload is not set).
func presentWorkloadKeys(unmarshal func(any) error) (set, workload keySet, err error) {
	set, values, err := presentKeys(unmarshal)
	if err != nil {
		return nil, nil, err
	}
	if w, ok := values["workload"]; ok && set["workload"] {
		return set, mappingKeys(&w), nil
	}
	return set, keySet{}, nil
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
