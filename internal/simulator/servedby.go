package simulator

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"

	"github.com/alecthomas/kingpin/v2"
)

// MaxServedByReplicas bounds --served-by-replicas.
const MaxServedByReplicas = 4096

// DefaultSessionHeader is --session-header's default: the request header
// that names a conversation (vllm-bench's and llmprobe's X-Session-ID).
const DefaultSessionHeader = "X-Session-ID"

// addServedByFlags registers --served-by, --served-by-replicas and
// --session-header.
func addServedByFlags(cmd *kingpin.CmdClause, c *Config) {
	cmd.Flag("served-by", "Answer every generation request with the header \"x-served-by: NAME\", as a gateway names "+
		"the replica that served it (llmprobe's attribution_headers; the x-request-id of a request is always echoed).").
		Default(c.ServedBy).StringVar(&c.ServedBy)
	cmd.Flag("served-by-replicas", "With --served-by, answer NAME-<n> with n the request number modulo this count, as a "+
		"gateway spreading requests over replicas (0 or 1: NAME alone).").
		Default(strconv.Itoa(c.ServedByReplicas)).IntVar(&c.ServedByReplicas)
	cmd.Flag("session-header", "With --served-by-replicas, a request carrying this header is answered by the replica "+
		"its value hashes to, so that a conversation stays where its prefix is cached, as a KV-cache-aware router "+
		"keeps sessions (--fault.session-scatter breaks it); empty: requests are spread by number alone.").
		Default(c.SessionHeader).StringVar(&c.SessionHeader)
}

// validateServedBy checks --served-by and --served-by-replicas.
func (c Config) validateServedBy() error {
	switch {
	case c.ServedByReplicas < 0 || c.ServedByReplicas > MaxServedByReplicas:
		return fmt.Errorf("--served-by-replicas must be between 0 and %d, got %d", MaxServedByReplicas, c.ServedByReplicas)
	case c.ServedByReplicas > 1 && c.ServedBy == "":
		return fmt.Errorf("--served-by-replicas needs --served-by")
	case len(c.ServedBy) > 256:
		return fmt.Errorf("--served-by must be at most 256 bytes, got %d", len(c.ServedBy))
	case len(c.SessionHeader) > 64:
		return fmt.Errorf("--session-header must be at most 64 bytes, got %d", len(c.SessionHeader))
	}
	for i := 0; i < len(c.SessionHeader); i++ {
		if b := c.SessionHeader[i]; b <= 0x20 || b >= 0x7f || b == ':' {
			return fmt.Errorf("--session-header must be a header name, got %q", c.SessionHeader)
		}
	}
	for i := 0; i < len(c.ServedBy); i++ {
		if b := c.ServedBy[i]; b < 0x20 || b == 0x7f {
			return fmt.Errorf("--served-by must not contain control characters, got %q", c.ServedBy)
		}
	}
	return nil
}

// servedBy sets the x-served-by header of request reqNo (none without
// ServedBy) and returns the replica that answers it: -1 without
// ServedByReplicas > 1, else the replica its session header hashes to
// (SessionHeader; another replica, drawn, for a request that
// Faults.SessionScatter scatters), or reqNo modulo the replicas for a
// request that names no session.
func (s *Simulator) servedBy(h http.Header, r *http.Request, reqNo uint64) int {
	name := s.cfg.ServedBy
	if name == "" {
		return -1
	}
	replica := -1
	if n := s.cfg.ServedByReplicas; n > 1 {
		replica = int(reqNo % uint64(n))
		if sid := s.sessionOf(r); sid != "" {
			replica = s.sessionReplica(sid, reqNo, n)
		}
		name += "-" + strconv.Itoa(replica)
	}
	h.Set("X-Served-By", name)
	return replica
}

// sessionOf returns the value of r's session header ("" without
// SessionHeader or when r carries none).
func (s *Simulator) sessionOf(r *http.Request) string {
	if s.cfg.SessionHeader == "" || r == nil {
		return ""
	}
	return r.Header.Get(s.cfg.SessionHeader)
}

// sessionReplica is the replica of session sid among n (> 1): the one its
// value hashes to, or, for request reqNo drawn to scatter
// (Faults.SessionScatter), one of the n-1 others.
func (s *Simulator) sessionReplica(sid string, reqNo uint64, n int) int {
	f := fnv.New64a()
	f.Write([]byte(sid))
	home := int(f.Sum64() % uint64(n))
	p := s.faults.Load().SessionScatter
	draw := hash2(uint64(s.cfg.Seed)^0x5ca77e4, reqNo)
	if !(p > 0) || uniform(draw) >= p {
		return home
	}
	return (home + 1 + int(hash2(draw, 1)%uint64(n-1))) % n
}

// replicaSeed is the first link of the prefix-cache hash chain of a
// request answered by replica n-1 (genRequest.replica; 0: no replicas, the
// chain of a lone engine): each replica caches apart, as separate engines
// do, so a turn sent to another replica than its conversation's finds none
// of its prefix.
func replicaSeed(n int) uint64 {
	if n <= 0 {
		return 0
	}
	return hash2(0x7e911ca, uint64(n))
}
