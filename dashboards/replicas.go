package dashboards

import "fmt"

// Replica series are selected by cluster and probe only: a service's
// replicas are many targets, and its median has no target label.
const (
	rsel          = `cluster=~"$cluster", probe=~"$probe"`
	serviceLegend = `{{namespace}}/{{service}} {{probe}}`
	replicaLegend = `{{pod}} {{target}} ({{namespace}}/{{service}} {{probe}})`
)

// replicasSection is the "Replicas" row of the SLO overview: the
// per-replica rules (rules/llmprobe.replicas.yml) by service — the state of
// LLMProbeReplicaOutlier, how many replicas count, the worst replica's
// TTFT and TPOT p99 over its service's median, and each replica's p99
// against that median. Only targets whose series carry a service label
// (discovered replicas, docs/discovery.md) appear; the target variable
// does not filter them.
func replicasSection() section {
	worst := func(short, family string) *Panel {
		return stat("Worst replica: "+short+" p99 / median", fmt.Sprintf("The slowest replica of each service and probe "+
			"(its pod and target in the name) and its %s p99 over the median of the service's replicas, over 10 "+
			"minutes (service_probe:%s_p99:worst_ratio_median_10m). LLMProbeReplicaOutlier fires above 2 held for 15 "+
			"minutes. Shown only while at least 3 replicas have 200 successful requests in 10 minutes.", short, family), "x", 6,
			steps("green", 1.5, "orange", 2.0, "red"),
			instant(fmt.Sprintf(`service_probe:%s_p99:worst_ratio_median_10m{%s}`, family, rsel),
				serviceLegend+`: {{pod}} {{target}}`))
	}
	perReplica := func(short, family string) *Panel {
		return timeseries(short+" p99 per replica vs the service's median", fmt.Sprintf("Each replica's %s p99 over 10 "+
			"minutes (service_target_probe:%s:p99_10m) and the median of its service's replicas (dashed; "+
			"service_probe:%s_p99:median_10m, over the replicas with 200 successful requests or more in 10 minutes, "+
			"while at least 3 have).", short, family, family), "s", 12,
			q(fmt.Sprintf(`service_target_probe:%s:p99_10m{%s}`, family, rsel), replicaLegend),
			q(fmt.Sprintf(`service_probe:%s_p99:median_10m{%s}`, family, rsel), "median "+serviceLegend),
		).minZero().dashed("B", "purple")
	}
	ttft, tpot := "llmprobe_time_to_first_token_seconds", "llmprobe_time_per_output_token_seconds"
	return section{title: "Replicas (per-replica probing, by service)", panels: []*Panel{
		stat("Replica outlier alert", "State of LLMProbeReplicaOutlier for each service (replicas probed one by one: "+
			"targets whose series carry namespace and service labels, docs/discovery.md): ok, pending (a replica's "+
			"TTFT or TPOT p99 above 2 times its service's median for less than 15 minutes) or firing.", "", 6,
			steps("green", 1.0, "orange", 2.0, "red"),
			instant(fmt.Sprintf(`max by (cluster, namespace, service) (
  ALERTS{alertname="LLMProbeReplicaOutlier", alertstate="firing", %[1]s} * 2
  or ALERTS{alertname="LLMProbeReplicaOutlier", alertstate="pending", %[1]s}
  or service_probe:llmprobe_replicas:count10m{%[1]s} * 0
)`, rsel), `{{namespace}}/{{service}}`),
		).valueMap(map[string][2]string{"0": {"ok", "green"}, "1": {"pending", "orange"}, "2": {"FIRING", "red"}}),
		stat("Replicas counted", "Replicas of each service and probe with at least 200 successful requests in 10 "+
			"minutes (service_probe:llmprobe_replicas:count10m). The median, the ratios and the alert need 3.", "", 6,
			steps("red", 3.0, "green"),
			instant(fmt.Sprintf(`service_probe:llmprobe_replicas:count10m{%s}`, rsel), serviceLegend)),
		worst("TTFT", ttft),
		worst("TPOT", tpot),
		perReplica("TTFT", ttft),
		perReplica("TPOT", tpot),
		timeseries("Replica p99 / service median", "Each replica's TTFT and TPOT p99 over the median of its "+
			"service's replicas, over 10 minutes (service_target_probe:..._p99:ratio_median_10m): what "+
			"LLMProbeReplicaOutlier decides on. Dashed: its limit, 2.", "x", 24,
			q(fmt.Sprintf(`service_target_probe:%s_p99:ratio_median_10m{%s}`, ttft, rsel), "TTFT "+replicaLegend),
			q(fmt.Sprintf(`service_target_probe:%s_p99:ratio_median_10m{%s}`, tpot, rsel), "TPOT "+replicaLegend),
			q(fmt.Sprintf(`service_probe:llmprobe_replicas:count10m{%s} * 0 + 2`, rsel), "limit "+serviceLegend),
		).minZero().dashed("C", "red"),
	}}
}
