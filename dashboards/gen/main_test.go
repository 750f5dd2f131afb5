package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/dashboards"
	"github.com/llmprobe/llmprobe/rules"
)

const root = "../.."

// TestGeneratedFilesUpToDate fails when a committed generated file differs
// from what the generator writes now: run `go run ./dashboards/gen`.
func TestGeneratedFilesUpToDate(t *testing.T) {
	outs, err := outputs()
	if err != nil {
		t.Fatal(err)
	}
	if want := len(dashboards.All()) + 3; len(outs) != want {
		t.Fatalf("want %d generated files (%d dashboards, 3 deploy files), got %d: %v", want, want-3, len(outs), sortedPaths(outs))
	}
	for _, p := range sortedPaths(outs) {
		t.Run(p, func(t *testing.T) {
			if stale := staleFiles(root, map[string][]byte{p: outs[p]}); len(stale) > 0 {
				t.Fatalf("%s is stale: run `go run ./dashboards/gen` from the repository root", p)
			}
		})
	}
}

func TestCheckFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{name: "committed tree is current", args: []string{"-check", "-root", root}, want: 0},
		{name: "empty tree is stale", args: []string{"-check", "-root", dir}, want: 1},
		{name: "write into empty tree", args: []string{"-root", dir}, want: 0},
		{name: "written tree is current", args: []string{"-check", "-root", dir}, want: 0},
		{name: "bad flag", args: []string{"-nope"}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.args); got != tc.want {
				t.Fatalf("run(%v) = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}

// TestPrometheusRuleMatchesRuleFiles checks that the PrometheusRule holds
// exactly the groups of rules/*.yml, and that they still parse as rules.
func TestPrometheusRuleMatchesRuleFiles(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ruleFile))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name == "" {
		t.Fatalf("not a named PrometheusRule: %s %s %q", pr.APIVersion, pr.Kind, pr.Metadata.Name)
	}
	spec, err := yaml.Marshal(&pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rules.Parse(spec)
	if err != nil {
		t.Fatalf("spec does not parse as a rule file: %v", err)
	}
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		for _, g := range f.Groups {
			want = append(want, g.Name)
		}
	}
	var gotNames []string
	for _, g := range got {
		gotNames = append(gotNames, g.Name)
	}
	if !reflect.DeepEqual(gotNames, want) {
		t.Fatalf("groups %v, want %v", gotNames, want)
	}
	i := 0
	for _, f := range files {
		for _, g := range f.Groups {
			if !reflect.DeepEqual(got[i].Rules, g.Rules) {
				t.Errorf("group %s differs from %s", g.Name, f.Name)
			}
			i++
		}
	}
}

// TestDashboardConfigMap checks that the ConfigMap carries every dashboard
// file byte for byte, labelled for Grafana's sidecar.
func TestDashboardConfigMap(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, dashboardsFile))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Kind != "ConfigMap" || cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Fatalf("kind %s labels %v", cm.Kind, cm.Metadata.Labels)
	}
	paths, err := filepath.Glob(filepath.Join(root, dashboardsDir, "*.json"))
	if err != nil || len(paths) != len(dashboards.All()) {
		t.Fatalf("want %d dashboard files, got %v (%v)", len(dashboards.All()), paths, err)
	}
	if len(cm.Data) != len(paths) {
		t.Fatalf("ConfigMap has %d keys, want %d", len(cm.Data), len(paths))
	}
	for _, p := range paths {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := cm.Data[filepath.Base(p)]; got != string(want) {
			t.Errorf("key %s differs from %s", filepath.Base(p), p)
		}
	}
	if !strings.Contains(string(data), "DO NOT EDIT") {
		t.Error("no generated-file header")
	}
}
