package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/rules"
)

// canaryQuery is the part of an Argo Rollouts AnalysisTemplate or a Flagger
// MetricTemplate this test reads (the typed structs are not vendored here).
type canaryQuery struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Metrics []struct {
			Name     string `yaml:"name"`
			Provider struct {
				Prometheus struct {
					Query string `yaml:"query"`
				} `yaml:"prometheus"`
			} `yaml:"provider"`
		} `yaml:"metrics"`
		Query string `yaml:"query"`
	} `yaml:"spec"`
}

// placeholder is an Argo ({{args.x}}) or Flagger ({{ name }}) template
// variable, replaced by a plain value before parsing.
var placeholder = regexp.MustCompile(`\{\{[^}]*\}\}`)

// TestCanaryExamplesQueryTheCanaryRules checks that every query of the Argo
// AnalysisTemplate and the Flagger MetricTemplates parses with Prometheus'
// PromQL parser and reads only series the canary rules record.
func TestCanaryExamplesQueryTheCanaryRules(t *testing.T) {
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	var canary []rules.File
	for _, f := range files {
		if f.Name == "llmprobe.canary.yml" {
			canary = append(canary, f)
		}
	}
	recorded := rules.RecordedNames(canary)
	if len(recorded) == 0 {
		t.Fatal("no recording rules in llmprobe.canary.yml")
	}
	want := map[string]string{"argo-analysistemplate.yaml": "AnalysisTemplate", "flagger-metrictemplate.yaml": "MetricTemplate"}
	for name, kind := range want {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("examples", "canary", name))
			if err != nil {
				t.Fatal(err)
			}
			dec := yaml.NewDecoder(bytes.NewReader(data))
			n := 0
			for {
				var doc canaryQuery
				if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				if doc.Kind != kind {
					t.Errorf("kind %q, want %q", doc.Kind, kind)
				}
				queries := []string{doc.Spec.Query}
				for _, m := range doc.Spec.Metrics {
					queries = append(queries, m.Provider.Prometheus.Query)
				}
				for _, q := range queries {
					if strings.TrimSpace(q) == "" {
						continue
					}
					n++
					names, err := rules.MetricNames(rules.NewParser(), placeholder.ReplaceAllString(q, "x"))
					if err != nil {
						t.Errorf("%q: %v", q, err)
						continue
					}
					for _, m := range names {
						if !slices.Contains(recorded, m) {
							t.Errorf("%q reads %s, not a canary recording rule", q, m)
						}
					}
				}
			}
			if n == 0 {
				t.Error("no query")
			}
		})
	}
}
