//go:build e2e && unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// TestProbeEndpointEndToEnd runs the blackbox convention for real
// (issue 23 Deliver 4 and 5): a real Prometheus scrapes llmprobe's GET
// /probe for the simulator listed in a file_sd file, through the
// relabelling of the shipped deploy/examples/probe/prometheus.yml
// (__param_target, instance, __address__ = llmprobe), against an
// llmprobe.yml with no targets, only modules and probe_allowed_targets;
// Prometheus' query API must give probe_success 1, the status code and the
// backend the simulator names in x-served-by.
func TestProbeEndpointEndToEnd(t *testing.T) {
	promBin := lookPath(t, ".ci/e2e.sh", "prometheus", "prometheus")
	root, dir, bin := setUp(t, "")

	simAddr, serveAddr := startSim(t, dir, "simulate", bin, "--served-by", "pod-e2e"), testutil.FreeAddr(t)

	simURL := "http://" + simAddr
	cfgPath := filepath.Join(dir, "llmprobe.yml")
	writeFile(t, cfgPath, fmt.Sprintf(`modules:
  default:
    timeout: 10s
    attribution_headers: [x-served-by]
    workload:
      input_tokens: {dist: fixed, value: 32}
      output_tokens: {dist: fixed, value: 8}
probe_allowed_targets: [%q]
`, simURL))
	startUp(t, dir, "serve", bin, "http://"+serveAddr+"/-/ready", "serve", "--config.file", cfgPath, "--web.listen-address", serveAddr)

	// The shipped scrape job, its file_sd path, llmprobe's address and its
	// intervals set for the test; the relabelling is left as shipped.
	sdDir := filepath.Join(dir, "sd")
	if err := os.Mkdir(sdDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sdDir, "endpoints.yml"), fmt.Sprintf("- targets: [%q]\n  labels: {pool: e2e}\n", simURL))
	job, err := os.ReadFile(filepath.Join(root, "deploy", "examples", "probe", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	promText := string(job)
	for _, r := range [][2]string{
		{"/etc/prometheus/llm-endpoints/*.yml", filepath.Join(sdDir, "*.yml")},
		{"replacement: llmprobe:9741", "replacement: " + serveAddr},
		{"scrape_interval: 30s", "scrape_interval: 1s"},
		{"scrape_timeout: 25s", "scrape_timeout: 1s"},
	} {
		if !strings.Contains(promText, r[0]) {
			t.Fatalf("deploy/examples/probe/prometheus.yml no longer holds %q", r[0])
		}
		promText = strings.ReplaceAll(promText, r[0], r[1])
	}
	api := startPrometheus(t, dir, "prometheus", promBin, testutil.FreeAddr(t), "global:\n  evaluation_interval: 1s\n"+promText)

	sel := fmt.Sprintf(`{job="llmprobe-probe",instance=%q,pool="e2e"}`, simURL)
	api.waitValue(t, "up"+sel, valuesTimeout, equals(1))
	api.waitValue(t, "probe_success"+sel, valuesTimeout, equals(1))
	api.waitValue(t, "probe_http_status_code"+sel, valuesTimeout, equals(200))
	api.waitValue(t, "probe_output_tokens"+sel, valuesTimeout, equals(8))
	api.waitValue(t, "probe_ttft_seconds"+sel, valuesTimeout, positive)
	api.waitValue(t, fmt.Sprintf(`probe_backend_info{job="llmprobe-probe",instance=%q,backend="pod-e2e"}`, simURL),
		valuesTimeout, equals(1))
	if res := api.query(t, "probe_error_info"+sel); len(res) != 0 {
		t.Errorf("probe_error_info of a healthy target: %v", res)
	}
}
