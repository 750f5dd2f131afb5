package dashboards_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/llmprobe/llmprobe/dashboards"
	"github.com/llmprobe/llmprobe/rules"
	"github.com/llmprobe/llmprobe/rules/rulestest"
)

// committed returns the committed dashboard files, decoded generically (the
// checks must see the JSON as Grafana will, not as our structs model it).
func committed(t *testing.T) map[string]map[string]any {
	t.Helper()
	names, err := fs.Glob(dashboards.FS, "*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(dashboards.All()) {
		t.Fatalf("want %d dashboards, got %v", len(dashboards.All()), names)
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		data, err := fs.ReadFile(dashboards.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[n] = d
	}
	return out
}

// panels returns every non-row panel, including those inside collapsed rows.
func panels(d map[string]any) []map[string]any {
	var out []map[string]any
	var walk func(ps []any)
	walk = func(ps []any) {
		for _, p := range ps {
			pm := p.(map[string]any)
			if pm["type"] == "row" {
				if sub, ok := pm["panels"].([]any); ok {
					walk(sub)
				}
				continue
			}
			out = append(out, pm)
		}
	}
	walk(d["panels"].([]any))
	return out
}

// grafanaVar matches $name, ${name} and ${name:format}.
var grafanaVar = regexp.MustCompile(`\$\{?(\w+)(?::\w+)?\}?`)

// expand replaces Grafana variables so the expression parses as PromQL:
// interval variables become a duration, the others a label value. It fails
// on variables that are neither built in nor defined by the dashboard.
func expand(expr string, defined []string) (string, error) {
	var err error
	out := grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		name := grafanaVar.FindStringSubmatch(m)[1]
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		}
		if !slices.Contains(defined, name) {
			err = fmt.Errorf("undefined variable %s in %q", m, expr)
		}
		return "x"
	})
	return out, err
}

// engineSeries reports whether name is a serving engine's own metric
// (vLLM, SGLang, TGI, llama.cpp), not llmprobe's or a recording rule's.
func engineSeries(name string) bool {
	for _, p := range []string{"vllm:", "sglang:", "tgi_", "llamacpp:"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

type checker struct {
	t       *testing.T
	cat     *rules.Catalog
	alerts  []string
	defined []string
}

// expr checks one PromQL expression of a dashboard: it parses once the
// variables are replaced, and every metric it reads exists.
func (c *checker) expr(where, expr string) {
	c.t.Helper()
	if strings.TrimSpace(expr) == "" {
		c.t.Errorf("%s: empty expression", where)
		return
	}
	e, err := expand(expr, c.defined)
	if err != nil {
		c.t.Errorf("%s: %v", where, err)
		return
	}
	names, err := rules.MetricNames(rules.NewParser(), e)
	if err != nil {
		c.t.Errorf("%s: %q: %v", where, expr, err)
		return
	}
	for _, n := range names {
		if _, ok := c.cat.Source(n); !ok {
			c.t.Errorf("%s: reads unknown metric %s", where, n)
		}
	}
	pe, _ := rules.NewParser().ParseExpr(e)
	for _, s := range rulestest.CanceledInRatios(pe) {
		c.t.Errorf("%s: %s counts requests canceled by llmprobe in a ratio", where, s)
	}
	for _, s := range rulestest.OldNameOutsideFallback(pe) {
		c.t.Errorf("%s: reads vLLM's older name %s without its current name before it (`new or old`)", where, s)
	}
	var labelled, joined int
	mapped, byModel := false, false
	parser.Inspect(pe, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		matchers := map[string]string{}
		for _, m := range vs.LabelMatchers {
			matchers[m.Name] += m.Type.String() + m.Value
		}
		switch {
		case engineSeries(vs.Name):
			// Server series: attributed to the chosen targets by the
			// scrape job's target label, or through the instance map.
			switch matchers["target"] {
			case `!==~x`, `=~x!=`: // target!="", target=~"$target"
				labelled++
			case "":
				joined++
			default:
				c.t.Errorf("%s: %s: want target!=\"\", target=~\"$target\" or no target matcher", where, vs)
			}
		case vs.Name == "target_instance:llmprobe_target_info:max":
			mapped = mapped || matchers["target"] == "=~x"
		case vs.Name == "llmprobe_target_info":
			byModel = byModel || matchers["model"] == "=~x"
		}
		return nil
	})
	if labelled+joined > 0 {
		// Every server query works with and without the scrape job's
		// target label, and keeps the chosen models only.
		if labelled == 0 || joined == 0 || !mapped {
			c.t.Errorf("%s: server series read %d times with the target label and %d times through the "+
				"instance map (joined with the chosen targets: %v); want both: %s", where, labelled, joined, mapped, expr)
		}
		if !byModel {
			c.t.Errorf("%s: server query does not keep the chosen models (llmprobe_target_info{model=~\"$model\"}): %s", where, expr)
		}
	}
	parser.Inspect(pe, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		// Alert names in ALERTS selectors must be llmprobe's alerts.
		if vs.Name != "ALERTS" {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != "alertname" {
				continue
			}
			vals := []string{m.Value}
			if m.Type == labels.MatchRegexp {
				vals = strings.Split(m.Value, "|")
			}
			for _, v := range vals {
				if !slices.Contains(c.alerts, v) {
					c.t.Errorf("%s: ALERTS selector names unknown alert %q", where, v)
				}
			}
		}
		return nil
	})
}

func setup(t *testing.T) *checker {
	t.Helper()
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := rulestest.Catalog(files)
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					alerts = append(alerts, r.Alert)
				}
			}
		}
	}
	return &checker{t: t, cat: cat, alerts: alerts}
}

var labelValues = regexp.MustCompile(`^label_values\((.+), (\w+)\)$`)

func TestDashboards(t *testing.T) {
	uids := map[string]string{}
	for name, d := range committed(t) {
		t.Run(name, func(t *testing.T) {
			c := setup(t)
			if v, _ := d["schemaVersion"].(float64); int(v) != dashboards.SchemaVersion {
				t.Errorf("schemaVersion %v, want %d", d["schemaVersion"], dashboards.SchemaVersion)
			}
			uid, _ := d["uid"].(string)
			if !regexp.MustCompile(`^llmprobe-[a-z-]{1,31}$`).MatchString(uid) {
				t.Errorf("uid %q: want llmprobe-<name>, at most 40 characters", uid)
			}
			if other, dup := uids[uid]; dup {
				t.Errorf("uid %q also used by %s", uid, other)
			}
			uids[uid] = name
			if title, _ := d["title"].(string); title == "" {
				t.Error("no title")
			}
			if tags, _ := d["tags"].([]any); !slices.Contains(tags, any(dashboards.Tag)) {
				t.Errorf("tags %v lack %q", tags, dashboards.Tag)
			}

			// Variables: ${datasource}, model, target, probe.
			vars := map[string]map[string]any{}
			for _, v := range d["templating"].(map[string]any)["list"].([]any) {
				vm := v.(map[string]any)
				vars[vm["name"].(string)] = vm
				c.defined = append(c.defined, vm["name"].(string))
			}
			if ds := vars["datasource"]; ds == nil || ds["type"] != "datasource" || ds["query"] != "prometheus" {
				t.Errorf("no Prometheus datasource variable named datasource: %v", ds)
			}
			for _, n := range []string{"model", "target", "probe"} {
				v := vars[n]
				if v == nil || v["type"] != "query" {
					t.Errorf("no query variable %s", n)
					continue
				}
				checkDatasource(t, "variable "+n, v["datasource"])
				m := labelValues.FindStringSubmatch(v["definition"].(string))
				if m == nil {
					t.Errorf("variable %s: definition %q is not label_values(selector, label)", n, v["definition"])
					continue
				}
				c.expr("variable "+n, m[1])
			}

			// Annotations (besides Grafana's built-in one) query Prometheus.
			for _, a := range d["annotations"].(map[string]any)["list"].([]any) {
				am := a.(map[string]any)
				if am["builtIn"] != nil {
					continue
				}
				checkDatasource(t, "annotation "+am["name"].(string), am["datasource"])
				c.expr("annotation "+am["name"].(string), am["expr"].(string))
			}

			// Panels.
			ids := map[float64]bool{}
			for _, p := range panels(d) {
				title, _ := p["title"].(string)
				where := fmt.Sprintf("panel %q", title)
				if strings.TrimSpace(title) == "" {
					t.Errorf("panel %v has no title", p["id"])
				}
				if id := p["id"].(float64); ids[id] {
					t.Errorf("%s: duplicate id %v", where, id)
				} else {
					ids[id] = true
				}
				checkDatasource(t, where, p["datasource"])
				targets, _ := p["targets"].([]any)
				if len(targets) == 0 {
					t.Errorf("%s: no queries", where)
				}
				for _, tg := range targets {
					tm := tg.(map[string]any)
					checkDatasource(t, where+" query "+fmt.Sprint(tm["refId"]), tm["datasource"])
					expr, _ := tm["expr"].(string)
					c.expr(where, expr)
				}
			}
			checkNoForeignUIDs(t, d)
			checkLayout(t, d)
		})
	}
}

func checkDatasource(t *testing.T, where string, ds any) {
	t.Helper()
	m, ok := ds.(map[string]any)
	if !ok || m["uid"] != "${datasource}" || m["type"] != "prometheus" {
		t.Errorf("%s: datasource %v, want the ${datasource} variable", where, ds)
	}
}

// checkNoForeignUIDs walks the whole dashboard: the only UIDs allowed are
// the dashboard's own, the ${datasource} variable and Grafana's built-in
// annotation source.
func checkNoForeignUIDs(t *testing.T, d map[string]any) {
	t.Helper()
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if strings.EqualFold(k, "uid") && path != "" {
					if s, _ := val.(string); s != "${datasource}" && s != "-- Grafana --" {
						t.Errorf("%s.%s = %v: foreign UID", path, k, val)
					}
				}
				walk(path+"."+k, val)
			}
		case []any:
			for i, val := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), val)
			}
		}
	}
	walk("", d)
}

// checkLayout checks that panels fit the 24-column grid and do not overlap,
// among the visible panels and among each collapsed row's panels.
func checkLayout(t *testing.T, d map[string]any) {
	t.Helper()
	type box struct {
		title      string
		x, y, w, h int
	}
	get := func(p map[string]any) box {
		g := p["gridPos"].(map[string]any)
		return box{p["title"].(string), int(g["x"].(float64)), int(g["y"].(float64)), int(g["w"].(float64)), int(g["h"].(float64))}
	}
	check := func(bs []box) {
		for i, a := range bs {
			if a.w <= 0 || a.h <= 0 || a.x < 0 || a.x+a.w > 24 {
				t.Errorf("panel %q: gridPos %+v outside the 24-column grid", a.title, a)
			}
			for _, b := range bs[i+1:] {
				if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
					t.Errorf("panels %q and %q overlap", a.title, b.title)
				}
			}
		}
	}
	var visible []box
	for _, p := range d["panels"].([]any) {
		pm := p.(map[string]any)
		visible = append(visible, get(pm))
		if sub, ok := pm["panels"].([]any); ok && len(sub) > 0 {
			var hidden []box
			for _, s := range sub {
				hidden = append(hidden, get(s.(map[string]any)))
			}
			check(hidden)
		}
	}
	check(visible)
}

// TestContent pins what each dashboard must show (the list) to the
// metrics its queries read.
func TestContent(t *testing.T) {
	all := committed(t)
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"llmprobe-slo-overview.json", []string{
			"target_probe:llmprobe_goodput:ratio_rate5m", "target_probe:llmprobe_goodput_objective:ratio",
			"llmprobe_good_requests_total", // error budget left
			"target_probe:llmprobe_time_to_first_token_seconds:p99_5m",
			"target_probe:llmprobe_time_per_output_token_seconds:p99_5m",
			"target_probe:llmprobe_e2e_request_latency_seconds:p99_5m", "llmprobe_slo_threshold_seconds",
			"target_probe_slo:llmprobe_slo_attainment:ratio_rate5m", "llmprobe_requests_total",
			"llmprobe_requests_in_flight", "target_probe:llmprobe_request_send_lag_seconds:p99_5m", "ALERTS",
			"llmprobe_requests_skipped_total", // error budget left counts skips at max_concurrency
			"target_probe:llmprobe_requests_sent_late:ratio_rate10m", "target_probe:llmprobe_requests_sent:increase10m",
			// The Replicas row: the worst replica, each replica against its service's median.
			"service_probe:llmprobe_time_to_first_token_seconds_p99:worst_ratio_median_10m",
			"service_probe:llmprobe_time_per_output_token_seconds_p99:worst_ratio_median_10m",
			"service_target_probe:llmprobe_time_to_first_token_seconds:p99_10m",
			"service_target_probe:llmprobe_time_per_output_token_seconds:p99_10m",
			"service_probe:llmprobe_time_to_first_token_seconds_p99:median_10m",
			"service_probe:llmprobe_time_per_output_token_seconds_p99:median_10m",
			"service_target_probe:llmprobe_time_to_first_token_seconds_p99:ratio_median_10m",
			"service_probe:llmprobe_replicas:count10m",
		}},
		{"llmprobe-latency.json", []string{
			"llmprobe_time_to_first_token_seconds", "llmprobe_inter_token_latency_seconds",
			"llmprobe_time_per_output_token_seconds", "llmprobe_e2e_request_latency_seconds",
			"llmprobe_time_to_first_content_seconds_bucket",
			"target:vllm_time_to_first_token_seconds:p99_5m", "target:sglang_time_to_first_token_seconds:p99_5m",
			"target_probe:llmprobe_ttft_client_server_gap_seconds:p50_5m",
			"target_probe:llmprobe_ttft_network_share:ratio_5m", "target_probe:llmprobe_ttft_server_queue_share:ratio_5m",
		}},
		{"llmprobe-server-correlation.json", []string{
			"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
			"vllm:num_preemptions_total", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
			"target_probe:llmprobe_time_to_first_token_seconds:p99_5m",
			// vLLM's older names, as the fallback of the current ones
			// (servers before 0.9.2, and before 0.11 for ITL).
			"vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total",
			"vllm:time_per_output_token_seconds_bucket",
			// What vLLM's own dashboards show beside them: server ITL, TPOT,
			// E2E, queue time, finished reasons.
			"vllm:inter_token_latency_seconds_bucket", "vllm:request_time_per_output_token_seconds_bucket",
			"vllm:e2e_request_latency_seconds_bucket", "vllm:request_queue_time_seconds_bucket",
			"vllm:request_success_total", "target:vllm_time_to_first_token_seconds:p99_5m",
			// Every engine with /metrics (docs/engines.md).
			"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", "sglang:cached_tokens_total",
			"sglang:inter_token_latency_seconds_bucket", "sglang:e2e_request_latency_seconds_bucket",
			"sglang:queue_time_seconds_bucket", "sglang:num_requests_total",
			"target:sglang_time_to_first_token_seconds:p99_5m",
			"tgi_batch_current_size", "tgi_queue_size", "tgi_request_mean_time_per_token_duration_bucket",
			"tgi_request_duration_bucket", "tgi_request_queue_duration_bucket", "tgi_request_success",
			"llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:kv_cache_usage_ratio",
			"llamacpp:tokens_predicted_seconds_total", "llamacpp:tokens_predicted_total",
			"target_instance:llmprobe_target_info:max",
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d, ok := all[tc.file]
			if !ok {
				t.Fatal("missing")
			}
			used := map[string]bool{}
			for _, p := range panels(d) {
				for _, tg := range p["targets"].([]any) {
					e, _ := expand(tg.(map[string]any)["expr"].(string), []string{"model", "target", "probe"})
					names, _ := rules.MetricNames(rules.NewParser(), e)
					for _, n := range names {
						used[n] = true
					}
				}
			}
			for _, a := range d["annotations"].(map[string]any)["list"].([]any) {
				if e, ok := a.(map[string]any)["expr"].(string); ok {
					e, _ = expand(e, []string{"model", "target", "probe"})
					names, _ := rules.MetricNames(rules.NewParser(), e)
					for _, n := range names {
						used[n] = true
					}
				}
			}
			for _, w := range tc.want {
				if !used[w] {
					t.Errorf("no query reads %s", w)
				}
			}
		})
	}
}

// TestLatencyRows checks that the latency dashboard opens on the heatmaps
// every Prometheus can fill (classic buckets) and keeps the native ones in a
// collapsed row.
func TestLatencyRows(t *testing.T) {
	d := committed(t)["llmprobe-latency.json"]
	var rows []map[string]any
	for _, p := range d["panels"].([]any) {
		if pm := p.(map[string]any); pm["type"] == "row" {
			rows = append(rows, pm)
		}
	}
	if len(rows) < 2 {
		t.Fatalf("%d rows", len(rows))
	}
	if title := rows[0]["title"].(string); !strings.Contains(title, "classic") || rows[0]["collapsed"] != false {
		t.Errorf("first row %q (collapsed %v), want the classic buckets, open", title, rows[0]["collapsed"])
	}
	if title := rows[1]["title"].(string); !strings.Contains(title, "native") || rows[1]["collapsed"] != true {
		t.Errorf("second row %q (collapsed %v), want the native histograms, collapsed", title, rows[1]["collapsed"])
	}
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "rate interval", in: `rate(x[$__rate_interval])`, want: `rate(x[5m])`},
		{name: "braces and format", in: `x{a=~"${target:regex}"}`, want: `x{a=~"x"}`},
		{name: "plain", in: `x{a=~"$probe"}`, want: `x{a=~"x"}`},
		{name: "undefined", in: `x{a=~"$nope"}`, err: "undefined variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expand(tc.in, []string{"target", "probe"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestSLOOverviewMatchesRules pins the SLO overview's verdict panels to the
// rules the alerts use: "Results valid?" is LLMProbeProberSaturated's
// sample-guarded late-send share (not the send-lag p99), and the error
// budget counts arrivals skipped at max_concurrency as the goodput rules do.
func TestSLOOverviewMatchesRules(t *testing.T) {
	d := committed(t)["llmprobe-slo-overview.json"]
	reads := func(p map[string]any) (map[string]bool, string) {
		used := map[string]bool{}
		var all strings.Builder
		for _, tg := range p["targets"].([]any) {
			expr := tg.(map[string]any)["expr"].(string)
			all.WriteString(expr)
			e, _ := expand(expr, []string{"model", "target", "probe"})
			names, _ := rules.MetricNames(rules.NewParser(), e)
			for _, n := range names {
				used[n] = true
			}
		}
		return used, all.String()
	}
	for _, tc := range []struct {
		title          string
		want, notWant  []string
		wantSubstrings []string
	}{
		{
			title: "Results valid?",
			want: []string{"target_probe:llmprobe_requests_sent_late:ratio_rate10m",
				"target_probe:llmprobe_requests_sent:increase10m"},
			notWant:        []string{"target_probe:llmprobe_request_send_lag_seconds:p99_5m"},
			wantSubstrings: []string{"> bool 0.05", ">= 100"},
		},
		{
			title:          "Error budget left (time range)",
			want:           []string{"llmprobe_good_requests_total", "llmprobe_requests_skipped_total", "llmprobe_requests_total"},
			wantSubstrings: []string{`reason=~"|max_concurrency"`, `outcome!="canceled"`},
		},
	} {
		t.Run(tc.title, func(t *testing.T) {
			var p map[string]any
			for _, c := range panels(d) {
				if c["title"] == tc.title {
					p = c
				}
			}
			if p == nil {
				t.Fatal("no such panel")
			}
			used, text := reads(p)
			for _, w := range tc.want {
				if !used[w] {
					t.Errorf("does not read %s", w)
				}
			}
			for _, w := range tc.notWant {
				if used[w] {
					t.Errorf("reads %s", w)
				}
			}
			for _, w := range tc.wantSubstrings {
				if !strings.Contains(text, w) {
					t.Errorf("query lacks %q: %s", w, text)
				}
			}
		})
	}
}
