package config

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// keySalt keys the HMAC that stands for an API key in fingerprints: a change
// of key changes the fingerprint, while the fingerprint, which may be logged,
// cannot be used to guess the key offline.
var keySalt = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go >= 1.24)
	return b
}()

// ProbeID names one probe of one target.
type ProbeID struct {
	Target string
	Probe  string
}

// Fingerprint returns a hex digest of every setting of the target that
// affects its probes (its probes excluded), the API key included as a keyed
// hash. Equal fingerprints mean the same settings and key. Fingerprints are
// comparable within one process only (the key hash is salted per process).
func (t TargetConfig) Fingerprint() string {
	t.Probes = nil
	var keyMAC []byte
	if t.key != nil {
		m := hmac.New(sha256.New, keySalt)
		m.Write([]byte(t.key.s))
		keyMAC = m.Sum(nil)
	}
	return digest(struct {
		Target TargetConfig
		KeyMAC []byte
	}{t, keyMAC})
}

// Fingerprint returns a hex digest of every setting of the probe.
func (p ProbeConfig) Fingerprint() string { return digest(p) }

// Fingerprints returns, for every probe of every target, a digest of the
// target's settings and the probe's. A probe whose entry is missing from a
// reloaded config was removed; one whose value differs changed and must be
// restarted; the others can keep running untouched.
func (c *Config) Fingerprints() map[ProbeID]string {
	out := make(map[ProbeID]string)
	for _, t := range c.Targets {
		tf := t.Fingerprint()
		for _, p := range t.Probes {
			out[ProbeID{t.Name, p.Name}] = digest([]string{tf, p.Fingerprint()})
		}
	}
	return out
}

// Hash returns a digest of the whole configuration (global section, every
// target, probe and API key). Like Fingerprint it is comparable within one
// process only.
func (c *Config) Hash() string {
	fps := c.Fingerprints()
	ids := make([]ProbeID, 0, len(fps))
	for id := range fps {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Target != ids[j].Target {
			return ids[i].Target < ids[j].Target
		}
		return ids[i].Probe < ids[j].Probe
	})
	parts := []any{c.Global}
	for _, id := range ids {
		parts = append(parts, id, fps[id])
	}
	return digest(parts)
}

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
