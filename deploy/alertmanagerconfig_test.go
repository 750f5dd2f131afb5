package deploy

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/deploy/alertmanager"
)

// TestChartAlertmanagerConfig: alertmanagerConfig.enabled renders one
// AlertmanagerConfig (decoded strictly into the Operator's type) with the
// shipped routing and every inhibition of alertmanager.yml, the receiver
// the values give, and labels every alert of the PrometheusRule with a
// namespace (the Operator's OnNamespace matcher); without a receiver the
// render fails naming the value.
func TestChartAlertmanagerConfig(t *testing.T) {
	receiver := map[string]any{"webhookConfigs": []any{map[string]any{"url": "http://hook.monitoring:8080/"}}}
	objs, err := renderChart(t, "probes", map[string]any{"alertmanagerConfig": map[string]any{
		"enabled": true, "receiver": receiver, "labels": map[string]any{"alertmanagerConfig": "main"}}})
	if err != nil {
		t.Fatal(err)
	}
	amcs := Of[monitoringv1alpha1.AlertmanagerConfig](objs)
	if len(amcs) != 1 {
		t.Fatalf("%d AlertmanagerConfigs, want 1", len(amcs))
	}
	amc := amcs[0]
	if amc.Labels["alertmanagerConfig"] != "main" || amc.Namespace != chartNamespace {
		t.Errorf("labels %v namespace %q", amc.Labels, amc.Namespace)
	}
	var shipped struct {
		Route struct {
			Receiver string   `yaml:"receiver"`
			GroupBy  []string `yaml:"group_by"`
		} `yaml:"route"`
		InhibitRules []any `yaml:"inhibit_rules"`
	}
	if err := yaml.Unmarshal(alertmanager.Config, &shipped); err != nil {
		t.Fatal(err)
	}
	r := amc.Spec.Route
	if r == nil || r.Receiver != shipped.Route.Receiver || strings.Join(r.GroupBy, ",") != strings.Join(shipped.Route.GroupBy, ",") || len(r.Routes) != 1 {
		t.Fatalf("route %+v, want alertmanager.yml's (receiver %s, group_by %v, one child route)", r, shipped.Route.Receiver, shipped.Route.GroupBy)
	}
	if len(amc.Spec.InhibitRules) != len(shipped.InhibitRules) || len(amc.Spec.InhibitRules) == 0 {
		t.Errorf("%d inhibit rules, alertmanager.yml has %d", len(amc.Spec.InhibitRules), len(shipped.InhibitRules))
	}
	names := map[string]bool{}
	for _, rc := range amc.Spec.Receivers {
		names[rc.Name] = true
		if rc.Name == "page" && (len(rc.WebhookConfigs) != 1 || rc.WebhookConfigs[0].URL == nil || string(*rc.WebhookConfigs[0].URL) != "http://hook.monitoring:8080/") {
			t.Errorf("receiver page %+v, want the values' webhook", rc)
		}
	}
	child, err := r.ChildRoutes()
	if err != nil {
		t.Fatal(err)
	}
	if !names[r.Receiver] || !names[child[0].Receiver] {
		t.Errorf("receivers %v lack the routes' %s and %s", names, r.Receiver, child[0].Receiver)
	}
	alerts := 0
	for _, pr := range Of[monitoringv1.PrometheusRule](objs) {
		for _, g := range pr.Spec.Groups {
			for _, rule := range g.Rules {
				if rule.Alert == "" {
					continue
				}
				alerts++
				if want := "{{ with $labels.namespace }}{{ . }}{{ else }}" + chartNamespace + "{{ end }}"; rule.Labels["namespace"] != want || rule.Labels["severity"] == "" {
					t.Errorf("%s: labels %v, want namespace %q beside its severity", rule.Alert, rule.Labels, want)
				}
			}
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts in the PrometheusRule")
	}
	checkReferences(t, "alertmanagerConfig", objs, func(string) bool { return false })

	// Off by default; on without a receiver, a named failure.
	def, err := renderChart(t, "probes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Of[monitoringv1alpha1.AlertmanagerConfig](def)); n != 0 {
		t.Errorf("%d AlertmanagerConfigs by default", n)
	}
	for _, pr := range Of[monitoringv1.PrometheusRule](def) {
		for _, g := range pr.Spec.Groups {
			for _, rule := range g.Rules {
				if _, ok := rule.Labels["namespace"]; ok {
					t.Errorf("%s has a namespace label without the AlertmanagerConfig", rule.Alert)
				}
			}
		}
	}
	if _, err := renderChart(t, "probes", map[string]any{"alertmanagerConfig": map[string]any{"enabled": true}}); err == nil ||
		!strings.Contains(err.Error(), "alertmanagerConfig.receiver") {
		t.Errorf("enabled without a receiver: %v, want a failure naming alertmanagerConfig.receiver", err)
	}
}
