package manager

import (
	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/prometheus/common/config"
)

// RunningProbe returns the runner of a running probe (nil when none), for
// tests that check whether a reload restarted it.
func (m *Manager) RunningProbe(target, probe string) any {
	m.mu.Lock()
	tr := m.targets[target]
	m.mu.Unlock()
	if tr == nil {
		return nil
	}
	tr.probesMu.Lock()
	defer tr.probesMu.Unlock()
	if pr, ok := tr.probes[probe]; ok {
		return pr
	}
	return nil
}

// ServerInstance is serverInstance, for its table test.
var ServerInstance = serverInstance

// LogProbePanic logs a recovered panic as a probe of a target with apiKey
// does (probeRunner.logPanic), to logger.
func LogProbePanic(logger log.Logger, apiKey string, v any, stack []byte) error {
	ep, err := endpoint.New(endpoint.Options{BaseURL: "http://127.0.0.1:1", APIKey: config.Secret(apiKey)})
	if err != nil {
		return err
	}
	p := &probeRunner{t: &targetRunner{ep: ep}, logger: logger}
	p.logPanic(v, stack)
	return nil
}
