package sweep

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestShardValidation(t *testing.T) {
	base := Config{Rates: []float64{10, 20}, NumPrompts: 8}
	for _, tt := range []struct {
		name  string
		setup func(c *Config)
		field string
	}{
		{"index without count", func(c *Config) { c.ShardIndex = 1 }, "ShardIndex"},
		{"index out of range", func(c *Config) { c.ShardIndex, c.ShardCount = 4, 4 }, "ShardIndex"},
		{"negative count", func(c *Config) { c.ShardCount = -1 }, "ShardCount"},
		{"auto", func(c *Config) { c.ShardCount, c.Rates, c.Auto = 2, nil, true }, "ShardCount"},
		{"closed loop", func(c *Config) { c.ShardCount, c.Rates, c.Concurrency = 2, nil, []int{4} }, "ShardCount"},
		{"burst", func(c *Config) { c.ShardCount, c.Rates = 2, []float64{math.Inf(1)} }, "ShardCount"},
		{"too few prompts", func(c *Config) { c.ShardCount = 9 }, "NumPrompts"},
		{"interval without start", func(c *Config) { c.StepInterval = time.Second }, "StepInterval"},
		{"start without interval", func(c *Config) { c.StartAt = time.Now() }, "StepInterval"},
		{"ok", func(c *Config) { c.ShardIndex, c.ShardCount, c.StartAt, c.StepInterval = 3, 4, time.Now(), time.Minute }, ""},
	} {
		c := base
		tt.setup(&c)
		err := c.validateShard()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.field+":") {
			t.Errorf("%s: err %v, want one naming %s", tt.name, err, tt.field)
		}
	}
}

func TestShardSplit(t *testing.T) {
	total := 0
	seeds := map[int64]bool{}
	for k := range 3 {
		c := Config{Seed: 5, NumPrompts: 10, ShardIndex: k, ShardCount: 3}
		total += c.shardPrompts()
		seeds[c.shardSeed()] = true
		if got := c.sendRate(30); got != 10 {
			t.Errorf("shard %d: send rate %v, want 10", k, got)
		}
	}
	if total != 10 || len(seeds) != 3 {
		t.Errorf("prompts %d (want 10), distinct seeds %d (want 3)", total, len(seeds))
	}
	if c := (Config{Seed: 5, NumPrompts: 10}); c.shardSeed() != 5 || c.shardPrompts() != 10 || c.sendRate(30) != 30 {
		t.Error("an unsharded config must keep its seed, count and rate")
	}
}
