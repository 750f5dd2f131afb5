package manager

import (
	"testing"
	"time"
)

// TestShardTargetsNeverWaitsForApply: llmprobe_shard_targets is a
// GaugeFunc that calls ShardTargets during a scrape, and Apply holds the
// manager's lock while the probes it starts create their series, which
// waits for the metric vectors' locks that the same scrape holds: with
// ShardTargets under that lock a scrape during Apply deadlocked the daemon
// (seen with 100 discovered targets starting). ShardTargets must return
// while the lock is held.
func TestShardTargetsNeverWaitsForApply(t *testing.T) {
	m := New(Options{Shard: Shard{Index: 1, Count: 2}})
	m.mu.Lock()
	defer m.mu.Unlock()
	done := make(chan Shard)
	go func() { s, _, _ := m.ShardTargets(); done <- s }()
	select {
	case s := <-done:
		if s != (Shard{Index: 1, Count: 2}) {
			t.Errorf("shard %v", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ShardTargets waits for the manager's lock: a scrape during Apply deadlocks the daemon")
	}
}
