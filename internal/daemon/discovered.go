package daemon

import (
	"context"
	"maps"
	"slices"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/config"
)

// withDiscovered returns c with the discovered targets appended (their
// names never collide with c's: discovery drops such a target and counts
// it), and the discovered targets' labels by name.
func (d *daemon) withDiscovered(c *config.Config) (*config.Config, map[string]map[string]string) {
	taken := make(map[string]bool, len(c.Targets))
	for _, t := range c.Targets {
		taken[t.Name] = true
	}
	found := d.disco.Targets(taken)
	if len(found) == 0 {
		return c, nil
	}
	full := *c
	full.Targets = slices.Grow(slices.Clone(c.Targets), len(found))
	labels := make(map[string]map[string]string, len(found))
	for _, t := range found {
		full.Targets = append(full.Targets, t.Config)
		labels[t.Config.Name] = t.Labels
	}
	return &full, labels
}

// mergeLabels returns a's labels overridden by b's.
func mergeLabels(a, b map[string]map[string]string) map[string]map[string]string {
	m := maps.Clone(a)
	if m == nil {
		m = map[string]map[string]string{}
	}
	maps.Copy(m, b)
	return m
}

// followDiscovery applies the discovered targets each time discovery
// reports a change, with the config last applied, until ctx ends. A
// failure to apply keeps the targets running as they were.
func (d *daemon) followDiscovery(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.disco.Updates():
		}
		d.applyMu.Lock()
		if d.static != nil && ctx.Err() == nil {
			if err := d.applyTargets(ctx, d.static); err != nil {
				level.Error(d.logger).Log("msg", "cannot apply the discovered targets, keeping the running ones", "err", err)
			}
		}
		d.applyMu.Unlock()
	}
}
