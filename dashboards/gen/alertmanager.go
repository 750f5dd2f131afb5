package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/llmprobe/llmprobe/deploy/alertmanager"
)

// The shipped Alertmanager configuration, and the chart's AlertmanagerConfig
// spec made from its routing and inhibitions.
const (
	alertmanagerFile      = "deploy/alertmanager/alertmanager.yml"
	chartAlertmanagerSpec = chartFiles + "/alertmanagerconfig-spec.yaml"
)

// amFile is the part of alertmanager.yml the AlertmanagerConfig carries.
type amFile struct {
	Route        amRoute `yaml:"route"`
	InhibitRules []struct {
		SourceMatchers []string `yaml:"source_matchers"`
		TargetMatchers []string `yaml:"target_matchers"`
		Equal          []string `yaml:"equal"`
	} `yaml:"inhibit_rules"`
}

type amRoute struct {
	Receiver       string    `yaml:"receiver"`
	GroupBy        []string  `yaml:"group_by"`
	GroupWait      string    `yaml:"group_wait"`
	GroupInterval  string    `yaml:"group_interval"`
	RepeatInterval string    `yaml:"repeat_interval"`
	Matchers       []string  `yaml:"matchers"`
	Routes         []amRoute `yaml:"routes"`
}

// alertmanagerConfigSpec renders the route and inhibit rules of the
// shipped Alertmanager configuration in the Prometheus Operator's
// AlertmanagerConfig form (the typed v1alpha1 structs), for the chart's
// template, which adds the receivers.
func alertmanagerConfigSpec() ([]byte, error) {
	var f amFile
	if err := yaml.Unmarshal(alertmanager.Config, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", alertmanagerFile, err)
	}
	route, err := crdRoute(f.Route)
	if err != nil {
		return nil, fmt.Errorf("%s: route: %w", alertmanagerFile, err)
	}
	spec := struct {
		Route        *monitoringv1alpha1.Route        `json:"route"`
		InhibitRules []monitoringv1alpha1.InhibitRule `json:"inhibitRules"`
	}{Route: route}
	for i, r := range f.InhibitRules {
		src, err := crdMatchers(r.SourceMatchers)
		if err != nil {
			return nil, fmt.Errorf("%s: inhibit_rules[%d]: %w", alertmanagerFile, i, err)
		}
		dst, err := crdMatchers(r.TargetMatchers)
		if err != nil {
			return nil, fmt.Errorf("%s: inhibit_rules[%d]: %w", alertmanagerFile, i, err)
		}
		spec.InhibitRules = append(spec.InhibitRules, monitoringv1alpha1.InhibitRule{SourceMatch: src, TargetMatch: dst, Equal: r.Equal})
	}
	b, err := sigsyaml.Marshal(spec)
	if err != nil {
		return nil, err
	}
	head := "# " + fmt.Sprintf(generatedBy, from([]string{alertmanagerFile})) + "\n"
	return append([]byte(head), b...), nil
}

func crdRoute(r amRoute) (*monitoringv1alpha1.Route, error) {
	out := &monitoringv1alpha1.Route{Receiver: r.Receiver, GroupBy: r.GroupBy}
	for _, d := range []struct {
		v   string
		dst **monitoringv1.NonEmptyDuration
	}{{r.GroupWait, &out.GroupWait}, {r.GroupInterval, &out.GroupInterval}, {r.RepeatInterval, &out.RepeatInterval}} {
		if d.v != "" {
			v := monitoringv1.NonEmptyDuration(d.v)
			*d.dst = &v
		}
	}
	m, err := crdMatchers(r.Matchers)
	if err != nil {
		return nil, err
	}
	out.Matchers = m
	for _, c := range r.Routes {
		child, err := crdRoute(c)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(child)
		if err != nil {
			return nil, err
		}
		out.Routes = append(out.Routes, apiextensionsv1.JSON{Raw: raw})
	}
	return out, nil
}

// crdMatchers turns Alertmanager matcher strings (`name = value`,
// `name =~ "a|b"`) into the CRD's matchers.
func crdMatchers(ms []string) ([]monitoringv1alpha1.Matcher, error) {
	var out []monitoringv1alpha1.Matcher
	for _, m := range ms {
		i := strings.IndexAny(m, "=!")
		if i <= 0 {
			return nil, fmt.Errorf("matcher %q: no operator", m)
		}
		name, rest := strings.TrimSpace(m[:i]), m[i:]
		var op monitoringv1alpha1.MatchType
		for _, o := range []monitoringv1alpha1.MatchType{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(rest, string(o)) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, fmt.Errorf("matcher %q: unknown operator", m)
		}
		value := strings.TrimSpace(rest[len(op):])
		if strings.HasPrefix(value, `"`) {
			v, err := strconv.Unquote(value)
			if err != nil {
				return nil, fmt.Errorf("matcher %q: %w", m, err)
			}
			value = v
		}
		out = append(out, monitoringv1alpha1.Matcher{Name: name, Value: value, MatchType: op})
	}
	return out, nil
}
