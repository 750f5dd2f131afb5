package config

import (
	"slices"
)

// SecretFiles returns the files credentials were read from at load, sorted
// and without repeats: every api_key_file and http_config *_file and
// header file of the targets, the discovery templates and the /probe
// modules, as opened (relative paths resolved against the config file's
// directory). The daemon watches them and reloads when one changes, so a
// rotated key is used without a restart (docs/configuration.md, "Rotating
// secrets").
func (c *Config) SecretFiles() []string {
	var out []string
	for _, t := range c.Targets {
		out = append(out, t.secretFiles...)
	}
	for _, d := range c.Discovery {
		out = append(out, d.Target.secretFiles...)
	}
	for _, m := range c.Modules {
		if m.target != nil {
			out = append(out, m.target.secretFiles...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
