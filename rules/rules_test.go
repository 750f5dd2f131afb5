package rules_test

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/rules"
	"github.com/llmprobe/llmprobe/rules/rulestest"
)

func load(t *testing.T) []rules.File {
	t.Helper()
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	for _, want := range []string{"llmprobe.alerts.yml", "llmprobe.rules.yml"} {
		if !slices.Contains(names, want) {
			t.Fatalf("rule file %s missing (have %v)", want, names)
		}
	}
	return files
}

// loadAll returns the shared rule files followed by the opt-in ones
// (optional/), which must exist too.
func loadAll(t *testing.T) []rules.File {
	t.Helper()
	opt, err := rules.LoadOptional()
	if err != nil {
		t.Fatal(err)
	}
	if len(opt) == 0 {
		t.Fatal("no opt-in rule files in optional/")
	}
	return append(load(t), opt...)
}

// allRules returns every rule of files in evaluation order (file, group, rule).
func allRules(files []rules.File) []rulefmt.Rule {
	var out []rulefmt.Rule
	for _, f := range files {
		for _, g := range f.Groups {
			out = append(out, g.Rules...)
		}
	}
	return out
}

func TestFilesParse(t *testing.T) {
	for _, f := range loadAll(t) {
		t.Run(f.Name, func(t *testing.T) {
			if len(f.Groups) == 0 {
				t.Fatal("no rule groups")
			}
			for _, g := range f.Groups {
				if !strings.HasPrefix(g.Name, "llmprobe.") {
					t.Errorf("group %q: name must start with llmprobe.", g.Name)
				}
				if g.Interval != 0 {
					t.Errorf("group %q sets interval %s; leave it to evaluation_interval", g.Name, g.Interval)
				}
				for _, r := range g.Rules {
					if _, err := rules.NewParser().ParseExpr(r.Expr); err != nil {
						t.Errorf("group %q rule %s%s: %v", g.Name, r.Record, r.Alert, err)
					}
				}
			}
		})
	}
}

func TestParseRejectsBrokenFiles(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{
			name: "bad expression",
			data: "groups:\n- name: x\n  rules:\n  - record: a:b:c\n    expr: sum(\n",
			want: "could not parse expression",
		},
		{
			name: "unknown field",
			data: "groups:\n- name: x\n  rules:\n  - record: a:b:c\n    expr: up\n    bogus: 1\n",
			want: "field bogus not found",
		},
		{
			name: "experimental function",
			data: "groups:\n- name: x\n  rules:\n  - record: a:b:c\n    expr: sort_by_label(up, \"job\")\n",
			want: "is not enabled",
		},
		{
			name: "broken template",
			data: "groups:\n- name: x\n  rules:\n  - alert: A\n    expr: up\n    annotations:\n      summary: '{{ $labels.x'\n",
			want: "template",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rules.Parse([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		want       []string
		wantErr    string
	}{
		{name: "plain", expr: `sum(rate(a_total[5m])) / sum(rate(b_total[5m]))`, want: []string{"a_total", "b_total"}},
		{name: "name matcher", expr: `{__name__="x"}`, want: []string{"x"}},
		{name: "alternation", expr: `rate({__name__=~"a_total|b_total"}[5m])`, want: []string{"a_total", "b_total"}},
		{name: "recorded", expr: `t:x:rate5m > on (t) group_left y`, want: []string{"t:x:rate5m", "y"}},
		{name: "open regexp", expr: `{__name__=~"llmprobe_.*"}`, wantErr: "not a list of literal names"},
		{name: "no name", expr: `{job="x"}`, wantErr: "names no metric"},
		{name: "syntax", expr: `sum(`, wantErr: "unclosed left parenthesis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rules.MetricNames(rules.NewParser(), tc.expr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v (names %v)", tc.wantErr, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMetricsExist checks that every metric a rule reads is exported by
// llmprobe (its real registry), produced by a recording rule, documented by
// vLLM, or written by Prometheus itself.
func TestMetricsExist(t *testing.T) {
	files := loadAll(t)
	cat, err := rulestest.Catalog(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range allRules(files) {
		t.Run(r.Record+r.Alert, func(t *testing.T) {
			names, err := rules.MetricNames(rules.NewParser(), r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if _, ok := cat.Source(n); !ok {
					t.Errorf("reads unknown metric %s", n)
				}
			}
			e, err := rules.NewParser().ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range rulestest.OldNameOutsideFallback(e) {
				t.Errorf("reads vLLM's older name %s without its current name before it (`new or old`)", s)
			}
		})
	}
}

// TestOldNameOutsideFallback: an older vLLM name is accepted only on the
// right of an `or` whose left reads its current name (suffix included).
func TestOldNameOutsideFallback(t *testing.T) {
	for _, tc := range []struct {
		expr string
		bad  int
	}{
		{`max by (instance) (vllm:kv_cache_usage_perc)`, 0},
		{`max by (instance) (vllm:gpu_cache_usage_perc)`, 1},
		{`max by (instance) (vllm:kv_cache_usage_perc) or max by (instance) (vllm:gpu_cache_usage_perc)`, 0},
		{`max by (instance) (vllm:gpu_cache_usage_perc) or max by (instance) (vllm:kv_cache_usage_perc)`, 1},
		{`(histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket[5m]))))
		  or (histogram_quantile(0.99, sum by (le) (rate(vllm:time_per_output_token_seconds_bucket[5m]))))`, 0},
		{`rate(vllm:inter_token_latency_seconds_sum[5m]) or rate(vllm:time_per_output_token_seconds_bucket[5m])`, 1},
		{`rate(vllm:prefix_cache_hits_total[5m]) or rate(vllm:gpu_prefix_cache_queries_total[5m])`, 1},
		{`(rate(vllm:prefix_cache_hits_total[5m]) or rate(vllm:gpu_prefix_cache_hits_total[5m])) * 2`, 0},
		{`group by (job) ({__name__=~"vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc"})`, 0},
		{`group by (job) ({__name__=~"vllm:gpu_cache_usage_perc|vllm:num_requests_running"})`, 1},
	} {
		e, err := rules.NewParser().ParseExpr(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := rulestest.OldNameOutsideFallback(e); len(got) != tc.bad {
			t.Errorf("%s: %v, want %d", tc.expr, got, tc.bad)
		}
	}
}

// TestRenamedAgreesWithAdapter: every pair of rules.VLLMRenamed is a
// fallback of the vLLM adapter (prober/engine), the current name first, and
// every fallback of the adapter is a pair: rules, dashboards and sweeps read
// the same names. A fallback that is the sum of a current histogram (the
// token counts of the Rust frontend, which has no token counters) is
// another source of the same figure, not an older name.
func TestRenamedAgreesWithAdapter(t *testing.T) {
	eng := engine.Get(engine.VLLM)
	adapter := map[string]string{}
	pairs := func(names []string) {
		for _, old := range names[min(1, len(names)):] {
			if base, ok := strings.CutSuffix(old, "_sum"); ok && rules.VLLMMetrics[base] == dto.MetricType_HISTOGRAM {
				continue
			}
			adapter[old] = names[0]
		}
	}
	for _, q := range engine.Quantities {
		pairs(eng.Source(q))
	}
	for _, l := range engine.Latencies {
		pairs(eng.LatencySource(l))
	}
	if !maps.Equal(adapter, rules.VLLMRenamed) {
		t.Errorf("the vLLM adapter's fallbacks %v, rules.VLLMRenamed %v", adapter, rules.VLLMRenamed)
	}
	for old, cur := range rules.VLLMRenamed {
		if _, ok := rules.VLLMMetrics[cur]; !ok {
			t.Errorf("%s replaces %s but is not in rules.VLLMMetrics", cur, old)
		}
		if _, ok := rules.VLLMMetrics[old]; ok {
			t.Errorf("older name %s is in rules.VLLMMetrics", old)
		}
	}
}

// TestCatalogIsNotPermissive guards the metric-existence test against a
// catalog that knows everything.
func TestCatalogIsNotPermissive(t *testing.T) {
	cat, err := rulestest.Catalog(load(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		known  bool
		source string
	}{
		{name: "llmprobe_time_to_first_token_seconds_bucket", known: true, source: rulestest.SourceLLMProbe},
		{name: "llmprobe_time_to_first_token_seconds", known: true, source: rulestest.SourceLLMProbe},
		{name: "llmprobe_requests_total", known: true, source: rulestest.SourceLLMProbe},
		{name: "llmprobe_config_last_reload_successful", known: true, source: rulestest.SourceLLMProbe},
		{name: "llmprobe_build_info", known: true, source: rulestest.SourceLLMProbe},
		{name: "target_probe:llmprobe_goodput:ratio_rate5m", known: true, source: rules.SourceRecording},
		{name: "vllm:kv_cache_usage_perc", known: true, source: rules.SourceVLLM},
		{name: "vllm:time_to_first_token_seconds_bucket", known: true, source: rules.SourceVLLM},
		{name: "sglang:time_to_first_token_seconds_bucket", known: true, source: rules.SourceEngine},
		{name: "tgi_request_duration_sum", known: true, source: rules.SourceEngine},
		{name: "llamacpp:requests_processing", known: true, source: rules.SourceEngine},
		{name: "llamacpp:requests_processing_bucket", known: false},
		{name: "up", known: true, source: rules.SourcePrometheus},
		{name: "llmprobe_requests_total_bucket", known: false},
		{name: "llmprobe_ttft_seconds", known: false},
		{name: "vllm:gpu_cache_usage_perc", known: true, source: rules.SourceVLLMOld},
		{name: "vllm:time_per_output_token_seconds_bucket", known: true, source: rules.SourceVLLMOld},
		{name: "vllm:gpu_cache_usage_perc_bucket", known: false},
		{name: "vllm:num_preemptions_total_count", known: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, ok := cat.Source(tc.name)
			if ok != tc.known || (ok && src != tc.source) {
				t.Fatalf("Source(%q) = %q, %v; want %q, %v", tc.name, src, ok, tc.source, tc.known)
			}
		})
	}
}

// engineName matches an engine metric name (not vLLM's) in backquotes in
// docs/engines.md, without a _sum, _bucket or _count suffix or a label set.
var engineName = regexp.MustCompile("`((?:sglang:|tgi_|llamacpp:)[a-z0-9_]+?)(?:_sum|_bucket|_count)?(?:\\{[a-z_,]*\\})?`")

// TestEngineCatalogMatchesDocs keeps rules.EngineMetrics and docs/engines.md
// (the page that cites each engine's source) in step: every engine metric
// the page names is in the catalog and every catalog name is on the page.
func TestEngineCatalogMatchesDocs(t *testing.T) {
	data, err := os.ReadFile("../docs/engines.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range engineName.FindAllStringSubmatch(string(data), -1) {
		documented[m[1]] = true
	}
	if len(documented) < 20 {
		t.Fatalf("found only %d engine metric names in docs/engines.md: %v", len(documented), documented)
	}
	cataloged := map[string]bool{}
	for _, names := range rules.EngineMetrics {
		for n := range names {
			cataloged[n] = true
		}
	}
	for n := range documented {
		if !cataloged[n] {
			t.Errorf("docs/engines.md names %s; rules.EngineMetrics lacks it", n)
		}
	}
	for n := range cataloged {
		if !documented[n] {
			t.Errorf("rules.EngineMetrics lists %s; docs/engines.md does not name it", n)
		}
	}
}

// TestRatiosLeaveOutCanceled checks that no rule counts requests llmprobe
// canceled itself in a ratio, and that the check itself can fail.
func TestRatiosLeaveOutCanceled(t *testing.T) {
	p := rules.NewParser()
	for _, tc := range []struct {
		name, expr string
		want       int
	}{
		{name: "bare denominator", expr: `sum(rate(llmprobe_good_requests_total[5m])) / sum(rate(llmprobe_requests_total[5m]))`, want: 1},
		{name: "errors over all", expr: `sum(rate(llmprobe_requests_total{outcome!="success"}[5m])) / sum(rate(llmprobe_requests_total{outcome!="canceled"}[5m]))`, want: 1},
		{name: "nested", expr: `1 - (x / (sum(rate(llmprobe_requests_total{target="a"}[5m])) > 0))`, want: 1},
		{name: "excluded", expr: `sum(rate(llmprobe_requests_total{outcome!~"success|canceled"}[5m])) / sum(rate(llmprobe_requests_total{outcome!="canceled"}[5m]))`},
		{name: "success only", expr: `x / sum(rate(llmprobe_requests_total{outcome="success"}[5m]))`},
		{name: "not a ratio", expr: `sum by (outcome) (rate(llmprobe_requests_total[5m]))`},
		{name: "by __name__", expr: `x / sum(rate({__name__=~"llmprobe_requests_total|llmprobe_requests_skipped_total"}[5m]))`, want: 1},
		{name: "by __name__, excluded", expr: `x / sum(rate({__name__=~"llmprobe_requests_total|llmprobe_requests_skipped_total",outcome!="canceled"}[5m]))`},
		{name: "by __name__, other metric", expr: `x / sum(rate({__name__="llmprobe_requests_skipped_total"}[5m]))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := p.ParseExpr(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := rulestest.CanceledInRatios(e); len(got) != tc.want {
				t.Fatalf("got %v, want %d selectors", got, tc.want)
			}
		})
	}
	for _, r := range allRules(loadAll(t)) {
		t.Run(r.Record+r.Alert, func(t *testing.T) {
			e, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range rulestest.CanceledInRatios(e) {
				t.Errorf("%s counts canceled requests in a ratio", s)
			}
		})
	}
}

var (
	recordName = regexp.MustCompile(`^([a-z_]+):([a-z0-9_]+):([a-z0-9_]+)$`)
	alertName  = regexp.MustCompile(`^LLMProbe[A-Z][A-Za-z0-9]*$`)
	// instance: a figure of the llmprobe process itself, not of a target
	// (its Go scheduling latency).
	levels = []string{"canary", "canary_probe", "canary_role", "canary_role_probe", "instance", "job_metric", "service_probe", "service_target_probe", "target", "target_instance", "target_probe", "target_probe_outcome", "target_probe_slo", "target_probe_check", "target_sweep"}
)

func TestNamingAndAnnotations(t *testing.T) {
	inhibitors := inhibitSources(t)
	for _, r := range allRules(loadAll(t)) {
		t.Run(r.Record+r.Alert, func(t *testing.T) {
			if r.Record != "" {
				m := recordName.FindStringSubmatch(r.Record)
				if m == nil {
					t.Fatalf("recording rule %q is not level:metric:operations", r.Record)
				}
				if !slices.Contains(levels, m[1]) {
					t.Errorf("level %q of %q is not one of %v", m[1], r.Record, levels)
				}
				return
			}
			if !alertName.MatchString(r.Alert) {
				t.Errorf("alert %q is not CamelCase with the LLMProbe prefix", r.Alert)
			}
			if r.For == 0 {
				t.Error("alert has no for")
			}
			switch s := r.Labels["severity"]; {
			case s == "none" && inhibitors[r.Alert]:
				// An inhibitor, routed to a receiver that sends nothing.
			case s != "critical" && s != "warning":
				t.Errorf("severity %q, want critical or warning (none only for an alert that is the source of an inhibition rule)", s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("annotation %s missing", a)
				}
			}
			if want := rules.RunbookBase + "#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("runbook_url %q, want %q", r.Annotations["runbook_url"], want)
			}
			if !strings.Contains(r.Annotations["description"], "{{") {
				t.Error("description is not templated")
			}
		})
	}
}

// TestRecordedBeforeUse checks that a recording rule reads other recorded
// series only after they were computed in the same evaluation round: earlier
// in file order (groups of one file run in order in promtool; in Prometheus
// a later group may see a value one interval old, never a missing one).
func TestRecordedBeforeUse(t *testing.T) {
	files := load(t)
	recorded := map[string]bool{}
	for _, n := range rules.RecordedNames(files) {
		recorded[n] = true
	}
	seen := map[string]bool{}
	for _, r := range allRules(files) {
		if r.Record == "" {
			continue
		}
		names, err := rules.MetricNames(rules.NewParser(), r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if recorded[n] && !seen[n] {
				t.Errorf("%s reads %s before it is recorded", r.Record, n)
			}
		}
		if seen[r.Record] {
			t.Errorf("%s is recorded twice", r.Record)
		}
		seen[r.Record] = true
	}
}

// TestLatencyQuantileRules pins the generated-by-hand family of quantile
// rules to one canonical expression each, so a copy-paste slip (wrong
// histogram, window or quantile) fails here before it reaches promtool.
func TestLatencyQuantileRules(t *testing.T) {
	exprs := map[string]string{}
	for _, r := range allRules(load(t)) {
		if r.Record != "" {
			exprs[r.Record] = r.Expr
		}
	}
	p := rules.NewParser()
	for _, h := range []struct {
		family string
		qs     []string
	}{
		{probemetrics.NameTTFT, []string{"50", "90", "99"}},
		{probemetrics.NameITL, []string{"50", "90", "99"}},
		{probemetrics.NameTPOT, []string{"50", "90", "99"}},
		{probemetrics.NameE2E, []string{"50", "90", "99"}},
		{probemetrics.NameSendLag, []string{"99"}},
	} {
		for _, w := range []string{"5m", "1h"} {
			for _, q := range h.qs {
				name := fmt.Sprintf("target_probe:%s:p%s_%s", h.family, q, w)
				t.Run(name, func(t *testing.T) {
					got, ok := exprs[name]
					if !ok {
						t.Fatal("missing")
					}
					want := fmt.Sprintf(`histogram_quantile(0.%s, sum by (cluster, target, probe, le) (rate(%s_bucket[%s])) `+
						`or on (cluster, target, probe) sum by (cluster, target, probe) (rate(%s[%s])))`, q, h.family, w, h.family, w)
					ge, err := p.ParseExpr(got)
					if err != nil {
						t.Fatal(err)
					}
					we, err := p.ParseExpr(want)
					if err != nil {
						t.Fatal(err)
					}
					if ge.String() != we.String() {
						t.Fatalf("expr\n%s\nwant\n%s", ge, we)
					}
				})
			}
		}
	}
}

// TestEveryRuleUnitTested checks that every recording rule is queried and
// every alert is asserted by a promtool test in tests/.
func TestEveryRuleUnitTested(t *testing.T) {
	paths, err := filepath.Glob("tests/*.yml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no promtool tests in tests/: %v", err)
	}
	var exprs, alerts strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			switch {
			case strings.HasPrefix(line, "- expr:"):
				exprs.WriteString(line + "\n")
			case strings.HasPrefix(line, "- alertname:"):
				alerts.WriteString(strings.TrimSpace(strings.TrimPrefix(line, "- alertname:")) + "\n")
			}
		}
	}
	for _, r := range allRules(loadAll(t)) {
		t.Run(r.Record+r.Alert, func(t *testing.T) {
			if r.Record != "" {
				if !regexp.MustCompile(regexp.QuoteMeta(r.Record) + `\b`).MatchString(exprs.String()) {
					t.Error("no promql_expr_test queries it")
				}
				return
			}
			if !strings.Contains(alerts.String(), r.Alert+"\n") {
				t.Error("no alert_rule_test asserts it")
			}
		})
	}
}

// TestRunbook checks docs/runbook.md: one section per alert whose GitHub
// anchor is the alert's runbook_url anchor, each with meaning, first checks,
// causes and PromQL; every PromQL line parses and reads known metrics.
func TestRunbook(t *testing.T) {
	data, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	var order []string
	for _, part := range strings.Split("\n"+string(data), "\n## ")[1:] {
		title, body, _ := strings.Cut(part, "\n")
		sections[title] = body
		order = append(order, title)
	}
	files := loadAll(t)
	cat, err := rulestest.Catalog(files)
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, r := range allRules(files) {
		if r.Alert == "" {
			continue
		}
		alerts = append(alerts, r.Alert)
		t.Run(r.Alert, func(t *testing.T) {
			body, ok := sections[r.Alert]
			if !ok {
				t.Fatalf("no section \"## %s\"", r.Alert)
			}
			// GitHub's anchor of a heading made of letters only is its lower case.
			if !strings.HasSuffix(r.Annotations["runbook_url"], "#"+strings.ToLower(r.Alert)) {
				t.Errorf("runbook_url %q does not point at the section", r.Annotations["runbook_url"])
			}
			for _, part := range []string{"**Meaning.**", "**First checks.**", "**Typical causes.**", "**PromQL.**", "```promql\n"} {
				if !strings.Contains(body, part) {
					t.Errorf("section lacks %q", part)
				}
			}
			n := 0
			for _, block := range strings.Split(body, "```promql\n")[1:] {
				block, _, _ = strings.Cut(block, "```")
				for _, line := range strings.Split(block, "\n") {
					line = strings.TrimSpace(line)
					if line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					n++
					names, err := rules.MetricNames(rules.NewParser(), line)
					if err != nil {
						t.Errorf("%q: %v", line, err)
						continue
					}
					for _, m := range names {
						if _, ok := cat.Source(m); !ok {
							t.Errorf("%q reads unknown metric %s", line, m)
						}
					}
				}
			}
			if n == 0 {
				t.Error("no PromQL query")
			}
		})
	}
	for _, title := range order {
		if strings.HasPrefix(title, "LLMProbe") && !slices.Contains(alerts, title) {
			t.Errorf("section %q has no alert", title)
		}
	}
}

// TestDocQueries checks that every promql block of
// docs/rules-and-dashboards.md parses and reads known metrics.
func TestDocQueries(t *testing.T) {
	data, err := os.ReadFile("../docs/rules-and-dashboards.md")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := rulestest.Catalog(load(t))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(data), "```promql\n")[1:]
	if len(blocks) == 0 {
		t.Fatal("no promql blocks")
	}
	for i, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			names, err := rules.MetricNames(rules.NewParser(), b)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			for _, n := range names {
				if _, ok := cat.Source(n); !ok {
					t.Errorf("reads unknown metric %s", n)
				}
			}
			e, err := rules.NewParser().ParseExpr(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range rulestest.OldNameOutsideFallback(e) {
				t.Errorf("reads vLLM's older name %s without its current name before it (`new or old`)", s)
			}
		})
	}
}

// TestPresentRuleReadsBothNames: job_metric:vllm_metric:present reads each
// figure vLLM renamed under both names in one __name__ list (a histogram by
// its _count), so a rename llmprobe knows never looks like a disappearance
// to LLMProbeServerMetricMissing; and each figure it watches is a
// documented vLLM metric by its current name.
func TestPresentRuleReadsBothNames(t *testing.T) {
	var expr string
	for _, r := range allRules(load(t)) {
		if r.Record == "job_metric:vllm_metric:present" {
			expr = r.Expr
		}
	}
	if expr == "" {
		t.Fatal("no job_metric:vllm_metric:present")
	}
	e, err := rules.NewParser().ParseExpr(expr)
	if err != nil {
		t.Fatal(err)
	}
	var lists [][]string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names := []string{vs.Name}
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchRegexp {
					names = strings.Split(m.Value, "|")
				}
			}
			lists = append(lists, names)
		}
		return nil
	})
	for old, cur := range rules.VLLMRenamed {
		suffix := ""
		if rules.VLLMMetrics[cur] == dto.MetricType_HISTOGRAM {
			suffix = "_count"
		}
		if !slices.ContainsFunc(lists, func(l []string) bool {
			return slices.Contains(l, cur+suffix) && slices.Contains(l, old+suffix)
		}) {
			t.Errorf("the rule reads no list with both %s and %s", cur+suffix, old+suffix)
		}
	}
	for _, l := range lists {
		base, _ := strings.CutSuffix(l[0], "_count")
		if _, ok := rules.VLLMMetrics[l[0]]; !ok && rules.VLLMMetrics[base] != dto.MetricType_HISTOGRAM {
			t.Errorf("watches %s, not a current vLLM metric in rules.VLLMMetrics", l[0])
		}
	}
	if len(lists) < 10 {
		t.Errorf("watches %d figures: %v", len(lists), lists)
	}
}
