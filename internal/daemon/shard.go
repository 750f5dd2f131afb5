package daemon

import (
	"cmp"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/manager"
)

// registerShardGauges registers llmprobe_shard_targets{shard, state}: the
// targets of the loaded config this replica probes (state="owned") and all
// of them (state="configured"); shard is --shard ("0/1" without it).
func registerShardGauges(reg prometheus.Registerer, mgr *manager.Manager) {
	sh, _, _ := mgr.ShardTargets()
	name := cmp.Or(sh.String(), "0/1")
	for _, state := range []string{"owned", "configured"} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "llmprobe_shard_targets",
			Help:        "Targets of the loaded config this replica probes (state=owned) and all of them (state=configured); shard is --shard.",
			ConstLabels: prometheus.Labels{"shard": name, "state": state},
		}, func() float64 {
			_, owned, total := mgr.ShardTargets()
			if state == "owned" {
				return float64(owned)
			}
			return float64(total)
		}))
	}
}

// shardText is the landing page's shard line ("" when not sharded).
func shardText(mgr *manager.Manager) func() string {
	return func() string {
		sh, owned, total := mgr.ShardTargets()
		if sh.Count == 0 {
			return ""
		}
		return fmt.Sprintf("shard %s: probing %d of the config's %d targets (rendezvous hashing of the target name)", sh, owned, total)
	}
}
