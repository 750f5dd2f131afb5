package manager

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is one replica's share of the targets when N replicas of the daemon
// split a config between them (serve --shard=i/N): the replica with Index i
// of Count probes the targets whose name Owner assigns to i, so every target
// is probed by exactly one replica. The zero Shard (Count 0) owns every
// target.
//
// Ownership is rendezvous (highest random weight) hashing of the target
// name: like Prometheus' hashmod relabelling it is a stable hash of the name
// that needs no coordination, but when Count changes from N to N+1 only the
// targets the new replica wins move (about 1/(N+1) of them), where hashmod's
// plain "hash mod N" moves about N/(N+1) (docs/scaling.md).
type Shard struct {
	Index, Count int
}

// ParseShard parses "i/N" (0 <= i < N, 1 <= N <= 1024); "" is the zero
// Shard.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT, e.g. 0/3", s)
	}
	if n < 1 || n > 1024 {
		return Shard{}, fmt.Errorf("shard %q: count must be in 1..1024", s)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: index must be in 0..%d (indexes count from 0, as a StatefulSet's pods)", s, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// String returns "i/N", or "" for the zero Shard.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}

// Owns reports whether the shard probes the target named name.
func (s Shard) Owns(name string) bool {
	return s.Count <= 1 || Owner(name, s.Count) == s.Index
}

// Owner returns the shard (0..n-1) that owns the target named name among n:
// the one with the highest hash of (name, shard).
func Owner(name string, n int) int {
	best, bestScore := 0, uint64(0)
	for i := range n {
		h := fnv.New64a()
		h.Write([]byte(name))
		var b [9]byte
		binary.BigEndian.PutUint64(b[1:], uint64(i))
		h.Write(b[:])
		if sc := mix64(h.Sum64()); i == 0 || sc > bestScore {
			best, bestScore = i, sc
		}
	}
	return best
}

// mix64 is SplitMix64's finalizer: FNV-1a's low bits mix poorly.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
