package dashboards

import (
	"fmt"
	"sort"
	"strings"

	"github.com/llmprobe/llmprobe/rules"
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

// names returns name and the older names vLLM served the same figure under
// (rules.VLLMRenamed), current first.
func names(name string) []string {
	out := []string{name}
	var old []string
	for o, cur := range rules.VLLMRenamed {
		if cur == name {
			old = append(old, o)
		}
	}
	sort.Strings(old)
	return append(out, old...)
}

// or joins the expressions of a figure under its current and older names
// with PromQL `or`, current first: each target or server instance gets the
// figure from the current name where it exports it, else from the older one,
// as vLLM's own dashboards moved. Every part must aggregate to the same
// labels (the `or` matches on them).
func or(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = "(" + p + ")"
	}
	return "(" + strings.Join(parts, "\n  or ") + ")"
}

// gauge sums (or takes the max of) an engine's gauge per target (an older
// vLLM name where the current one is missing).
func gauge(agg, name string) string {
	outer := "sum"
	if agg == "max" {
		outer = "max"
	}
	return serverExpr(outer, func(by, sel string) string {
		var parts []string
		for _, n := range names(name) {
			parts = append(parts, fmt.Sprintf("%s by (%s) (%s%s)", agg, by, n, sel))
		}
		return or(parts)
	})
}

// rate is an engine's counter per second, per target.
func rate(name string) string {
	return serverExpr("sum", func(by, sel string) string {
		return fmt.Sprintf("sum by (%s) (rate(%s%s[$__rate_interval]))", by, name, sel)
	})
}

// rateOr is rate of name, or of fallback for a target that exports no name
// (vLLM's Rust frontend: no token counters, the per-request histograms'
// sums instead).
func rateOr(name, fallback string) string {
	return serverExpr("sum", func(by, sel string) string {
		return or([]string{
			fmt.Sprintf("sum by (%s) (rate(%s%s[$__rate_interval]))", by, name, sel),
			fmt.Sprintf("sum by (%s) (rate(%s%s[$__rate_interval]))", by, fallback, sel),
		})
	})
}

// ratio is the ratio of two engine counters' rates, per target (a mean from
// _sum and _count, a hit rate); no series while the denominator is 0.
func ratio(num, den string) string {
	nums, dens := names(num), names(den)
	if len(nums) != len(dens) {
		panic(fmt.Sprintf("ratio %s / %s: vLLM renamed one and not the other", num, den))
	}
	return serverExpr("max", func(by, sel string) string {
		parts := make([]string, len(nums))
		for i := range nums {
			parts[i] = fmt.Sprintf("sum by (%[1]s) (rate(%[2]s%[4]s[$__rate_interval]))\n  / (sum by (%[1]s) (rate(%[3]s%[4]s[$__rate_interval])) > 0)",
				by, nums[i], dens[i], sel)
		}
		return or(parts)
	})
}

// quantile is the q quantile of an engine's classic histogram, per target.
func quantile(q float64, histogram string) string {
	return serverExpr("max", func(by, sel string) string {
		var parts []string
		for _, n := range names(histogram) {
			parts = append(parts, fmt.Sprintf("histogram_quantile(%g, sum by (%s, le) (rate(%s_bucket%s[$__rate_interval])))", q, by, n, sel))
		}
		return or(parts)
	})
}

// serverTarget is a query of a server-side figure with a legend naming the
// engine and the target.
func serverTarget(engine, what, expr string) Target {
	legend := strings.TrimSpace(what + " " + engine + " {{target}}")
	return q(expr, legend)
}
