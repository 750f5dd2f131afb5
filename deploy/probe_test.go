package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/config"
)

// TestProbeExample holds the shipped /probe example together: the scrape
// job's relabelling turns each file_sd entry into llmprobe's
// /probe?target=<entry>&module=default with the entry as instance, and the
// llmprobe.yml beside it loads and allows every entry of the list.
func TestProbeExample(t *testing.T) {
	dir := filepath.Join("examples", "probe")
	data, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			JobName        string              `yaml:"job_name"`
			MetricsPath    string              `yaml:"metrics_path"`
			Params         map[string][]string `yaml:"params"`
			ScrapeInterval string              `yaml:"scrape_interval"`
			ScrapeTimeout  string              `yaml:"scrape_timeout"`
			FileSDConfigs  []struct {
				Files []string `yaml:"files"`
			} `yaml:"file_sd_configs"`
			RelabelConfigs []*relabel.Config `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&prom); err != nil {
		t.Fatal(err)
	}
	if len(prom.ScrapeConfigs) != 1 {
		t.Fatalf("%d scrape configs, want 1", len(prom.ScrapeConfigs))
	}
	job := prom.ScrapeConfigs[0]
	if job.MetricsPath != "/probe" || len(job.Params["module"]) != 1 || job.Params["module"][0] != config.DefaultModuleName {
		t.Errorf("job %s: metrics_path %q params %v, want /probe with module=default", job.JobName, job.MetricsPath, job.Params)
	}
	for _, rc := range job.RelabelConfigs {
		if err := rc.Validate(model.UTF8Validation); err != nil {
			t.Fatalf("relabel config: %v", err)
		}
	}

	var groups []struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "llm-endpoints.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &groups); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, "llmprobe.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Module(config.DefaultModuleName); !ok {
		t.Error("llmprobe.yml: no default module")
	}
	n := 0
	for _, g := range groups {
		for _, target := range g.Targets {
			n++
			lb := labels.NewBuilder(labels.FromStrings("__address__", target, "job", job.JobName))
			keep := relabel.ProcessBuilder(lb, job.RelabelConfigs...)
			lset := lb.Labels()
			if !keep {
				t.Fatalf("%s: dropped by the relabelling", target)
			}
			for name, want := range map[string]string{"__param_target": target, "instance": target, "__address__": "llmprobe:9741"} {
				if got := lset.Get(name); got != want {
					t.Errorf("%s: %s = %q, want %q", target, name, got, want)
				}
			}
			if !cfg.ProbeAllowed(target) {
				t.Errorf("%s: listed for the scrape job but not in llmprobe.yml's probe_allowed_targets", target)
			}
		}
	}
	if n == 0 {
		t.Error("llm-endpoints.yml lists no target")
	}
}
