// Package knob owns the rules that a load knob keeps on every surface that
// takes it: a daemon probe's YAML (prober/config), a sweep's flags, a
// scheduled sweep's YAML and the sweep API's body (prober/sweep). The
// shared bounds are its constants; the rules between knobs (arrival and
// burstiness, a workload file and the length keys, rates and concurrency)
// are its functions, each returning a *Problem that names the knob at
// fault by its field path and says why. It imports nothing of llmprobe
// but prober/arrival: both config and sweep call it, neither calls the
// other.
package knob

import "time"

// Shared bounds of the load one process may be asked for. prober/config
// and prober/sweep name them under their own constants
// (config.MaxProbeConcurrency, sweep.MaxInFlight, ...), which
// docs/security.md lists.
const (
	// MaxInFlight bounds the requests in flight of a probe
	// (max_concurrency) and of a sweep (concurrency levels and
	// max_concurrency): every request in flight holds a socket (an
	// ephemeral port: about 28,000 per destination with Linux's defaults),
	// a goroutine and its buffers, so a level of 1e8 took a daemon to 1.35
	// GB and 30,000 sockets before it died. Beyond it, shard the sweep
	// (docs/scaling.md).
	MaxInFlight = 10_000
	// MaxTimeout bounds a request's timeouts (a target's or probe's
	// timeout, a sweep's --timeout, --ttft-timeout and --stall-timeout):
	// a request held longer holds its connection and buffers for an answer
	// no figure can use.
	MaxTimeout = 24 * time.Hour
	// MaxCostPerHour bounds a price in USD per hour (a target's
	// cost_per_hour, a sweep's --cost-per-hour): a price above it is a
	// typo, not a deployment.
	MaxCostPerHour = 1e6
)
