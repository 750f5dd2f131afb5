package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmprobe/llmprobe/rules"
)

// chartDir is deploy/helm/llmprobe, seen from this package's directory.
const chartDir = "helm/llmprobe"

// chartNamespace is the namespace the tests install the chart into.
const chartNamespace = "monitoring"

// loadChart loads the chart from chartDir as `helm template` does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// renderChart renders the chart as `helm template llmprobe deploy/helm/llmprobe
// -n monitoring -f values.yaml` does, offline (no cluster, no lookup):
// values are validated against values.schema.json first; every rendered
// object is decoded strictly with Decode.
func renderChart(t *testing.T, release string, values map[string]any) ([]Object, error) {
	t.Helper()
	ch := loadChart(t)
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: release, Namespace: chartNamespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []Object
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, helpers
		}
		docs := releaseutil.SplitManifests(files[name])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			if strings.TrimSpace(stripComments(docs[k])) == "" {
				continue
			}
			o, err := Decode([]byte(docs[k]))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// stripComments drops the YAML comment lines of a rendered document (a
// disabled template renders only its comments).
func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// exampleValues reads a values file of deploy/helm/examples.
func exampleValues(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("helm", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// withValues sets v[key] = val and returns v.
func withValues(v map[string]any, key string, val any) map[string]any {
	v[key] = val
	return v
}

// chartCase is one rendering of the chart the tests check.
type chartCase struct {
	name   string
	values map[string]any
	// secret and configMap are the Secret and ConfigMap the user creates,
	// if the values name them.
	secret, configMap string
}

func chartCases(t *testing.T) []chartCase {
	t.Helper()
	return []chartCase{
		{name: "default values"},
		{name: "examples/sharded.yaml", values: exampleValues(t, "sharded.yaml")},
		{name: "examples/existing-secret.yaml", values: exampleValues(t, "existing-secret.yaml"), secret: "llmprobe-api-keys"},
		{name: "examples/created-secret.yaml", values: exampleValues(t, "created-secret.yaml")},
		{name: "examples/per-replica.yaml", values: exampleValues(t, "per-replica.yaml")},
		{name: "examples/kube-prometheus-vllm.yaml", values: exampleValues(t, "kube-prometheus-vllm.yaml")},
		// Sweeps kept on a claim: a PVC beside the Deployment, one claim
		// template per shard in the StatefulSet.
		{name: "persistence", values: map[string]any{"persistence": map[string]any{"enabled": true}}},
		// The operator's extras: a CA bundle, a dataset volume, egress
		// restricted to DNS, the API server and the targets' port.
		{name: "extras", configMap: "corp-ca", values: map[string]any{
			"caBundle":          map[string]any{"configMap": "corp-ca"},
			"extraVolumes":      []any{map[string]any{"name": "datasets", "emptyDir": map[string]any{"sizeLimit": "16Mi"}}},
			"extraVolumeMounts": []any{map[string]any{"name": "datasets", "mountPath": "/etc/llmprobe/datasets", "readOnly": true}},
			"networkPolicy":     map[string]any{"egress": map[string]any{"enabled": true, "ports": []any{map[string]any{"port": 8000}}}},
			"rbac":              map[string]any{"discovery": map[string]any{"create": true}},
		}},
		// What a kube-prometheus user would write by hand: the vLLM pods'
		// scrape with the join label, and /probe as a Probe object.
		{name: "operator objects", values: map[string]any{
			"serverMonitors": []any{map[string]any{"target": "vllm", "namespace": "vllm",
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "vllm"}}}},
			"probeMonitor": map[string]any{"enabled": true, "targets": []any{"http://vllm.vllm:8000"}},
		}},
		{name: "examples/sharded.yaml with persistence", values: withValues(exampleValues(t, "sharded.yaml"), "persistence", map[string]any{"enabled": true})},
	}
}

// TestChartExamplesAreCases: every values file of deploy/helm/examples is
// one of chartCases, so a new example is rendered and checked.
func TestChartExamplesAreCases(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("helm", "examples", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	cases := map[string]bool{}
	for _, c := range chartCases(t) {
		cases[c.name] = true
	}
	for _, p := range paths {
		if name := "examples/" + filepath.Base(p); !cases[name] {
			t.Errorf("%s is not among chartCases: add it", name)
		}
	}
}

// TestChartRendersWithTheOverlaysInvariants renders the chart for its
// default values and each example and applies the checks of the
// kustomizations (overlays_test.go, kustomize_test.go) to each rendering.
func TestChartRendersWithTheOverlaysInvariants(t *testing.T) {
	files := ruleFiles(t)
	for _, tc := range chartCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChart(t, "llmprobe", tc.values)
			if err != nil {
				t.Fatal(err)
			}
			d := "chart " + tc.name
			checkNamespace(t, d, chartNamespace, objs)
			if n := checkReferences(t, d, objs, func(ref string) bool {
				return (tc.secret != "" && ref == "Secret/"+tc.secret) || (tc.configMap != "" && ref == "ConfigMap/"+tc.configMap)
			}); n == 0 {
				t.Error("no reference checked")
			}
			if n := checkImagesTagged(t, d, objs); n == 0 {
				t.Error("no image checked")
			}
			pods := podsOf(objs)
			if len(pods) != 1 {
				t.Fatalf("%d workloads, want 1", len(pods))
			}
			checkPodLockedDown(t, d+": "+pods[0].Kind+" "+pods[0].Name, pods[0], objs)
			checkSelectorsAndPorts(t, d, objs)
			checkConfigs(t, d, objs)
			// With the AlertmanagerConfig every alert carries the namespace
			// label TestChartAlertmanagerConfig checks; the rest equals
			// the rule files.
			if amc, _ := tc.values["alertmanagerConfig"].(map[string]any); amc["enabled"] == true {
				for _, pr := range Of[monitoringv1.PrometheusRule](objs) {
					for _, g := range pr.Spec.Groups {
						for _, r := range g.Rules {
							delete(r.Labels, "namespace")
						}
					}
				}
			}
			checkPrometheusRule(t, d, objs, files, `job="llmprobe"`) // release llmprobe: its Service's name
			checkDashboards(t, d, objs, "llmprobe-dashboard-")
			checkShards(t, d, objs)
			largest, which := checkLastApplied(t, d, objs)
			t.Logf("%d objects; largest %s, %d bytes (budget %d)", len(objs), which, largest, lastAppliedBudget)
		})
	}
}

// TestChartIsTheBase checks what the chart's default rendering shares with
// the kustomize base: the same kinds of objects, and the pod's security
// context, probes, resources and args as the base Deployment's.
func TestChartIsTheBase(t *testing.T) {
	objs, err := renderChart(t, "llmprobe", nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := func(objs []Object) []string {
		var out []string
		for _, o := range objs {
			if !slices.Contains(out, o.Kind) {
				out = append(out, o.Kind)
			}
		}
		slices.Sort(out)
		return out
	}
	base := buildAll(t)["base"]
	if got, want := kinds(objs), kinds(base); !slices.Equal(got, want) {
		t.Errorf("chart renders kinds %v, the base %v", got, want)
	}
	deps, baseDeps := Of[appsv1.Deployment](objs), Of[appsv1.Deployment](base)
	if len(deps) != 1 || len(baseDeps) != 1 {
		t.Fatalf("%d Deployments in the chart, %d in the base; want 1 each", len(deps), len(baseDeps))
	}
	got, want := deps[0].Spec.Template.Spec, baseDeps[0].Spec.Template.Spec
	same := func(what string, a, b any) {
		t.Helper()
		ja, _ := yaml.Marshal(a)
		jb, _ := yaml.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s differs from the base's:\nchart:\n%s\nbase:\n%s", what, ja, jb)
		}
	}
	same("pod securityContext", got.SecurityContext, want.SecurityContext)
	same("automountServiceAccountToken", got.AutomountServiceAccountToken, want.AutomountServiceAccountToken)
	same("terminationGracePeriodSeconds", got.TerminationGracePeriodSeconds, want.TerminationGracePeriodSeconds)
	gc, wc := got.Containers[0], want.Containers[0]
	same("container securityContext", gc.SecurityContext, wc.SecurityContext)
	same("resources", gc.Resources, wc.Resources)
	same("livenessProbe", gc.LivenessProbe, wc.LivenessProbe)
	same("readinessProbe", gc.ReadinessProbe, wc.ReadinessProbe)
	same("ports", gc.Ports, wc.Ports)
	same("args", gc.Args, wc.Args)
	if gc.Image != wc.Image {
		t.Errorf("image %q, the base's %q", gc.Image, wc.Image)
	}
}

// TestChartSharded checks that shards: N renders a StatefulSet of N
// replicas each running --shard=$(POD_INDEX)/N, and shards: 1 a
// Deployment without --shard.
func TestChartSharded(t *testing.T) {
	objs, err := renderChart(t, "llmprobe", exampleValues(t, "sharded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Of[appsv1.Deployment](objs)); n != 0 {
		t.Errorf("sharded: %d Deployments, want none", n)
	}
	if n := checkShards(t, "sharded", objs); n != 1 {
		t.Fatalf("sharded: %d sharded StatefulSets, want 1", n)
	}
	sts := Of[appsv1.StatefulSet](objs)[0]
	if sts.Spec.ServiceName == "" || !slices.ContainsFunc(Of[corev1.Service](objs), func(s *corev1.Service) bool { return s.Name == sts.Spec.ServiceName }) {
		t.Errorf("StatefulSet serviceName %q is no Service of the chart", sts.Spec.ServiceName)
	}
	objs, err = renderChart(t, "llmprobe", map[string]any{"shards": 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Of[appsv1.Deployment](objs) {
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--shard") {
				t.Errorf("shards: 1: Deployment runs %s", a)
			}
		}
	}
}

// TestChartSecrets checks the three ways of API keys: none (no key
// volume), an existing Secret (mounted, required, not created) and keys
// from values (a Secret created and mounted).
func TestChartSecrets(t *testing.T) {
	keyVolume := func(objs []Object) *corev1.SecretVolumeSource {
		for _, w := range podsOf(objs) {
			for _, v := range w.Spec.Volumes {
				if v.Name == "api-keys" {
					return v.Secret
				}
			}
		}
		return nil
	}
	for _, tc := range []struct {
		name       string
		values     map[string]any
		wantSecret string // the mounted Secret; "" for no key volume
		created    bool
	}{
		{name: "none"},
		{name: "existing", values: exampleValues(t, "existing-secret.yaml"), wantSecret: "llmprobe-api-keys"},
		{name: "created", values: exampleValues(t, "created-secret.yaml"), wantSecret: "llmprobe-api-keys", created: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChart(t, "llmprobe", tc.values)
			if err != nil {
				t.Fatal(err)
			}
			v := keyVolume(objs)
			switch {
			case tc.wantSecret == "" && v != nil:
				t.Fatalf("a key volume of Secret %s without apiKeys", v.SecretName)
			case tc.wantSecret == "":
				return
			case v == nil:
				t.Fatal("no key volume")
			case v.SecretName != tc.wantSecret || (v.Optional != nil && *v.Optional):
				t.Fatalf("key volume of Secret %s (optional %v), want the required %s", v.SecretName, v.Optional, tc.wantSecret)
			}
			secrets := Of[corev1.Secret](objs)
			if created := len(secrets) == 1 && secrets[0].Name == tc.wantSecret; created != tc.created || len(secrets) > 1 {
				t.Fatalf("%d Secrets rendered, want the chart to create %s: %v", len(secrets), tc.wantSecret, tc.created)
			}
		})
	}
}

// TestChartToggles checks that serviceMonitor, prometheusRule, dashboards,
// networkPolicy and podDisruptionBudget each turn their objects off, and
// that a release name other than the chart's prefixes every name.
func TestChartToggles(t *testing.T) {
	count := func(objs []Object, kind, prefix string) int {
		n := 0
		for _, o := range objs {
			if o.Kind == kind && strings.HasPrefix(o.Name, prefix) {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct{ key, kind, prefix string }{
		{"serviceMonitor", "ServiceMonitor", ""},
		{"prometheusRule", "PrometheusRule", ""},
		{"dashboards", "ConfigMap", "llmprobe-dashboard-"},
		{"networkPolicy", "NetworkPolicy", ""},
		{"podDisruptionBudget", "PodDisruptionBudget", ""},
	} {
		on, err := renderChart(t, "llmprobe", nil)
		if err != nil {
			t.Fatal(err)
		}
		off, err := renderChart(t, "llmprobe", map[string]any{tc.key: map[string]any{"enabled": false}})
		if err != nil {
			t.Fatal(err)
		}
		if count(on, tc.kind, tc.prefix) == 0 || count(off, tc.kind, tc.prefix) != 0 {
			t.Errorf("%s.enabled: %d %s by default, %d when false; want some, then none",
				tc.key, count(on, tc.kind, tc.prefix), tc.kind, count(off, tc.kind, tc.prefix))
		}
	}
	objs, err := renderChart(t, "prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if !strings.HasPrefix(o.Name, "prod-llmprobe") {
			t.Errorf("release prod: %s %s is not named prod-llmprobe*", o.Kind, o.Name)
		}
	}
	checkReferences(t, "release prod", objs, func(string) bool { return false })
	checkSelectorsAndPorts(t, "release prod", objs)
	checkDashboards(t, "release prod", objs, "prod-llmprobe-dashboard-")
}

// TestChartSchemaRefusesBadValues checks that values.schema.json refuses
// what would break the pods or the invariants, before anything renders.
func TestChartSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"zero shards", map[string]any{"shards": 0}, "/shards"},
		{"too many shards", map[string]any{"shards": 1025}, "/shards"},
		{"shards as a string", map[string]any{"shards": "3"}, "/shards"},
		{"a typo", map[string]any{"serviceMonitr": map[string]any{"enabled": false}}, "serviceMonitr"},
		{"a target without base_url", map[string]any{"config": map[string]any{"targets": []any{map[string]any{"name": "x"}}}}, "base_url"},
		{"an unknown config key", map[string]any{"config": map[string]any{"target": []any{}}}, "target"},
		{"a PDB forbidding evictions", map[string]any{"podDisruptionBudget": map[string]any{"maxUnavailable": 0}}, "/podDisruptionBudget/maxUnavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, "llmprobe", tc.values)
			if err == nil || !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render error = %v, want a schema error naming %s", err, tc.want)
			}
		})
	}
}

// TestChartRefusesMistakesByName: the values that broke silently, or were
// refused with only "'not' failed", fail the render with a message naming
// the value, what was given and what to do (templates/_validate.tpl).
func TestChartRefusesMistakesByName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"latest tag", map[string]any{"image": map[string]any{"tag": "latest"}}, []string{"image.tag", `"latest"`, "pin"}},
		{"a tag in the repository", map[string]any{"image": map[string]any{"repository": "ghcr.io/x/llmprobe:v0.2.0"}}, []string{"image.repository", "v0.2.0", "image.tag"}},
		{"a digest in the repository", map[string]any{"image": map[string]any{"repository": "llmprobe@sha256:00"}}, []string{"image.repository", "image.digest"}},
		{"a CPU limit", map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "256Mi"}}}, []string{"resources.limits.cpu", "throttling"}},
		{"both Secret ways", map[string]any{"apiKeys": map[string]any{"existingSecret": "s", "keys": map[string]any{"k": "v"}}}, []string{"apiKeys", `"s"`, "keep one"}},
		{"a privileged port", map[string]any{"service": map[string]any{"port": 80}}, []string{"service.port 80", "1024"}},
		{"a seed Helm would round", map[string]any{"config": map[string]any{"targets": []any{map[string]any{"name": "v", "base_url": "http://v:8000",
			"probes": []any{map[string]any{"name": "p", "seed": float64(12345678901234567993)}}}}}}, []string{"config.targets[0].probes[0].seed", "configOverride"}},
		{"a timeout over the interval", map[string]any{"serviceMonitor": map[string]any{"interval": "30s", "scrapeTimeout": "1m"}}, []string{"serviceMonitor.scrapeTimeout 1m", "interval 30s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, "llmprobe", tc.values)
			if err == nil {
				t.Fatalf("rendered; want an error naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("render error %q does not name %q", err, w)
				}
			}
		})
	}
	// A registry with a port is a name, not a tag.
	if _, err := renderChart(t, "llmprobe", map[string]any{"image": map[string]any{"repository": "registry.local:5000/llmprobe"}}); err != nil {
		t.Errorf("a registry with a port: %v", err)
	}
	if _, err := renderChart(t, "llmprobe", map[string]any{"serviceMonitor": map[string]any{"interval": "1m", "scrapeTimeout": "60s"}}); err != nil {
		t.Errorf("a timeout equal to the interval: %v", err)
	}
}

// TestChartLints runs helm lint (helm's lint package, as `helm lint
// deploy/helm/llmprobe` does) for the default values and each example: no
// warning and no error (INFO messages, "icon is recommended", are logged:
// the project has no icon).
func TestChartLints(t *testing.T) {
	for _, tc := range chartCases(t) {
		l := lint.All(chartDir, tc.values, chartNamespace, false)
		for _, m := range l.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("%s: helm lint: %s", tc.name, m)
			} else {
				t.Logf("%s: helm lint: %s", tc.name, m)
			}
		}
	}
	// helm template (no cluster) checks Chart.yaml's kubeVersion against
	// its default Kubernetes version: a kubeVersion above it fails every
	// `helm template` without --kube-version.
	if kv := loadChart(t).Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, chartutil.DefaultCapabilities.KubeVersion.String()) {
		t.Errorf("Chart.yaml kubeVersion %q refuses helm template's default Kubernetes %s", kv, chartutil.DefaultCapabilities.KubeVersion.Version)
	}
	// The linter does fail a broken chart.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l := lint.All(dir, nil, chartNamespace, false); l.HighestSeverity < support.ErrorSev {
		t.Errorf("helm lint of a chart without a version: highest severity %d, want an error", l.HighestSeverity)
	}
}

// TestChartDiscoveryRBAC checks rbac.discovery: off (the default), no Role,
// RoleBinding or token; on (examples/per-replica.yaml), the read-only
// discovery Role bound to the pod's ServiceAccount, the token mounted, the
// ServiceMonitor with honorLabels, and the example's discovery entry the
// one of deploy/examples/per-replica.yml (API key aside).
func TestChartDiscoveryRBAC(t *testing.T) {
	objs, err := renderChart(t, "llmprobe", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Of[rbacv1.Role](objs)) + len(Of[rbacv1.RoleBinding](objs)); n != 0 {
		t.Errorf("default values render %d Roles and RoleBindings, want none", n)
	}
	values := exampleValues(t, "per-replica.yaml")
	objs, err = renderChart(t, "llmprobe", values)
	if err != nil {
		t.Fatal(err)
	}
	pods := podsOf(objs)
	if len(pods) != 1 {
		t.Fatalf("%d workloads, want 1", len(pods))
	}
	if tok := pods[0].Spec.AutomountServiceAccountToken; tok == nil || !*tok {
		t.Error("rbac.discovery.create: the pod does not mount its token")
	}
	if err := checkDiscoveryRBAC(objs, chartNamespace, pods[0].Spec.ServiceAccountName); err != nil {
		t.Error(err)
	}
	if n := checkRBACObjects(t, "chart per-replica", objs); n != 1 {
		t.Errorf("%d RoleBindings, want 1", n)
	}
	for _, sm := range Of[monitoringv1.ServiceMonitor](objs) {
		if len(sm.Spec.Endpoints) != 1 || !sm.Spec.Endpoints[0].HonorLabels {
			t.Errorf("ServiceMonitor %s: want honorLabels: true, got %+v", sm.Name, sm.Spec.Endpoints)
		}
	}
	cfg, err := yaml.Marshal(values["config"])
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("examples", "per-replica.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := loadDiscovery(t, "helm/examples/per-replica.yaml", cfg), loadDiscovery(t, "examples/per-replica.yml", example); !reflect.DeepEqual(got, want) {
		t.Errorf("the discovery entries of helm/examples/per-replica.yaml and examples/per-replica.yml differ:\n%v\n%v", got, want)
	}
}

// TestChartLLMProbeDownMatchesReleaseJob renders the chart for releases of
// several names and evaluates the PrometheusRule's LLMProbeDown expression
// (PromQL, in-process) over `up` series: it selects exactly the job the
// chart's ServiceMonitor gives llmprobe (the Service's name) at 0, and not
// another job's (issue 37: a release named "probes" was never watched).
func TestChartLLMProbeDownMatchesReleaseJob(t *testing.T) {
	for _, release := range []string{"llmprobe", "probes", "llmprobe-prod"} {
		t.Run(release, func(t *testing.T) {
			objs, err := renderChart(t, release, nil)
			if err != nil {
				t.Fatal(err)
			}
			svcs := Of[corev1.Service](objs)
			if len(svcs) != 1 {
				t.Fatalf("%d Services, want 1", len(svcs))
			}
			job := svcs[0].Name // the Operator's job label: the Service's name (no jobLabel)
			expr := ""
			for _, pr := range Of[monitoringv1.PrometheusRule](objs) {
				for _, g := range pr.Spec.Groups {
					for _, r := range g.Rules {
						if r.Alert == "LLMProbeDown" {
							expr = r.Expr.String()
						}
					}
				}
			}
			if expr == "" {
				t.Fatal("no LLMProbeDown in the PrometheusRule")
			}
			if !selectsUp(t, expr, job) || selectsUp(t, expr, "other") || selectsUp(t, expr, job+"-other") {
				t.Errorf("release %s: LLMProbeDown %q does not select exactly job %q, the job of the chart's ServiceMonitor", release, expr, job)
			}
		})
	}
	// An explicit selector wins.
	objs, err := renderChart(t, "probes", map[string]any{"prometheusRule": map[string]any{"llmprobeSelector": `job=~"llmprobe.*"`}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pr := range Of[monitoringv1.PrometheusRule](objs) {
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				if r.Alert == "LLMProbeDown" {
					found = strings.Contains(r.Expr.String(), `up{job=~"llmprobe.*"}`)
				}
			}
		}
	}
	if !found {
		t.Error("prometheusRule.llmprobeSelector does not reach LLMProbeDown")
	}
}

// selectsUp reports whether expr's `up` selector matches a series of job.
func selectsUp(t *testing.T, expr, job string) bool {
	t.Helper()
	e, err := rules.NewParser().ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	series := labels.FromStrings("__name__", "up", "job", job, "instance", "a:9741")
	found, all := false, true
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || vs.Name != "up" {
			return nil
		}
		found = true
		for _, m := range vs.LabelMatchers {
			if !m.Matches(series.Get(m.Name)) {
				all = false
			}
		}
		return nil
	})
	return found && all
}

// TestChartEgressPolicy: with networkPolicy.egress on, the policy lists
// Egress and allows DNS (UDP and TCP 53), the API server's ports with
// Kubernetes discovery, and the targets' port; off, egress stays open.
func TestChartEgressPolicy(t *testing.T) {
	var extras chartCase
	for _, tc := range chartCases(t) {
		if tc.name == "extras" {
			extras = tc
		}
	}
	objs, err := renderChart(t, "llmprobe", extras.values)
	if err != nil {
		t.Fatal(err)
	}
	nps := Of[networkingv1.NetworkPolicy](objs)
	if len(nps) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(nps))
	}
	np := nps[0]
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Fatalf("policyTypes %v lack Egress", np.Spec.PolicyTypes)
	}
	ports := map[string]bool{}
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			proto := corev1.ProtocolTCP // Kubernetes' default
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			ports[fmt.Sprintf("%s/%s", proto, p.Port.String())] = true
		}
	}
	for _, want := range []string{"UDP/53", "TCP/53", "TCP/443", "TCP/6443", "TCP/8000"} {
		if !ports[want] {
			t.Errorf("egress does not allow %s: %v", want, ports)
		}
	}
	objs, err = renderChart(t, "llmprobe", nil)
	if err != nil {
		t.Fatal(err)
	}
	if np := Of[networkingv1.NetworkPolicy](objs)[0]; slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Errorf("default values restrict egress: %v", np.Spec.PolicyTypes)
	}
}

// TestChartOperatorObjects: serverMonitors gives a PodMonitor whose
// relabeling sets target=<the llmprobe target>, the label the rules join
// on; probeMonitor a Probe pointing at the release's Service and /probe;
// a serverMonitors entry naming no configured target is refused by name.
func TestChartOperatorObjects(t *testing.T) {
	var tc chartCase
	for _, c := range chartCases(t) {
		if c.name == "operator objects" {
			tc = c
		}
	}
	objs, err := renderChart(t, "probes", tc.values)
	if err != nil {
		t.Fatal(err)
	}
	pms := Of[monitoringv1.PodMonitor](objs)
	if len(pms) != 1 {
		t.Fatalf("%d PodMonitors, want 1", len(pms))
	}
	pm := pms[0]
	if got := pm.Spec.NamespaceSelector.MatchNames; !slices.Equal(got, []string{"vllm"}) {
		t.Errorf("PodMonitor namespaces %v, want [vllm]", got)
	}
	ep := pm.Spec.PodMetricsEndpoints
	if len(ep) != 1 || len(ep[0].RelabelConfigs) != 1 || ep[0].RelabelConfigs[0].TargetLabel != "target" ||
		ep[0].RelabelConfigs[0].Replacement == nil || *ep[0].RelabelConfigs[0].Replacement != "vllm" {
		t.Errorf("PodMonitor endpoints %+v: want one relabeling setting target=vllm", ep)
	}
	probes := Of[monitoringv1.Probe](objs)
	if len(probes) != 1 {
		t.Fatalf("%d Probes, want 1", len(probes))
	}
	svc := Of[corev1.Service](objs)[0]
	pr := probes[0].Spec.ProberSpec
	if want := fmt.Sprintf("%s.%s.svc:%d", svc.Name, chartNamespace, svc.Spec.Ports[0].Port); pr.URL != want || pr.Path != "/probe" {
		t.Errorf("Probe prober %s%s, want %s/probe", pr.URL, pr.Path, want)
	}
	if st := probes[0].Spec.Targets.StaticConfig; st == nil || !slices.Equal(st.Targets, []string{"http://vllm.vllm:8000"}) {
		t.Errorf("Probe targets %+v", probes[0].Spec.Targets)
	}
	_, err = renderChart(t, "probes", map[string]any{"serverMonitors": []any{map[string]any{"target": "nope",
		"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}}}})
	if err == nil || !strings.Contains(err.Error(), `serverMonitors[0].target "nope"`) {
		t.Errorf("a server monitor of an unknown target: %v, want an error naming it", err)
	}
}
