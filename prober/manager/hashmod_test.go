package manager

import (
	"crypto/md5"
	"encoding/binary"
)

// HashmodOwner is Prometheus' hashmod relabel action on the name: the low 8
// bytes of its MD5, big-endian, mod n. It is here for comparison
// (docs/scaling.md, the shard tests): a Prometheus that scrapes the
// replicas can shard the same way only by hashmod, and hashmod moves most
// targets when n changes.
func HashmodOwner(name string, n int) int {
	sum := md5.Sum([]byte(name))
	return int(binary.BigEndian.Uint64(sum[8:]) % uint64(n))
}
