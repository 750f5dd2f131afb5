package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/file"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	yamlv2 "go.yaml.in/yaml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/capfile"
)

// MaxSDBytes bounds what service discovery reads from outside: one
// file_sd file, one http_sd answer (refused on its Content-Length before it
// is read, cut when longer). Enough for thousands of target groups; the
// targets kept are bounded by max_targets and MaxDiscoveredTargets.
const MaxSDBytes = 8 << 20

// ReadSDFile reads a file_sd file through the bounded reader: only a
// regular file (a FIFO, a socket, a device such as /dev/zero, a directory
// is refused without being opened for a blocking read), at most MaxSDBytes.
// The error names the file.
func ReadSDFile(path string) ([]byte, error) {
	b, err := capfile.ReadRegular(path, MaxSDBytes)
	var ne *capfile.NotRegularError
	var te *capfile.TooLargeError
	switch {
	case errors.As(err, &ne):
		return nil, fmt.Errorf("file_sd file %s: %s", path, ne.Reason())
	case errors.As(err, &te):
		return nil, fmt.Errorf("file_sd file %s: larger than %v (the bound on a file_sd file)", path, ByteSize(MaxSDBytes))
	case err != nil:
		return nil, fmt.Errorf("file_sd file: %w", err)
	}
	return b, nil
}

// ParseSDFile decodes a file_sd file's data as Prometheus does, by the
// file's extension: JSON (.json) or YAML (.yml, .yaml), a list of target
// groups; each group's Source is path:index and its labels get
// __meta_filepath.
func ParseSDFile(path string, data []byte) ([]*targetgroup.Group, error) {
	var tgs []*targetgroup.Group
	var err error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		err = json.Unmarshal(data, &tgs)
	case ".yml", ".yaml":
		err = yamlv2.UnmarshalStrict(data, &tgs)
	default:
		err = errors.New("the name must end in .json, .yml or .yaml")
	}
	if err != nil {
		return nil, fmt.Errorf("file_sd file %s: %w", path, err)
	}
	for i, tg := range tgs {
		if tg == nil {
			return nil, fmt.Errorf("file_sd file %s: target group %d is null", path, i)
		}
		tg.Source = fmt.Sprintf("%s:%d", path, i)
		if tg.Labels == nil {
			tg.Labels = model.LabelSet{}
		}
		tg.Labels[model.MetaLabelPrefix+"filepath"] = model.LabelValue(path)
	}
	return tgs, nil
}

// CheckDiscoveryFiles reads and parses every file the file_sd_configs of
// c's discovery entries match now, as the daemon would: `check-config`'s
// check (the daemon itself starts with a broken file_sd file, counting the
// failure and keeping the last good targets, as Prometheus does). path is
// the configuration file, read again for the lines of the errors.
func CheckDiscoveryFiles(path string, c *Config) error {
	var idx *nodeIndex
	var all Errors
	for i, d := range c.Discovery {
		for j, sc := range d.ServiceDiscoveryConfigs {
			f, ok := sc.(*file.SDConfig)
			if !ok {
				continue
			}
			item := -1
			for k := 0; k <= j; k++ {
				if _, ok := d.ServiceDiscoveryConfigs[k].(*file.SDConfig); ok {
					item++
				}
			}
			for _, pat := range f.Files {
				matches, err := filepath.Glob(pat)
				if err == nil && len(matches) == 0 {
					continue
				}
				for _, m := range matches {
					var data []byte
					if data, err = ReadSDFile(m); err == nil {
						_, err = ParseSDFile(m, data)
					}
					if err == nil {
						continue
					}
					if idx == nil {
						if data, rerr := ReadFile(path, MaxConfigFileBytes); rerr == nil {
							idx = newNodeIndex(data)
						} else {
							idx = &nodeIndex{byPath: map[string]int{}}
						}
					}
					p := fmt.Sprintf("discovery[%d].file_sd_configs[%d].files", i, item)
					line := 0
					if k, ok := idx.byPath[p]; ok {
						line = idx.entries[k].keyLine
					}
					all = append(all, &Error{File: path, Line: line, Path: p, Err: err})
				}
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	return all
}

// sdRedirectProblems refuses follow_redirects: true in a discovery
// mechanism's inlined HTTP client configuration (http_sd_configs,
// kubernetes_sd_configs, ...), with its line: llmprobe follows no redirect
// where credentials travel. An absent follow_redirects (Prometheus'
// default is true) is turned off (noRedirects).
func sdRedirectProblems(file string, data []byte) []*Error {
	if !strings.Contains(string(data), "follow_redirects") {
		return nil
	}
	var es []*Error
	for _, e := range sdItems(data) {
		n := resolveAlias(e.value)
		if n == nil || n.Kind != yaml.MappingNode {
			continue
		}
		walkMapping(n, e.path, nil, func(key string, v *yaml.Node, p string) {
			var on bool
			if key != "follow_redirects" {
				return
			}
			if v = resolveAlias(v); v != nil && v.Kind == yaml.ScalarNode && v.Decode(&on) == nil && on {
				es = append(es, &Error{File: file, Line: v.Line, Path: p, Err: errFollowRedirects})
			}
		})
	}
	return es
}

// NoRedirects returns sc with follow_redirects off in its inlined HTTP
// client configuration, if it has one (http, kubernetes, ... sd_configs):
// Prometheus' default is to follow them, with the credentials. sc itself
// is not changed.
func NoRedirects(sc discovery.Config) discovery.Config {
	v := reflect.ValueOf(sc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return sc
	}
	f := v.Elem().FieldByName("HTTPClientConfig")
	if !f.IsValid() || f.Type() != reflect.TypeOf(promconfig.HTTPClientConfig{}) {
		return sc
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	cp.Elem().FieldByName("HTTPClientConfig").FieldByName("FollowRedirects").SetBool(false)
	return cp.Interface().(discovery.Config)
}
