package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
	n := len(dashboards.All())
	shared, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	optional, err := rules.LoadOptional()
	if err != nil {
		t.Fatal(err)
	}
	r := len(shared) + len(optional)
	if want := 4*n + 4 + r + 2; len(outs) != want {
		t.Fatalf("want %d generated files (%d dashboards, their %d ConfigMaps, %d chart copies and %d mixin copies, the PrometheusRule, its chart spec, the chart's AlertmanagerConfig spec, "+
			"the kustomization, the mixin's %d rule file copies and its two libsonnet indexes), got %d: %v",
			want, n, n, n, n, r, len(outs), sortedPaths(outs))
	}
	if o := orphans(root, outs); len(o) > 0 {
		t.Errorf("no longer generated, still committed: %v: run `go run ./dashboards/gen` from the repository root", o)
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

// TestDashboardConfigMaps checks that every dashboard has a ConfigMap of
// its own carrying its file byte for byte, labelled for Grafana's sidecar,
// and listed in the kustomization.
func TestDashboardConfigMaps(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(root, dashboardsDir, "*.json"))
	if err != nil || len(paths) != len(dashboards.All()) {
		t.Fatalf("want %d dashboard files, got %v (%v)", len(dashboards.All()), paths, err)
	}
	kust, err := os.ReadFile(filepath.Join(root, kustomizeFile))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range paths {
		file := dashboardFile(filepath.Base(p))
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		var cm struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name   string            `yaml:"name"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Data map[string]string `yaml:"data"`
		}
		if err := yaml.Unmarshal(data, &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind != "ConfigMap" || cm.Metadata.Labels["grafana_dashboard"] != "1" || names[cm.Metadata.Name] {
			t.Fatalf("%s: kind %s name %q labels %v: want a ConfigMap of its own name for Grafana's sidecar", file, cm.Kind, cm.Metadata.Name, cm.Metadata.Labels)
		}
		names[cm.Metadata.Name] = true
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(cm.Data) != 1 || cm.Data[filepath.Base(p)] != string(want) {
			t.Errorf("%s: want the one key %s, equal to %s", file, filepath.Base(p), p)
		}
		if !strings.Contains(string(data), "DO NOT EDIT") {
			t.Errorf("%s: no generated-file header", file)
		}
		if !strings.Contains(string(kust), "  - "+filepath.Base(file)+"\n") {
			t.Errorf("%s does not list %s", kustomizeFile, filepath.Base(file))
		}
	}
}

// TestOrphansAreStale checks that a file the generator wrote once but no
// longer generates is reported by -check and removed by a run, while a
// hand-written file beside them is left alone.
func TestOrphansAreStale(t *testing.T) {
	dir := t.TempDir()
	if got := run([]string{"-root", dir}); got != 0 {
		t.Fatalf("write: %d", got)
	}
	mon := filepath.Join(dir, filepath.FromSlash(deployDir))
	orphan := filepath.Join(mon, "grafana-dashboards.yaml")
	own := filepath.Join(mon, "mine.yaml")
	if err := os.WriteFile(orphan, []byte("# Generated by `go run ./dashboards/gen` from x. DO NOT EDIT.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run([]string{"-check", "-root", dir}); got != 1 {
		t.Fatalf("-check with an orphan = %d, want 1", got)
	}
	// The chart renders every file of its dashboards directory: one the
	// generator no longer writes (a renamed dashboard) is an orphan too.
	chartOrphan := filepath.Join(dir, filepath.FromSlash(chartDashDir), "llmprobe-renamed.json")
	if err := os.WriteFile(chartOrphan, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := orphans(dir, mustOutputs(t)); !slices.Contains(o, chartDashDir+"/llmprobe-renamed.json") {
		t.Fatalf("orphans = %v, want the chart's renamed dashboard among them", o)
	}
	if got := run([]string{"-root", dir}); got != 0 {
		t.Fatalf("rewrite: %d", got)
	}
	for _, p := range []string{orphan, chartOrphan} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the orphan %s is still there: %v", p, err)
		}
	}
	if _, err := os.Stat(own); err != nil {
		t.Errorf("a hand-written file was removed: %v", err)
	}
	if got := run([]string{"-check", "-root", dir}); got != 0 {
		t.Fatalf("-check after the rewrite = %d, want 0", got)
	}
}

func mustOutputs(t *testing.T) map[string][]byte {
	t.Helper()
	outs, err := outputs()
	if err != nil {
		t.Fatal(err)
	}
	return outs
}
