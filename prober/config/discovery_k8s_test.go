//go:build !no_kubernetes_sd

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/discovery/file"
	"github.com/prometheus/prometheus/discovery/kubernetes"

	"github.com/llmprobe/llmprobe/prober/client"
)

// TestDiscoveryDecodes decodes an entry with three mechanisms (kubernetes
// among them), relabelling, bounds and a template, resolves its relative
// file_sd path, builds a target from it and prints the config back.
func TestDiscoveryDecodes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "llmprobe.yml")
	src := `
discovery:
  - name: pods
    file_sd_configs:
      - files: [targets/*.json]
        refresh_interval: 10s
    static_configs:
      - targets: ["10.0.0.1:8000"]
        labels: {pool: a}
    kubernetes_sd_configs:
      - role: endpointslice
        api_server: http://127.0.0.1:1
        namespaces: {names: [llm]}
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app]
        regex: vllm
        action: keep
    max_targets: 7
    target:
      api: chat
      probes: [{name: p, rate: 0.5, seed: 9}, {name: q, rate: 1}]
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Discovery[0]
	if d.MaxTargets != 7 || len(d.ServiceDiscoveryConfigs) != 3 || len(d.RelabelConfigs) != 1 || d.Target.API != client.APIChat {
		t.Fatalf("decoded %+v", d)
	}
	var files []string
	for _, sc := range d.ServiceDiscoveryConfigs {
		switch sc := sc.(type) {
		case *file.SDConfig:
			files = sc.Files
		case *kubernetes.SDConfig:
			if sc.Role != kubernetes.RoleEndpointSlice {
				t.Errorf("role %v", sc.Role)
			}
		}
	}
	if len(files) != 1 || files[0] != filepath.Join(dir, "targets/*.json") {
		t.Errorf("file_sd files %v: want relative to the config file's directory", files)
	}
	tc, err := d.NewTarget("pods:10.0.0.1:8000", "http://10.0.0.1:8000", map[string]string{"pool": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if tc.Probes[0].Seed != 9 || tc.Probes[1].Seed != DeriveSeed("pods:10.0.0.1:8000", "q") || tc.Timeout != DefaultGlobalConfig.Timeout {
		t.Errorf("target %+v", tc)
	}
	if _, err := d.NewTarget("x", "http://h:1", map[string]string{"target": "a"}); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("reserved label: %v", err)
	}
	// The config prints and parses back.
	again, err := Parse([]byte(c.String()), path)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.String())
	}
	if len(again.Discovery[0].ServiceDiscoveryConfigs) != 3 {
		t.Errorf("round trip: %+v", again.Discovery[0])
	}
}
