package simulator

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/alecthomas/kingpin/v2"
)

// MaxServedByReplicas bounds --served-by-replicas.
const MaxServedByReplicas = 4096

// addServedByFlags registers --served-by and --served-by-replicas.
func addServedByFlags(cmd *kingpin.CmdClause, c *Config) {
	cmd.Flag("served-by", "Answer every generation request with the header \"x-served-by: NAME\", as a gateway names "+
		"the replica that served it (llmprobe's attribution_headers; the x-request-id of a request is always echoed).").
		Default(c.ServedBy).StringVar(&c.ServedBy)
	cmd.Flag("served-by-replicas", "With --served-by, answer NAME-<n> with n the request number modulo this count, as a "+
		"gateway spreading requests over replicas (0 or 1: NAME alone).").
		Default(strconv.Itoa(c.ServedByReplicas)).IntVar(&c.ServedByReplicas)
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
	}
	for i := 0; i < len(c.ServedBy); i++ {
		if b := c.ServedBy[i]; b < 0x20 || b == 0x7f {
			return fmt.Errorf("--served-by must not contain control characters, got %q", c.ServedBy)
		}
	}
	return nil
}

// servedBy sets the x-served-by header of request reqNo (none without
// ServedBy).
func (s *Simulator) servedBy(h http.Header, reqNo uint64) {
	name := s.cfg.ServedBy
	if name == "" {
		return
	}
	if n := s.cfg.ServedByReplicas; n > 1 {
		name += "-" + strconv.FormatUint(reqNo%uint64(n), 10)
	}
	h.Set("X-Served-By", name)
}
