package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/config"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// klog's flush daemon and client-go's metrics are process-wide,
		// started on first use and never stopped.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}

// run parses yml (a config with discovery entries), applies its entries to
// a new Runner and returns it; the test's end stops it.
func run(t *testing.T, yml string) (*Runner, *prometheus.Registry) {
	t.Helper()
	return runWith(t, yml, Options{})
}

// fleetSD is the config of discovery "fleet" reading the http_sd at url,
// with more of its keys (YAML lines at the key indent, 8 spaces).
func fleetSD(url, more string) string {
	return "discovery:\n  - name: fleet\n    http_sd_configs:\n      - url: " + url + "\n" + more
}

// runWith is run with options (its Registerer is the registry returned).
func runWith(t *testing.T, yml string, o Options) (*Runner, *prometheus.Registry) {
	t.Helper()
	cfg, err := config.Parse([]byte(yml), "llmprobe.yml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	r := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.Stop() })
	r.Apply(ctx, cfg.Discovery)
	return r, reg
}

// names returns the discovered targets' names, sorted, and their labels
// by name.
func names(ts []Target) ([]string, map[string]map[string]string) {
	var out []string
	labels := map[string]map[string]string{}
	for _, t := range ts {
		out = append(out, t.Config.Name)
		labels[t.Config.Name] = t.Labels
	}
	slices.Sort(out)
	return out, labels
}

// waitTargets waits until the runner's targets are want (by name).
func waitTargets(t *testing.T, r *Runner, taken map[string]bool, want ...string) []Target {
	t.Helper()
	slices.Sort(want)
	var ts []Target
	testutil.Eventually(t, fmt.Sprintf("discovered targets %v", want), func() bool {
		ts = r.Targets(taken)
		got, _ := names(ts)
		return slices.Equal(got, want)
	})
	return ts
}

// TestStaticRelabelBounds: static_configs through relabelling (a drop, a
// label set, a target renamed), an invalid scheme, a collision with a
// static target's name and max_targets, each counted by reason.
func TestStaticRelabelBounds(t *testing.T) {
	r, _ := run(t, `
discovery:
  - name: pool
    static_configs:
      - targets: [a:1, b:2, c:3, d:4, e:5]
        labels: {zone: z1}
      - targets: [drop-me:1]
        labels: {drop: "yes"}
      - targets: [ftp:21]
        labels: {__scheme__: ftp}
      - targets: [gw:443]
        labels: {__scheme__: https, __path_prefix__: /llama/, __meta_x: hidden}
    relabel_configs:
      - source_labels: [drop]
        regex: "yes"
        action: drop
      - source_labels: [__address__]
        regex: "e:5"
        target_label: __target_name__
        replacement: static-twin
      - target_label: pool
        replacement: main
    max_targets: 4
    target:
      api: chat
`)
	taken := map[string]bool{"static-twin": true}
	ts := waitTargets(t, r, taken, "pool:a:1", "pool:b:2", "pool:c:3", "pool:d:4")
	// gw sorts after d: over max_targets (4) with a, b, c, d.
	_, labels := names(ts)
	wantLabels(t, "pool:a:1", labels["pool:a:1"], map[string]string{"zone": "z1", "pool": "main"})
	for _, tt := range ts {
		if tt.Config.API != client.APIChat || tt.Config.Probes[0].Seed != config.DeriveSeed(tt.Config.Name, "default") {
			t.Errorf("%s: not the template with its own seed: %+v", tt.Config.Name, tt.Config)
		}
	}
	for reason, want := range map[string]float64{DropRelabel: 1, DropInvalid: 1, DropCollision: 1, DropMaxTargets: 1} {
		if got := promtest.ToFloat64(r.metrics.dropped.WithLabelValues("pool", reason)); got != want {
			t.Errorf("dropped{reason=%s} = %v, want %v", reason, got, want)
		}
	}
	if got := promtest.ToFloat64(r.metrics.targets.WithLabelValues("pool")); got != 4 {
		t.Errorf("llmprobe_discovery_targets = %v, want 4", got)
	}
	for _, tt := range ts {
		if want := "http://" + strings.TrimPrefix(tt.Config.Name, "pool:"); tt.Config.BaseURL != want {
			t.Errorf("base URL %q, want %q", tt.Config.BaseURL, want)
		}
	}
}

// wantLabels requires the labels of target what to be want, no more.
func wantLabels(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	same := len(got) == len(want)
	for k, v := range got {
		same = same && want[k] == v
	}
	if !same {
		t.Errorf("labels of %s: %v, want %v", what, got, want)
	}
}

// TestURLAndNames: __scheme__, __path_prefix__ and a name label.
func TestURLAndNames(t *testing.T) {
	r, _ := run(t, `
discovery:
  - name: gws
    static_configs:
      - targets: [gw:443]
        labels: {__scheme__: https, __path_prefix__: /llama/, __meta_x: hidden, team: a}
      - targets: [other:80]
        labels: {__target_name__: "bad name"}
`)
	ts := waitTargets(t, r, nil, "gws:gw:443_llama")
	if got := ts[0].Config.BaseURL; got != "https://gw:443/llama" {
		t.Errorf("base URL %q, want https://gw:443/llama", got)
	}
	wantLabels(t, ts[0].Config.Name, ts[0].Labels, map[string]string{"team": "a"}) // __ labels dropped
	if got := promtest.ToFloat64(r.metrics.dropped.WithLabelValues("gws", DropInvalid)); got != 1 {
		t.Errorf("dropped{invalid} = %v, want 1 (a name outside the pattern)", got)
	}
}

// TestHTTPSD runs http_sd against an httptest server: the targets it
// lists, a change at the next refresh, then failures that are counted
// while the last good targets are kept.
func TestHTTPSD(t *testing.T) {
	var body atomic.Value
	var fail atomic.Bool
	body.Store(`[{"targets": ["10.0.0.1:8000", "10.0.0.2:8000"], "labels": {"replica_set": "rs1"}}]`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body.Load().(string))
	}))
	defer srv.Close()
	r, _ := run(t, fleetSD(srv.URL+"/targets", "        refresh_interval: 50ms\n"))
	ts := waitTargets(t, r, nil, "fleet:10.0.0.1:8000", "fleet:10.0.0.2:8000")
	wantLabels(t, ts[0].Config.Name, ts[0].Labels, map[string]string{"replica_set": "rs1"})
	body.Store(`[{"targets": ["10.0.0.2:8000", "10.0.0.3:8000"]}]`)
	waitTargets(t, r, nil, "fleet:10.0.0.2:8000", "fleet:10.0.0.3:8000")
	fail.Store(true)
	before := r.metrics.failures.value("fleet")
	testutil.Eventually(t, "http_sd failures counted", func() bool {
		return r.metrics.failures.value("fleet") >= before+2
	})
	if got, _ := names(r.Targets(nil)); !slices.Equal(got, []string{"fleet:10.0.0.2:8000", "fleet:10.0.0.3:8000"}) {
		t.Errorf("after failures: %v, want the last good targets", got)
	}
	if promtest.ToFloat64(r.metrics.updates.WithLabelValues("fleet")) < 2 {
		t.Error("updates not counted")
	}
}

// TestApplyReload: a reload whose entry keeps its mechanisms keeps them
// running (no new update: static_configs report once) and applies the new
// relabelling at once; changed mechanisms restart the entry; a removed
// entry stops, its series deleted.
func TestApplyReload(t *testing.T) {
	parse := func(yml string) []config.DiscoveryConfig {
		t.Helper()
		c, err := config.Parse([]byte(yml), "llmprobe.yml")
		if err != nil {
			t.Fatal(err)
		}
		return c.Discovery
	}
	const one = "discovery:\n  - name: e\n    static_configs: [{targets: [a:1, b:2]}]\n"
	reg := prometheus.NewRegistry()
	r := New(Options{Registerer: reg})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); r.Stop() }()
	r.Apply(ctx, parse(one))
	waitTargets(t, r, nil, "e:a:1", "e:b:2")
	updates := func() float64 { return promtest.ToFloat64(r.metrics.updates.WithLabelValues("e")) }
	if updates() != 1 {
		t.Fatalf("updates = %v, want 1", updates())
	}
	r.Apply(ctx, parse(one+"    relabel_configs: [{source_labels: [__address__], regex: 'a:1', action: drop}]\n"))
	if got, _ := names(r.Targets(nil)); !slices.Equal(got, []string{"e:b:2"}) {
		t.Errorf("after a relabelling change: %v, want [e:b:2] at once", got)
	}
	if updates() != 1 {
		t.Errorf("updates = %v: the unchanged mechanisms were restarted", updates())
	}
	r.Apply(ctx, parse("discovery:\n  - name: e\n    static_configs: [{targets: [c:3]}]\n"))
	waitTargets(t, r, nil, "e:c:3")
	if updates() != 2 {
		t.Errorf("updates = %v, want 2 (the changed entry restarted)", updates())
	}
	r.Apply(ctx, nil)
	if ts := r.Targets(nil); len(ts) != 0 {
		t.Errorf("after removing the entry: %v", ts)
	}
	if n, err := promtest.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("series left after removing the entry: %d %v", n, err)
	}
}

// TestGPUSourceLabels: relabelling from __meta labels sets a discovered
// target's GPU energy source (__gpu_metrics_url__, __gpu_selector__: the
// node's DCGM exporter and the pod's GPUs), overriding the template; an
// invalid one drops the target as invalid. A Kubernetes pod with a GPU
// source and no selector gets its own pod's GPUs (dcgm-exporter's pod and
// namespace labels).
func TestGPUSourceLabels(t *testing.T) {
	for _, tc := range []struct {
		name, yml, selector string
		invalid             float64 // targets dropped as invalid
	}{
		{"relabelled", `
      - targets: [10.0.0.7:8000]
        labels: {__meta_host_ip: 10.1.0.3, __meta_pod: vllm-0}
      - targets: [10.0.0.8:8000]
        labels: {__meta_host_ip: "", __meta_pod: "vllm-1\""}
    relabel_configs:
      - source_labels: [__meta_host_ip]
        regex: (.+)
        target_label: __gpu_metrics_url__
        replacement: http://$1:9400/metrics
      - source_labels: [__meta_pod]
        target_label: __gpu_selector__
        replacement: pod="$1"
`, `pod="vllm-0"`, 1},
		{"selector defaults to the pod", `
      - targets: [10.0.0.7:8000]
        labels: {__meta_kubernetes_pod_name: vllm-0, __meta_kubernetes_namespace: llm, __meta_host_ip: 10.1.0.3}
    relabel_configs:
      - source_labels: [__meta_host_ip]
        target_label: __gpu_metrics_url__
        replacement: http://$1:9400/metrics
`, `pod="vllm-0",namespace="llm"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := run(t, "discovery:\n  - name: pods\n    static_configs:"+tc.yml)
			ts := waitTargets(t, r, nil, "pods:10.0.0.7:8000")
			if c := ts[0].Config; c.GPUMetricsURL != "http://10.1.0.3:9400/metrics" || c.GPUSelector != tc.selector {
				t.Errorf("gpu source %q %q", c.GPUMetricsURL, c.GPUSelector)
			}
			if got := promtest.ToFloat64(r.metrics.dropped.WithLabelValues("pods", DropInvalid)); got != tc.invalid {
				t.Errorf("dropped{invalid} = %v, want %v (1: a selector that does not parse, without a URL)", got, tc.invalid)
			}
		})
	}
}
