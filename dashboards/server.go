package dashboards

import (
	"fmt"
	"strings"
)

// serverMap is the recording rule that maps a server's scrape instance to
// the llmprobe targets it serves (llmprobe_target_info's server_instance).
const serverMap = "target_instance:llmprobe_target_info:max"

// byModel keeps the series of targets of the chosen models (the engines'
// own model labels differ, and TGI and llama.cpp have none).
const byModel = `and on (cluster, target) llmprobe_target_info{model=~"$model"}`

// serverExpr builds, from f, a query with one series per chosen llmprobe
// target of a server-side figure. f(by, sel) must return an expression with
// one series per value of the labels by, reading the engine's series with
// the label selector sel ("" or "{...}"). A server's series are attributed
// to a target as the llmprobe.server rules do: by a target label the scrape
// job adds (first), else through the server instance map (several targets on
// one server instance all get its figures). outer aggregates the joined
// series per target (sum for counts and rates, max for ratios and latency).
func serverExpr(outer string, f func(by, sel string) string) string {
	return fmt.Sprintf(`(
  %s
  or on (cluster, target)
  %s by (cluster, target) (%s * on (cluster, instance) group_right () %s{cluster=~"$cluster", target=~"$target"})
)
%s`, f("cluster, target", `{target!="", cluster=~"$cluster", target=~"$target"}`), outer, f("cluster, instance", ""), serverMap, byModel)
}

// serverExprBy is serverExpr for a figure split by one more label of the
// engine's series (e.g. vLLM's finished_reason). The join then needs one
// llmprobe target per server instance (group_left); servers that serve
// several targets need the target label of the scrape job.
func serverExprBy(label string, f func(by, sel string) string) string {
	return fmt.Sprintf(`(
  %[1]s
  or on (cluster, target, %[2]s)
  sum by (cluster, target, %[2]s) (%[3]s * on (cluster, instance) group_left (target) %[4]s{cluster=~"$cluster", target=~"$target"})
)
%[5]s`, f("cluster, target, "+label, `{target!="", cluster=~"$cluster", target=~"$target"}`), label, f("cluster, instance, "+label, ""), serverMap, byModel)
}

// gauge sums (or takes the max of) an engine's gauge per target.
func gauge(agg, name string) string {
	outer := "sum"
	if agg == "max" {
		outer = "max"
	}
	return serverExpr(outer, func(by, sel string) string {
		return fmt.Sprintf("%s by (%s) (%s%s)", agg, by, name, sel)
	})
}

// rate is an engine's counter per second, per target.
func rate(name string) string {
	return serverExpr("sum", func(by, sel string) string {
		return fmt.Sprintf("sum by (%s) (rate(%s%s[$__rate_interval]))", by, name, sel)
	})
}

// ratio is the ratio of two engine counters' rates, per target (a mean from
// _sum and _count, a hit rate); no series while the denominator is 0.
func ratio(num, den string) string {
	return serverExpr("max", func(by, sel string) string {
		return fmt.Sprintf("sum by (%[1]s) (rate(%[2]s%[4]s[$__rate_interval]))\n  / (sum by (%[1]s) (rate(%[3]s%[4]s[$__rate_interval])) > 0)",
			by, num, den, sel)
	})
}

// quantile is the q quantile of an engine's classic histogram, per target.
func quantile(q float64, histogram string) string {
	return serverExpr("max", func(by, sel string) string {
		return fmt.Sprintf("histogram_quantile(%g, sum by (%s, le) (rate(%s_bucket%s[$__rate_interval])))", q, by, histogram, sel)
	})
}

// serverTarget is a query of a server-side figure with a legend naming the
// engine and the target.
func serverTarget(engine, what, expr string) Target {
	legend := strings.TrimSpace(what + " " + engine + " {{target}}")
	return q(expr, legend)
}
