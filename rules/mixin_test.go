package rules_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-jsonnet"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/llmprobe/llmprobe/rules"
)

// mixinDir is the monitoring mixin, relative to this package.
const mixinDir = "../mixin"

// One VM for every evaluation: it caches the mixin's import, so the rule
// files are parsed once. A VM is not safe for concurrent use.
var (
	mixinVM     *jsonnet.VM
	mixinVMOnce sync.Once
	mixinVMMu   sync.Mutex
)

// evalMixin evaluates mixin/mixin.libsonnet with go-jsonnet, merged with
// override (a jsonnet object, "{}" for the defaults), and returns the JSON
// of field (prometheusRules, prometheusAlerts or grafanaDashboards).
func evalMixin(t *testing.T, override, field string) []byte {
	t.Helper()
	mixinVMOnce.Do(func() {
		mixinVM = jsonnet.MakeVM()
		mixinVM.Importer(&jsonnet.FileImporter{JPaths: []string{mixinDir}})
	})
	mixinVMMu.Lock()
	defer mixinVMMu.Unlock()
	out, err := mixinVM.EvaluateAnonymousSnippet("mixin_test.jsonnet",
		"((import 'mixin.libsonnet') + "+override+")."+field)
	if err != nil {
		t.Fatalf("evaluate mixin (%s).%s: %v", override, field, err)
	}
	return []byte(out)
}

// mixinGroups parses the mixin's rules or alerts output with rules.Parse
// (rulefmt and the PromQL parser: JSON is YAML).
func mixinGroups(t *testing.T, override, field string) []rulefmt.RuleGroup {
	t.Helper()
	gs, err := rules.Parse(evalMixin(t, override, field))
	if err != nil {
		t.Fatalf("mixin %s does not parse as a rule file: %v", field, err)
	}
	return gs
}

// TestMixinEqualsRuleFiles: with the default _config the mixin's
// prometheusRules and prometheusAlerts hold exactly the groups of the shared
// rule files (names, rules, exprs, for, keep_firing_for, labels,
// annotations), recording groups in one and alert groups in the other.
func TestMixinEqualsRuleFiles(t *testing.T) {
	recording := mixinGroups(t, "{}", "prometheusRules")
	alerting := mixinGroups(t, "{}", "prometheusAlerts")
	for _, g := range recording {
		for _, r := range g.Rules {
			if r.Alert != "" {
				t.Errorf("prometheusRules group %s holds alert %s", g.Name, r.Alert)
			}
		}
	}
	for _, g := range alerting {
		for _, r := range g.Rules {
			if r.Record != "" {
				t.Errorf("prometheusAlerts group %s holds recording rule %s", g.Name, r.Record)
			}
		}
	}
	var want []rulefmt.RuleGroup
	for _, f := range load(t) {
		want = append(want, f.Groups...)
	}
	compareGroups(t, slices.Concat(recording, alerting), want)
}

// optionalGroups returns the rule groups of the opt-in rule file name
// (rules.LoadOptional).
func optionalGroups(t *testing.T, name string) []rulefmt.RuleGroup {
	t.Helper()
	opt, err := rules.LoadOptional()
	if err != nil {
		t.Fatal(err)
	}
	var groups []rulefmt.RuleGroup
	for _, f := range opt {
		if f.Name == name {
			groups = append(groups, f.Groups...)
		}
	}
	return groups
}

// TestMixinAbsentAlertOptIn: LLMProbeAbsent is left out by default and, with
// absentAlert, equals optional/llmprobe.absent.yml.
func TestMixinAbsentAlertOptIn(t *testing.T) {
	absent := optionalGroups(t, "optional/llmprobe.absent.yml")
	on := mixinGroups(t, "{_config+:: {absentAlert: true}}", "prometheusAlerts")
	var got []rulefmt.RuleGroup
	for _, g := range on {
		if g.Name == "llmprobe.absent" {
			got = append(got, g)
		}
	}
	compareGroups(t, got, absent)
	for _, g := range mixinGroups(t, "{}", "prometheusAlerts") {
		if g.Name == "llmprobe.absent" {
			t.Error("LLMProbeAbsent is in the default prometheusAlerts")
		}
	}
}

// TestMixinEnergyAlertOptIn: LLMProbeEnergyPerGoodTokenRegression is left
// out by default and, with energyAlert, equals optional/llmprobe.energy.yml;
// its thresholds are knobs.
func TestMixinEnergyAlertOptIn(t *testing.T) {
	want := optionalGroups(t, "optional/llmprobe.energy.yml")
	pick := func(gs []rulefmt.RuleGroup) []rulefmt.RuleGroup {
		var out []rulefmt.RuleGroup
		for _, g := range gs {
			if g.Name == "llmprobe.energy.alerts" {
				out = append(out, g)
			}
		}
		return out
	}
	compareGroups(t, pick(mixinGroups(t, "{_config+:: {energyAlert: true}}", "prometheusAlerts")), want)
	if got := pick(mixinGroups(t, "{}", "prometheusAlerts")); len(got) != 0 {
		t.Error("the energy alert is in the default prometheusAlerts")
	}
	r := alertByName(t, mixinGroups(t, "{_config+:: {energyAlert: true, energyRegressionRatio: 1.5, energyLoadBand: 0.1}}", "prometheusAlerts"),
		"LLMProbeEnergyPerGoodTokenRegression")
	for _, w := range []string{"> 1.5", ") < 0.1", "more than 1.5 times", "within 10 %"} {
		if !strings.Contains(r.Expr+r.Annotations["summary"]+r.Annotations["description"], w) {
			t.Errorf("energy knobs: no %q in\n%s\n%s", w, r.Expr, r.Annotations)
		}
	}
}

func compareGroups(t *testing.T, got, want []rulefmt.RuleGroup) {
	t.Helper()
	byName := map[string]rulefmt.RuleGroup{}
	for _, g := range got {
		if _, dup := byName[g.Name]; dup {
			t.Errorf("mixin has group %s twice", g.Name)
		}
		byName[g.Name] = g
	}
	if len(got) != len(want) {
		t.Errorf("mixin has %d groups, the rule files %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := byName[w.Name]
		if !ok {
			t.Errorf("mixin lacks group %s", w.Name)
			continue
		}
		if len(g.Rules) != len(w.Rules) {
			t.Errorf("group %s: mixin has %d rules, the file %d", w.Name, len(g.Rules), len(w.Rules))
			continue
		}
		for i := range w.Rules {
			if !reflect.DeepEqual(g.Rules[i], w.Rules[i]) {
				t.Errorf("group %s rule %d (%s%s) differs:\nmixin: %#v\nfile:  %#v",
					w.Name, i, w.Rules[i].Record, w.Rules[i].Alert, g.Rules[i], w.Rules[i])
			}
		}
		g.Rules, w.Rules = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("group %s settings differ: mixin %#v, file %#v", w.Name, g, w)
		}
	}
}

// TestMixinDashboardsEqualFiles: grafanaDashboards holds every generated
// dashboards/*.json under its file name, equal as JSON.
func TestMixinDashboardsEqualFiles(t *testing.T) {
	var got map[string]any
	if err := json.Unmarshal(evalMixin(t, "{}", "grafanaDashboards"), &got); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob("../dashboards/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	if len(got) != len(paths) {
		t.Errorf("mixin has %d dashboards, dashboards/ %d", len(got), len(paths))
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("mixin dashboard %s differs from %s", name, p)
		}
	}
}

// alertByName finds an alert in groups.
func alertByName(t *testing.T, groups []rulefmt.RuleGroup, name string) rulefmt.Rule {
	t.Helper()
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r
			}
		}
	}
	t.Fatalf("no alert %s", name)
	return rulefmt.Rule{}
}

// TestMixinKnobs: each _config knob changes the alerts it names, in the
// expression (and the text that quotes it), and nothing else.
func TestMixinKnobs(t *testing.T) {
	def := mixinGroups(t, "{}", "prometheusAlerts")
	for _, tc := range []struct {
		knob   string
		alerts []string
		// want: a substring of the edited rule (expr, keep_firing_for or annotations).
		want string
	}{
		{`llmprobeSelector: 'job="my-llmprobe"'`, []string{"LLMProbeDown"}, `up{job="my-llmprobe"} == 0`},
		{`fastBurnThreshold: 10`, []string{"LLMProbeGoodputBudgetBurnFast", "LLMProbeTTFTAboveSLO", "LLMProbeTPOTAboveSLO"}, "ratio_rate5m > 10"},
		{`slowBurnThreshold: 3`, []string{"LLMProbeGoodputBudgetBurnSlow"}, "ratio_rate30m > 3"},
		{`canaryTPOTMeanRatio: 1.5`, []string{"LLMProbeCanaryRegression"}, `ratio_10m > 1.5, "metric", "tpot_mean"`},
		{`canaryTTFTMeanRatio: 1.5`, []string{"LLMProbeCanaryRegression"}, "1.5 for ttft_mean"},
		{`canaryITLMeanRatio: 1.5`, []string{"LLMProbeCanaryRegression"}, `ratio_10m > 1.5, "metric", "itl_mean"`},
		{`canaryTTFTMeanRatio: 1.5`, []string{"LLMProbeCanaryRegression"}, `ratio_10m > 1.5, "metric", "ttft_mean"`},
		{`canaryTTFTP99Ratio: 3`, []string{"LLMProbeCanaryRegression"}, `ratio_10m > 3, "metric", "ttft_p99"`},
		{`canaryTPOTP99Ratio: 1.5`, []string{"LLMProbeCanaryRegression"}, `ratio_10m > 1.5, "metric", "tpot_p99"`},
		{`canaryGoodputDiff: -0.1`, []string{"LLMProbeCanaryRegression"}, `< -0.1, "metric", "goodput"`},
		{`canaryMinRequests: 50`, []string{"LLMProbeCanaryRegression"}, "min_increase10m >= 50"},
		{`answerPassRatio: 0.8`, []string{"LLMProbeAnswerRegression"}, "ratio30m < 0.8"},
		{`answerPassRatio: 0.8`, []string{"LLMProbeAnswerRegression"}, "less than 80 %"},
		{`answerMinChecks: 50`, []string{"LLMProbeAnswerRegression"}, "increase30m >= 50"},
		{`capacityRegressionRatio: 0.5`, []string{"LLMProbeCapacityRegression"}, "below 50 %"},
		{`capacityHeadroomRatio: 0.25`, []string{"LLMProbeCapacityHeadroomLow"}, "< 0.25"},
		{`capacityHeadroomRatio: 0.25`, []string{"LLMProbeCapacityHeadroomLow"}, "within 25 %"},
		{`replicaOutlierRatio: 3`, []string{"LLMProbeReplicaOutlier"}, `ratio_median_10m >= 3, "metric", "tpot_p99"`},
		{`replicaOutlierRatio: 3`, []string{"LLMProbeReplicaOutlier"}, "at least 3 times"},
		{`replicaOutlierFor: '30m'`, []string{"LLMProbeReplicaOutlier"}, "held for 30m"},
		{`replicaMinRequests: 50`, []string{"LLMProbeReplicaOutlier"}, "at least 50 successful"},
		{`clientReadLagRatio: 0.05`, []string{"LLMProbeClientReadLag"}, "over_1ms:ratio_rate10m > 0.05"},
		{`keepFiringFor: '30m'`, []string{"LLMProbeGoodputBudgetBurnFast", "LLMProbeCanaryRegression", "LLMProbeCapacityHeadroomLow"}, "30m"},
	} {
		t.Run(tc.knob, func(t *testing.T) {
			got := mixinGroups(t, "{_config+:: {"+tc.knob+"}}", "prometheusAlerts")
			changed := map[string]bool{}
			for _, name := range tc.alerts {
				changed[name] = true
				r := alertByName(t, got, name)
				text := r.Expr + " " + r.KeepFiringFor.String() + " " + r.Annotations["summary"] + " " + r.Annotations["description"]
				if !strings.Contains(text, tc.want) {
					t.Errorf("%s with %s lacks %q:\n%s", name, tc.knob, tc.want, text)
				}
				if reflect.DeepEqual(r, alertByName(t, def, name)) {
					t.Errorf("%s does not change with %s", name, tc.knob)
				}
			}
			if tc.knob[:4] == "keep" {
				return // every alert with keep_firing_for changes
			}
			for _, g := range got {
				for _, r := range g.Rules {
					if !changed[r.Alert] && !reflect.DeepEqual(r, alertByName(t, def, r.Alert)) {
						t.Errorf("%s changes with %s", r.Alert, tc.knob)
					}
				}
			}
		})
	}
}

// TestMixinReplicaKnobs: replicaOutlierFor sets LLMProbeReplicaOutlier's
// for, and replicaMinRequests the request count of every llmprobe.replicas
// recording rule that has one, and nothing in the other recording groups.
func TestMixinReplicaKnobs(t *testing.T) {
	if r := alertByName(t, mixinGroups(t, "{_config+:: {replicaOutlierFor: '30m'}}", "prometheusAlerts"), "LLMProbeReplicaOutlier"); r.For.String() != "30m" {
		t.Errorf("for %s, want 30m", r.For)
	}
	def := mixinGroups(t, "{}", "prometheusRules")
	got := mixinGroups(t, "{_config+:: {replicaMinRequests: 50}}", "prometheusRules")
	if len(got) != len(def) {
		t.Fatalf("%d recording groups, want %d", len(got), len(def))
	}
	edited := 0
	for i, g := range got {
		for j, r := range g.Rules {
			d := def[i].Rules[j]
			switch {
			case g.Name != "llmprobe.replicas":
				if !reflect.DeepEqual(r, d) {
					t.Errorf("%s changes with replicaMinRequests", r.Record)
				}
			case strings.Contains(d.Expr, "increase10m >= 200"):
				edited++
				if !strings.Contains(r.Expr, "increase10m >= 50") || strings.Contains(r.Expr, ">= 200") {
					t.Errorf("%s with replicaMinRequests 50:\n%s", r.Record, r.Expr)
				}
			case !reflect.DeepEqual(r, d):
				t.Errorf("%s changes with replicaMinRequests but has no request count", r.Record)
			}
		}
	}
	if edited < 5 {
		t.Errorf("replicaMinRequests edited %d rules, want the count, both medians and both ratios", edited)
	}
}

// TestMixinBudgetDaysFollowThresholds: the burn alerts' descriptions say
// how long a 30-day budget lasts at their threshold; a threshold knob
// rewrites that figure too.
func TestMixinBudgetDaysFollowThresholds(t *testing.T) {
	for _, tc := range []struct{ knob, alert, want string }{
		{"fastBurnThreshold: 10", "LLMProbeGoodputBudgetBurnFast", "lasts about 3 days or less"},
		{"fastBurnThreshold: 20", "LLMProbeGoodputBudgetBurnFast", "lasts about 1.5 days or less"},
		{"slowBurnThreshold: 3", "LLMProbeGoodputBudgetBurnSlow", "lasts about 10 days or less"},
	} {
		r := alertByName(t, mixinGroups(t, "{_config+:: {"+tc.knob+"}}", "prometheusAlerts"), tc.alert)
		if d := r.Annotations["description"]; !strings.Contains(d, tc.want) {
			t.Errorf("%s with %s: description lacks %q:\n%s", tc.alert, tc.knob, tc.want, d)
		}
	}
}

// TestMixinRunbookURLPattern: runbookURLPattern sets every alert's
// runbook_url, the alert's name in lower case in place of %s; the default
// is the URL the rule files carry (rules.RunbookBase).
func TestMixinRunbookURLPattern(t *testing.T) {
	got := mixinGroups(t, "{_config+:: {runbookURLPattern: 'https://wiki.example/runbooks/%s.html', absentAlert: true}}", "prometheusAlerts")
	n := 0
	for _, g := range got {
		for _, r := range g.Rules {
			n++
			if want := "https://wiki.example/runbooks/" + strings.ToLower(r.Alert) + ".html"; r.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts")
	}
	if got := strings.TrimSpace(string(evalMixin(t, "{}", "_config.runbookURLPattern"))); got != `"`+rules.RunbookBase+`#%s"` {
		t.Errorf("default runbookURLPattern %s, want %s#%%s", evalMixin(t, "{}", "_config.runbookURLPattern"), rules.RunbookBase)
	}
}

// TestMixinDashboardKnobs: the dashboard knobs set every dashboard's tags
// (and its links' tag), refresh, time zone and selected data source.
func TestMixinDashboardKnobs(t *testing.T) {
	var got map[string]struct {
		Tags     []string `json:"tags"`
		Refresh  string   `json:"refresh"`
		Timezone string   `json:"timezone"`
		Links    []struct {
			Tags []string `json:"tags"`
		} `json:"links"`
		Templating struct {
			List []struct {
				Type    string         `json:"type"`
				Current map[string]any `json:"current"`
			} `json:"list"`
		} `json:"templating"`
	}
	knobs := "{_config+:: {dashboardTags: ['ml', 'slo'], dashboardRefresh: '1m', dashboardTimezone: 'utc', dashboardDatasource: 'Thanos'}}"
	if err := json.Unmarshal(evalMixin(t, knobs, "grafanaDashboards"), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no dashboards")
	}
	for name, d := range got {
		if !reflect.DeepEqual(d.Tags, []string{"ml", "slo"}) || d.Refresh != "1m" || d.Timezone != "utc" {
			t.Errorf("%s: tags %v refresh %q timezone %q", name, d.Tags, d.Refresh, d.Timezone)
		}
		for _, l := range d.Links {
			if l.Tags != nil && !reflect.DeepEqual(l.Tags, []string{"ml", "slo"}) {
				t.Errorf("%s: a link keeps tags %v", name, l.Tags)
			}
		}
		ds := 0
		for _, v := range d.Templating.List {
			if v.Type == "datasource" {
				ds++
				if v.Current["value"] != "Thanos" {
					t.Errorf("%s: datasource variable selects %v", name, v.Current)
				}
			}
		}
		if ds != 1 {
			t.Errorf("%s: %d datasource variables", name, ds)
		}
	}
}

// TestMixinKnobsDocumented: mixin/README.md's knob table lists every
// _config field, and nothing else.
func TestMixinKnobsDocumented(t *testing.T) {
	var knobs []string
	var cfg map[string]any
	if err := json.Unmarshal(evalMixin(t, "{}", "_config"), &cfg); err != nil {
		t.Fatal(err)
	}
	for k := range cfg {
		knobs = append(knobs, k)
	}
	readme, err := os.ReadFile(filepath.Join(mixinDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, f := range strings.Split(first, ",") {
			rows[strings.Trim(strings.TrimSpace(f), "`")] = true
		}
	}
	for _, k := range knobs {
		if !rows[k] {
			t.Errorf("mixin/README.md's knob table lacks %s", k)
		}
		delete(rows, k)
	}
	for k := range rows {
		if k != "_config" && k != "prometheusRules" && k != "prometheusAlerts" && k != "grafanaDashboards" {
			t.Errorf("mixin/README.md lists %s, which is not a knob", k)
		}
	}
}

// TestMixinVendorable: the mixin directory alone, copied as
// jsonnet-bundler vendors a subdirectory (vendor/llmprobe-mixin), renders
// the same rules, alerts and dashboards as the rule files and dashboards:
// no import leaves it.
func TestMixinVendorable(t *testing.T) {
	vendor := t.TempDir()
	dst := filepath.Join(vendor, "llmprobe-mixin")
	if err := os.CopyFS(dst, os.DirFS(mixinDir)); err != nil {
		t.Fatal(err)
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{vendor}})
	for _, field := range []string{"prometheusRules", "prometheusAlerts", "grafanaDashboards"} {
		out, err := vm.EvaluateAnonymousSnippet("vendored.jsonnet", "(import 'llmprobe-mixin/mixin.libsonnet')."+field)
		if err != nil {
			t.Fatalf("the vendored mixin does not evaluate: %v", err)
		}
		if want := evalMixin(t, "{}", field); !jsonEqual(t, []byte(out), want) {
			t.Errorf("the vendored mixin's %s differs from the checkout's", field)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
