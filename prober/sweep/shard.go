package sweep

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Shard fields of a Config. A sharded sweep is one of ShardCount processes
// (pods of a Kubernetes Indexed Job) that together send the requested
// rates: each sends every open-loop level at rate/ShardCount with its own
// seed, so the superposed streams are a Poisson stream at the requested
// rate (superposed independent Poisson processes are Poisson), and each
// writes its own run directory; `llmprobe merge` combines them.

// Sharded reports whether the sweep is one shard of several.
func (c Config) Sharded() bool { return c.ShardCount > 1 }

// shardSeed is the seed this shard draws arrivals and prompts from: the
// sweep seed itself when not sharded, else a mix of it and the shard index
// (independent streams).
func (c Config) shardSeed() int64 {
	if !c.Sharded() {
		return c.Seed
	}
	x := uint64(c.Seed) ^ uint64(c.ShardIndex+1)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	return int64(x)
}

// sendRate is the rate this process sends a step's level at: the level
// divided by ShardCount.
func (c Config) sendRate(lv float64) float64 {
	if !c.Sharded() {
		return lv
	}
	return lv / float64(c.ShardCount)
}

// shardPrompts is this shard's share of NumPrompts: NumPrompts/ShardCount,
// the first NumPrompts%ShardCount shards one more.
func (c Config) shardPrompts() int {
	if !c.Sharded() || c.NumPrompts == 0 {
		return c.NumPrompts
	}
	n := c.NumPrompts / c.ShardCount
	if c.ShardIndex < c.NumPrompts%c.ShardCount {
		n++
	}
	return n
}

// validateShard checks the shard and start-alignment fields.
func (c Config) validateShard() error {
	if err := checkBound("ShardCount", float64(c.ShardCount), c.ShardCount); err != nil {
		return err
	}
	if c.ShardCount <= 1 {
		if c.ShardIndex != 0 {
			return fieldErr("ShardIndex", "needs {ShardCount} > 1")
		}
	} else {
		if c.ShardIndex < 0 || c.ShardIndex >= c.ShardCount {
			return fieldErr("ShardIndex", "must be in 0..%d ({ShardCount} %d), got %d", c.ShardCount-1, c.ShardCount, c.ShardIndex)
		}
		if c.Auto || len(c.Concurrency) > 0 {
			return fieldErr("ShardCount", "a sharded sweep needs {Rates} LIST (a knee search or closed loops cannot be split)")
		}
		if c.burstSteps() {
			return fieldErr("ShardCount", "a sharded sweep needs finite rates (inf cannot be split)")
		}
		if c.NumPrompts > 0 && c.NumPrompts < c.ShardCount {
			return fieldErr("NumPrompts", "must be >= {ShardCount} (%d) to give every shard a request", c.ShardCount)
		}
	}
	if c.StepInterval > 0 && c.StartAt.IsZero() {
		return fieldErr("StepInterval", "needs {StartAt}")
	}
	if !c.StartAt.IsZero() && c.StepInterval == 0 && len(c.Rates)*max(c.Rounds, 1) > 1 {
		return fieldErr("StepInterval", "several steps with {StartAt} need {StepInterval} (the wall-clock period between step starts)")
	}
	return nil
}

// burstSteps reports whether any rate is +Inf.
func (c Config) burstSteps() bool {
	for _, r := range c.Rates {
		if math.IsInf(r, 1) {
			return true
		}
	}
	return false
}

// waitSlot waits, with StartAt set, until the wall-clock start of the
// slot-th step (StartAt + slot*StepInterval), so the shards of a sweep
// start each step together. It returns how late the step starts (0 when
// on time) and false when ctx ended first.
func (r *runner) waitSlot(ctx context.Context, slot int) (time.Duration, bool) {
	c := r.cfg
	if c.StartAt.IsZero() {
		return 0, true
	}
	at := c.StartAt.Add(time.Duration(slot) * c.StepInterval)
	d := time.Until(at)
	if d <= 0 {
		return -d, ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0, false
	case <-t.C:
		return 0, true
	}
}

// shardNote is the note of a step that started after its slot.
func shardNote(late time.Duration) string {
	return fmt.Sprintf("the step started %v after its --start-at slot (the previous step ran over --step-interval): the shards' steps did not overlap fully", late.Round(time.Millisecond))
}
