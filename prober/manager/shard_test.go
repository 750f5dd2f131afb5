package manager_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/manager"
)

func targetNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("vllm-%03d.ns%d.svc", i, i%7)
	}
	return names
}

// TestShardOwnershipExactlyOnce: for N = 1..8 every target is owned by
// exactly one of the N shards, the shares are balanced, and going from N to
// N+1 moves only the targets the new shard takes (about 1/(N+1)), where
// Prometheus' hashmod moves most of them.
func TestShardOwnershipExactlyOnce(t *testing.T) {
	names := targetNames(2000)
	for n := 1; n <= 8; n++ {
		counts := make([]int, n)
		for _, name := range names {
			owners := 0
			for i := range n {
				if (manager.Shard{Index: i, Count: n}).Owns(name) {
					owners++
					counts[i]++
				}
			}
			if owners != 1 {
				t.Fatalf("N=%d: %s owned by %d shards", n, name, owners)
			}
		}
		want := float64(len(names)) / float64(n)
		for i, c := range counts {
			if float64(c) < 0.8*want || float64(c) > 1.2*want {
				t.Errorf("N=%d: shard %d owns %d targets, want about %.0f", n, i, c, want)
			}
		}
		if n == 8 {
			break
		}
		moved, hashmodMoved := 0, 0
		for _, name := range names {
			before, after := manager.Owner(name, n), manager.Owner(name, n+1)
			if before != after {
				moved++
				if after != n {
					t.Fatalf("N=%d->%d: %s moved from shard %d to old shard %d (only the new shard may take targets)", n, n+1, name, before, after)
				}
			}
			if manager.HashmodOwner(name, n) != manager.HashmodOwner(name, n+1) {
				hashmodMoved++
			}
		}
		frac, ideal := float64(moved)/float64(len(names)), 1/float64(n+1)
		if frac > 1.25*ideal || frac < 0.75*ideal {
			t.Errorf("N=%d->%d: %.1f %% of targets moved, want about %.1f %%", n, n+1, 100*frac, 100*ideal)
		}
		if n > 1 && hashmodMoved <= moved {
			t.Errorf("N=%d->%d: hashmod moved %d, rendezvous %d: expected hashmod to move more", n, n+1, hashmodMoved, moved)
		}
		t.Logf("N=%d->%d: rendezvous moves %.1f %% (ideal %.1f %%), hashmod %.1f %%", n, n+1, 100*frac, 100*ideal,
			100*float64(hashmodMoved)/float64(len(names)))
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]manager.Shard{"": {}, "0/1": {0, 1}, "2/5": {2, 5}, " 4 / 5 ": {4, 5}} {
		got, err := manager.ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"5/5", "-1/3", "1", "a/b", "0/0", "1/2000", "1/2/3"} {
		if _, err := manager.ParseShard(in); err == nil {
			t.Errorf("ParseShard(%q) accepted", in)
		}
	}
}

// TestShardedManagersProbeEachTargetOnce: three managers, shards 0/3..2/3 of
// one config, together run every target exactly once.
func TestShardedManagersProbeEachTargetOnce(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	names := targetNames(12)
	var yml strings.Builder
	yml.WriteString("targets:\n")
	for _, n := range names {
		fmt.Fprintf(&yml, "  - name: %s\n    base_url: %s\n    probes:\n      - name: p\n        rate: 0.1\n", n, base)
	}
	cfg := parse(t, yml.String())
	var all []string
	for i := range 3 {
		m := manager.New(manager.Options{Shard: manager.Shard{Index: i, Count: 3}})
		if err := m.Apply(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		sh, owned, total := m.ShardTargets()
		st := m.Status()
		if sh.String() != fmt.Sprintf("%d/3", i) || owned != len(st) || total != len(names) {
			t.Errorf("shard %d: ShardTargets %v %d/%d, status has %d targets", i, sh, owned, total, len(st))
		}
		for _, s := range st {
			all = append(all, s.Name)
		}
		m.Stop()
	}
	slices.Sort(all)
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("targets probed by the 3 shards: %v, want each of %v once", all, want)
	}
}
