package manager

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
