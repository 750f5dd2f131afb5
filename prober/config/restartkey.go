package config

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/llmprobe/llmprobe/prober/slo"
)

// InPlaceTargetFields names the TargetConfig fields that RestartKey leaves
// out: the SLO and the goodput objective, which a reload swaps into running
// probes, the probes, each of which has its own RestartKey, and the sweep
// settings (max_sweep_rate, sweeps), which the sweep scheduler reads and
// the probes never do. Every other field, present or added later, restarts
// the target when it changes.
var InPlaceTargetFields = []string{"SLO", "GoodputObjective", "Probes", "MaxSweepRate", "Sweeps"}

// InPlaceProbeFields names the ProbeConfig fields that RestartKey leaves
// out: none, so that any change restarts the probe.
var InPlaceProbeFields = []string{}

// keySalt salts the hash that stands for an API key in a RestartKey, so that
// a key that leaked into a log cannot be used to guess the API key offline.
// RestartKeys are therefore comparable within one process only.
var keySalt = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go >= 1.24)
	return b
}()

// RestartKey returns a digest of the target's settings that a running
// target cannot take without a restart (new clients, a new discovery): the
// JSON of the whole struct except InPlaceTargetFields, with the API key and
// the secrets of http_config (inline or the content of their files, as read
// at load) as a salted SHA-256 hash, never in clear. A reload restarts a target whose
// RestartKey changed and keeps the others running. Comparable within one
// process only.
func (t TargetConfig) RestartKey() string {
	t.SLO = slo.SLO{}
	t.GoodputObjective = 0
	t.Probes = nil
	t.MaxSweepRate, t.Sweeps = 0, nil
	var keyHash string
	if t.key != nil {
		h := sha256.New()
		h.Write(keySalt)
		h.Write([]byte(t.key.s))
		keyHash = hex.EncodeToString(h.Sum(nil))
	}
	t.HTTPConfig = httpConfigForKey(t.HTTPConfig)
	return digest(struct {
		Target   TargetConfig
		KeyHash  string
		HTTPHash string
	}{t, keyHash, t.httpHash})
}

// RestartKey returns a digest of every setting of the probe (the JSON of the
// whole struct; InPlaceProbeFields is empty): a reload restarts a probe
// whose RestartKey changed, or whose target's did.
func (p ProbeConfig) RestartKey() string { return digest(p) }

// digest is the hex SHA-256 of v's JSON encoding (struct fields in
// declaration order, map keys sorted: deterministic).
func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unsupported values (NaN rates) fail; those never pass
		// validation, but keep the digest total anyway.
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
