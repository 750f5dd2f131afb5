//go:build !no_kubernetes_sd

package config

// kubernetes_sd_configs, linked unless built with -tags no_kubernetes_sd:
// client-go is most of what discovery adds to the binary (39 MB of 41)
// and to the daemon's memory at start (19 MB), docs/performance.md.
import _ "github.com/prometheus/prometheus/discovery/kubernetes"
