package dashboards

import "fmt"

// ssel selects the sweep series of the chosen targets.
const (
	ssel = `cluster=~"$cluster", target=~"$target"`
	ts   = `{{target}} / {{sweep}}`
)

// sweepAnnotation marks the periods during which a sweep of a chosen target
// ran (llmprobe_sweep_running 1): its load is in the probes' latency then.
func sweepAnnotation() Annotation {
	expr := fmt.Sprintf(`llmprobe_sweep_running{%s} == 1`, ssel)
	return Annotation{
		Datasource:  DatasourceRef,
		Enable:      true,
		Expr:        expr,
		IconColor:   "blue",
		Name:        "Capacity sweeps",
		Step:        "30s",
		TagKeys:     "target",
		TextFormat:  "sweep of {{target}} running (its load is in the probes' latency)",
		TitleFormat: "Capacity sweep",
		Target:      map[string]any{"expr": expr, "refId": "Anno"},
	}
}

// table is a table of instant queries merged into one row per series.
func table(title, description string, w int, targets ...Target) *Panel {
	for i := range targets {
		targets[i].Format = "table"
	}
	p := panel("table", title, description, w, 9, FieldDefaults{Thresholds: steps("green")},
		map[string]any{"showHeader": true, "cellHeight": "sm", "footer": map[string]any{"show": false}}, targets)
	p.Transformations = []map[string]any{
		{"id": "merge", "options": map[string]any{}},
		{"id": "organize", "options": map[string]any{
			"excludeByName": map[string]any{"Time": true},
			"renameByName": map[string]any{
				"Value #A": "goodput (req/s)", "Value #B": "throughput (req/s)",
				"Value #C": "TTFT p99 (s)", "Value #D": "TPOT p99 (s)", "Value #E": "valid",
			},
		}},
	}
	return p
}

func capacity() *Dashboard {
	return newDashboard("llmprobe-capacity.json", "llmprobe-capacity", "llmprobe / Capacity",
		"The capacity knee the daemon's sweeps measure (sweeps: blocks and the sweep API, docs/sweep-api.md), "+
			"its trend, the last sweep's goodput curve, and the headroom between the production request rate "+
			"the server reports and the knee.",
		[]Annotation{
			sweepAnnotation(),
			alertAnnotation("Capacity alerts", "red", "LLMProbeCapacityRegression|LLMProbeCapacityHeadroomLow|LLMProbeCapacitySweepStale"),
		},
		section{title: "Capacity now", panels: []*Panel{
			stat("Knee", "Capacity knee of the last successful sweep: the highest request rate at which goodput kept "+
				"up and the SLO p99s held (a lower bound when not bracketed).", "reqps", 6,
				steps("blue"),
				instant(fmt.Sprintf(`llmprobe_sweep_knee_requests_per_second{%s}`, ssel), ts)),
			stat("Max goodput", "Highest goodput of a valid step of the last successful sweep.", "reqps", 6,
				steps("blue"),
				instant(fmt.Sprintf(`llmprobe_sweep_max_goodput_requests_per_second{%s}`, ssel), ts)),
			stat("Headroom", "Share of the last decided knee that production (the server's request rate less llmprobe's "+
				"own probes and sweeps, 5m) leaves free; none during a sweep and 6 minutes after it; the alert "+
				"LLMProbeCapacityHeadroomLow fires below 15 %.", "percentunit", 6,
				steps("red", 0.15, "orange", 0.3, "green"),
				instant(fmt.Sprintf(`target:llmprobe_capacity_headroom:ratio{%s}`, ssel), "{{target}}")),
			stat("Last successful sweep", "Time since the last successful sweep ended.", "s", 6,
				steps("green", 86400.0, "orange", 172800.0, "red"),
				instant(fmt.Sprintf(`time() - llmprobe_sweep_last_success_timestamp_seconds{%s}`, ssel), ts)),
		}},
		section{title: "Trend", panels: []*Panel{
			timeseries("Knee and max goodput", "Knee and max goodput of the last successful sweep over time, and the "+
				"knee's 7-day maximum (dashed): LLMProbeCapacityRegression fires below 80 % of it.", "reqps", 12,
				q(fmt.Sprintf(`llmprobe_sweep_knee_requests_per_second{%s}`, ssel), "knee "+ts),
				q(fmt.Sprintf(`llmprobe_sweep_max_goodput_requests_per_second{%s}`, ssel), "max goodput "+ts),
				q(fmt.Sprintf(`target_sweep:llmprobe_sweep_knee_requests_per_second:max_7d{%s}`, ssel), "7d max "+ts),
			).minZero().dashed("C", "red"),
			timeseries("Production against the knee", "Production request rate (the server's own count, every engine's "+
				"request counter, less llmprobe's own requests) and the target's last decided knee (dashed).", "reqps", 12,
				q(fmt.Sprintf(`target:llmprobe_production_requests:rate5m{%s}`, ssel), "production {{target}}"),
				q(fmt.Sprintf(`target:llmprobe_sweep_knee_requests_per_second:last{%s}`, ssel), "knee {{target}}"),
			).minZero().dashed("B", "red"),
			timeseries("Sweeps by result", "Sweeps that ended per hour, by result (success, failed, canceled).", "short", 12,
				q(fmt.Sprintf(`sum by (cluster, target, sweep, result) (increase(llmprobe_sweep_runs_total{%s}[1h]))`, ssel),
					"{{result}} "+ts),
			).bars(),
			timeseries("Sweep duration", "How long the last successful sweep ran.", "s", 12,
				q(fmt.Sprintf(`llmprobe_sweep_duration_seconds{%s}`, ssel), ts),
			).minZero(),
		}},
		section{title: "Energy per good token", panels: []*Panel{
			timeseries("Energy per good output token", "The GPUs' energy per good output token (llmprobe.energy.yml): "+
				"the DCGM exporter's energy counter rate over the server's output tokens/s times llmprobe's goodput ratio, "+
				"and its 7-day median (dashed; the opt-in LLMProbeEnergyPerGoodTokenRegression compares the last hour with it). "+
				"Empty without DCGM series labelled with the target.", "joule", 12,
				q(fmt.Sprintf(`target:energy_per_good_token_joules:rate5m{%s}`, ssel), "{{target}}"),
				q(fmt.Sprintf(`target:energy_per_good_token_joules:median_7d{%s}`, ssel), "7d median {{target}}"),
			).minZero().dashed("B", "blue"),
			timeseries("GPU power and good tokens", "The target's GPU power (the energy counter's rate, summed over its GPUs) "+
				"and its good output tokens/s (right axis).", "watt", 12,
				q(fmt.Sprintf(`target:dcgm_gpu_power_watts:rate5m{%s}`, ssel), "power {{target}}"),
				q(fmt.Sprintf(`target:server_good_generation_tokens:rate5m{%s}`, ssel), "good tokens/s {{target}}"),
			).minZero().rightAxis("good tokens.*", "short"),
		}},
		section{title: "Last sweep's goodput curve", panels: []*Panel{
			table("Goodput curve", "Every step of the last successful sweep of each target and sweep: goodput, "+
				"throughput, TTFT and TPOT p99, and validity. The knee is the highest rate whose goodput kept up.", 24,
				instant(fmt.Sprintf(`llmprobe_sweep_step_goodput_requests_per_second{%s}`, ssel), ""),
				instant(fmt.Sprintf(`llmprobe_sweep_step_throughput_requests_per_second{%s}`, ssel), ""),
				instant(fmt.Sprintf(`llmprobe_sweep_step_ttft_p99_seconds{%s}`, ssel), ""),
				instant(fmt.Sprintf(`llmprobe_sweep_step_tpot_p99_seconds{%s}`, ssel), ""),
				instant(fmt.Sprintf(`llmprobe_sweep_step_valid{%s}`, ssel), ""),
			),
		}},
	)
}
