package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/discovery/file"
	"github.com/prometheus/prometheus/discovery/kubernetes"
)

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
	if d.MaxTargets != 7 || len(d.ServiceDiscoveryConfigs) != 3 || len(d.RelabelConfigs) != 1 || d.Target.API != APIChat {
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

func TestDiscoveryInvalid(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unknown key", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    bogus: 1\n", "f.yml:4: discovery[0].bogus: unknown key"},
		{"unknown sd key", "discovery:\n  - name: a\n    file_sd_configs:\n      - files: [a.json]\n        nope: 1\n", "f.yml:5: discovery[0].file_sd_configs[0].nope: unknown key"},
		{"no mechanism", "discovery:\n  - name: a\n", "f.yml:2: discovery[0]: at least one of static_configs"},
		{"bad sd", "discovery:\n  - name: a\n    dns_sd_configs:\n      - names: [x]\n        type: TXT\n", "f.yml:4: discovery[0].dns_sd_configs[0]: invalid DNS-SD records type TXT"},
		{"base_url", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    target: {base_url: http://x}\n", "f.yml:4: discovery[0].target.base_url: not allowed"},
		{"max_targets", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    max_targets: 5000\n", "f.yml:4: discovery[0].max_targets: must be in 1..1000"},
		{"relabel", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    relabel_configs: [{action: replace}]\n", "f.yml:4: discovery[0].relabel_configs[0]: relabel configuration for replace action requires 'target_label' value"},
		{"dup", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n  - name: a\n    static_configs: [{targets: [h:1]}]\n", "f.yml:4: discovery[1].name: duplicate discovery name"},
		{"template rate", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    target:\n      probes: [{name: p, rate: -1}]\n", "f.yml:5: discovery[0].target.probes[0].rate: must be > 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "f.yml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant %s", err, c.want)
			}
		})
	}
}
