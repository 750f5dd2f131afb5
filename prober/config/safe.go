package config

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SafeConfig holds the current configuration for concurrent readers and
// swaps it on reload only when the new one is valid (and, with ReloadWith,
// applied): on error the old configuration stays in place. It exports
// llmprobe_config_last_reload_successful (1 or 0) and
// llmprobe_config_last_reload_success_timestamp_seconds.
//
// Get may be called from any goroutine. Reloads are serialised.
type SafeConfig struct {
	mu sync.RWMutex
	c  *Config

	reloadMu    sync.Mutex // serialises Reload, ReloadWith, Set, MarkFailed
	success     prometheus.Gauge
	successTime prometheus.Gauge
	now         func() time.Time
}

// NewSafeConfig returns an empty holder (Get returns nil until the first
// successful Reload or Set) whose metrics are registered on reg (none when
// reg is nil). It panics if the metrics are already registered.
func NewSafeConfig(reg prometheus.Registerer) *SafeConfig {
	sc := &SafeConfig{
		success: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llmprobe_config_last_reload_successful",
			Help: "Whether the last configuration load or reload succeeded (1) or failed (0).",
		}),
		successTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llmprobe_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load or reload.",
		}),
		now: time.Now,
	}
	if reg != nil {
		reg.MustRegister(sc.success, sc.successTime)
	}
	return sc
}

// Get returns the current configuration (nil before the first successful
// load). The returned Config must not be modified.
func (sc *SafeConfig) Get() *Config {
	sc.mu.RLock()
	defer sc.mu.RUnlock()
	return sc.c
}

// Reload loads the file at path and swaps it in when it is valid; on error
// the current configuration is kept, the success gauge goes to 0 and the
// error (an *Error, or Errors when the file has several problems; see
// Load) is returned.
func (sc *SafeConfig) Reload(path string) error { return sc.ReloadWith(path, nil) }

// ReloadWith is Reload with a step between validation and the swap: apply
// receives the new, valid configuration and builds whatever depends on it
// (probe loops); the swap happens only when it returns nil, so readers never
// see a configuration that failed to apply. apply may be nil; it runs with
// reloads blocked, Get still served.
func (sc *SafeConfig) ReloadWith(path string, apply func(*Config) error) error {
	sc.reloadMu.Lock()
	defer sc.reloadMu.Unlock()
	c, err := Load(path)
	if err == nil && apply != nil {
		err = apply(c)
	}
	if err != nil {
		sc.success.Set(0)
		return err
	}
	sc.swap(c)
	return nil
}

// Set installs c (a configuration from Parse, Load or ForTarget) and counts
// it as a successful load.
func (sc *SafeConfig) Set(c *Config) {
	sc.reloadMu.Lock()
	defer sc.reloadMu.Unlock()
	sc.swap(c)
}

// MarkFailed sets the success gauge to 0 without touching the current
// configuration, for a reload that failed after loading (prefer ReloadWith,
// which never installs a configuration that then fails).
func (sc *SafeConfig) MarkFailed() {
	sc.reloadMu.Lock()
	defer sc.reloadMu.Unlock()
	sc.success.Set(0)
}

func (sc *SafeConfig) swap(c *Config) {
	sc.mu.Lock()
	sc.c = c
	sc.mu.Unlock()
	sc.success.Set(1)
	sc.successTime.Set(float64(sc.now().UnixNano()) / 1e9)
}
