package manager

import "context"

// Rediscover runs target's discovery now, as its periodic refresh does,
// and reports whether it succeeded (false for an unknown target).
func (m *Manager) Rediscover(ctx context.Context, target string) bool {
	m.mu.Lock()
	tr := m.targets[target]
	m.mu.Unlock()
	return tr != nil && tr.discover(ctx, true)
}
