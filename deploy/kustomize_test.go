package deploy

import (
	"github.com/alecthomas/units"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	lweb "github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/rules"
	"github.com/llmprobe/llmprobe/rules/rulestest"
)

// kubeRoot is deploy/kubernetes, seen from this package's directory.
const kubeRoot = "kubernetes"

// regenerate is what to run when the generated monitoring files are stale.
const regenerate = "run `go run ./dashboards/gen` from the repository root"

// builds builds every kustomization under kubeRoot once per test binary.
var builds = map[string][]Object{}

func buildAll(t *testing.T) map[string][]Object {
	t.Helper()
	if len(builds) > 0 {
		return builds
	}
	dirs, err := Kustomizations(kubeRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"base", "monitoring", "overlays/simulator", "overlays/vllm"} {
		if !slices.Contains(dirs, want) {
			t.Fatalf("kustomizations under %s = %v, want %s among them", kubeRoot, dirs, want)
		}
	}
	for _, d := range dirs {
		objs, err := Build(filepath.Join(kubeRoot, d))
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Fatalf("%s: built no objects", d)
		}
		builds[d] = objs
	}
	return builds
}

// checkEach runs check on the objects of every directory of byDir and fails
// the test with none when the checks counted nothing.
func checkEach(t *testing.T, byDir map[string][]Object, check func(t *testing.T, dir string, objs []Object) int, none string) {
	t.Helper()
	n := 0
	for d, objs := range byDir {
		n += check(t, d, objs)
	}
	if n == 0 {
		t.Fatal(none)
	}
}

// workloads returns the app kustomizations (every one but monitoring).
func workloads(t *testing.T) map[string][]Object {
	t.Helper()
	out := map[string][]Object{}
	for d, objs := range buildAll(t) {
		if d != "monitoring" {
			out[d] = objs
		}
	}
	return out
}

func TestEveryKustomizationBuildsAndDecodesStrictly(t *testing.T) {
	for d, objs := range buildAll(t) {
		for _, o := range objs {
			if o.Name == "" {
				t.Errorf("%s: %s %s without a name", d, o.APIVersion, o.Kind)
			}
		}
	}
}

func TestDecodeRejectsTypos(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{
			name:     "unknown field",
			manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 1}\n",
			want:     `unknown field "spec.replica"`,
		},
		{
			name:     "field in the wrong case",
			manifest: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nAutomountServiceAccountToken: false\n",
			want:     `unknown field "AutomountServiceAccountToken"`,
		},
		{
			name:     "unknown field of a ServiceMonitor",
			manifest: "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {endpoints: [{port: http, pth: /metrics}], selector: {}}\n",
			want:     `unknown field "spec.endpoints[0].pth"`,
		},
		{
			name:     "unknown kind",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
			want:     `no Go type for apiVersion "v1" kind "Pod"`,
		},
		{
			name:     "wrong type",
			manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: one}\n",
			want:     "cannot unmarshal string",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.manifest))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	o, err := Decode([]byte("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x, namespace: ns}\nautomountServiceAccountToken: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sa, ok := o.Value.(*corev1.ServiceAccount); !ok || o.Name != "x" || o.Namespace != "ns" || sa.AutomountServiceAccountToken == nil {
		t.Fatalf("Decode() = %+v", o)
	}
}

// TestBuildFailsOnATypo shows that a typo in a kustomization's resource
// fails Build, not only Decode.
func TestBuildFailsOnATypo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kustomization.yaml", "resources: [sa.yaml]\n")
	write("sa.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nautomountServiceAcountToken: false\n")
	if _, err := Build(dir); err == nil || !strings.Contains(err.Error(), `unknown field "automountServiceAcountToken"`) {
		t.Fatalf("Build() error = %v, want the unknown field", err)
	}
}

func TestBaseHasEveryObject(t *testing.T) {
	objs := buildAll(t)["base"]
	kinds := map[string][]string{}
	for _, o := range objs {
		kinds[o.Kind] = append(kinds[o.Kind], o.Name)
	}
	for _, want := range []string{"ServiceAccount", "ConfigMap", "Deployment", "Service", "ServiceMonitor",
		"PrometheusRule", "NetworkPolicy", "PodDisruptionBudget"} {
		if len(kinds[want]) == 0 {
			t.Errorf("base has no %s; it has %v", want, kinds)
		}
	}
	n := 0
	for _, cm := range Of[corev1.ConfigMap](objs) {
		if strings.HasPrefix(cm.Name, "llmprobe-dashboard-") && cm.Labels["grafana_dashboard"] == "1" {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("base has no dashboard ConfigMap llmprobe-dashboard-* labelled grafana_dashboard: \"1\" for Grafana's sidecar")
	}
}

// llmprobeContainer reports whether c runs the llmprobe image.
func llmprobeContainer(c corev1.Container) bool {
	name, _, _ := strings.Cut(c.Image, ":")
	return name == "llmprobe" || strings.HasSuffix(name, "/llmprobe")
}

// TestWorkloadsAreLockedDown checks the pod of every workload kind
// (Deployment, StatefulSet, Job, CronJob): non-root, RuntimeDefault seccomp,
// no service account token, read-only root, no privilege, all capabilities
// dropped, requests and a memory limit but no CPU limit, and HTTP probes on
// named ports for the long-running kinds.
func TestWorkloadsAreLockedDown(t *testing.T) {
	for d, objs := range workloads(t) {
		pods := podsOf(objs)
		if len(pods) == 0 {
			t.Errorf("%s: no workload", d)
		}
		for _, w := range pods {
			checkPodLockedDown(t, d+": "+w.Kind+" "+w.Name, w, objs)
		}
	}
}

// checkPodLockedDown checks one pod template (see TestWorkloadsAreLockedDown);
// objs is the output it belongs to: a pod may mount its service account token
// only when that account is bound to a read-only discovery Role of objs
// (checkDiscoveryRBAC).
func checkPodLockedDown(t *testing.T, where string, w workload, objs []Object) {
	t.Helper()
	pod := w.Spec
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s: pod must run as a non-root numeric user: %+v", where, sc)
	}
	if sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: seccompProfile must be RuntimeDefault", where)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		if err := checkDiscoveryRBAC(objs, w.Namespace, pod.ServiceAccountName); err != nil {
			t.Errorf("%s: automountServiceAccountToken must be false unless the service account only reads what discovery needs "+
				"(llmprobe calls the API server for kubernetes_sd_configs alone): %v", where, err)
		}
	}
	if len(pod.Containers) == 0 {
		t.Errorf("%s: no containers", where)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		where := where + " container " + c.Name
		if !llmprobeContainer(c) {
			t.Errorf("%s: image %q is not llmprobe's", where, c.Image)
		}
		checkContainerLockedDown(t, where, c)
		if !w.LongRunning() {
			continue
		}
		checkSweepsWritable(t, where, w, c)
		for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s probe", where, name)
				continue
			}
			if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.HTTPGet.Port.String() }) {
				t.Errorf("%s: %s probe port %q is not a named container port", where, name, p.HTTPGet.Port.String())
			}
		}
	}
}

func checkContainerLockedDown(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	csc := c.SecurityContext
	switch {
	case csc == nil:
		t.Errorf("%s: no securityContext", where)
		return
	case csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation must be false", where)
	case csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem:
		t.Errorf("%s: readOnlyRootFilesystem must be true", where)
	case csc.Privileged != nil && *csc.Privileged:
		t.Errorf("%s: privileged", where)
	case csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) > 0:
		t.Errorf("%s: capabilities must drop ALL and add none: %+v", where, csc.Capabilities)
	}
	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
		t.Errorf("%s: want CPU and memory requests and a memory limit: %+v", where, r)
	}
	if !r.Limits.Cpu().IsZero() {
		t.Errorf("%s: no CPU limit: CFS throttling would add pauses to the measured latencies", where)
	}
}

// podTemplates returns the pod template labels of every workload in objs,
// by workload name.
func podTemplates(objs []Object) map[string]labels.Set {
	out := map[string]labels.Set{}
	for _, d := range Of[appsv1.Deployment](objs) {
		out[d.Name] = d.Spec.Template.Labels
	}
	for _, s := range Of[appsv1.StatefulSet](objs) {
		out[s.Name] = s.Spec.Template.Labels
	}
	return out
}

func selected(t *testing.T, where string, sel *metav1.LabelSelector, pods map[string]labels.Set) []string {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var out []string
	for name, l := range pods {
		if s.Matches(l) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func containerPorts(objs []Object, workload string) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, d := range Of[appsv1.Deployment](objs) {
		if d.Name == workload {
			for _, c := range d.Spec.Template.Spec.Containers {
				out = append(out, c.Ports...)
			}
		}
	}
	for _, s := range Of[appsv1.StatefulSet](objs) {
		if s.Name == workload {
			for _, c := range s.Spec.Template.Spec.Containers {
				out = append(out, c.Ports...)
			}
		}
	}
	return out
}

// TestSelectorsAndPortsMatch checks that every Service, ServiceMonitor,
// PodDisruptionBudget and NetworkPolicy selects exactly one workload of its
// kustomization and names ports that exist.
func TestSelectorsAndPortsMatch(t *testing.T) {
	for d, objs := range workloads(t) {
		checkSelectorsAndPorts(t, d, objs)
	}
}

// checkSelectorsAndPorts checks the selectors and ports of objs (see
// TestSelectorsAndPortsMatch).
func checkSelectorsAndPorts(t *testing.T, d string, objs []Object) {
	t.Helper()
	pods := podTemplates(objs)
	for _, dep := range Of[appsv1.Deployment](objs) {
		if got := selected(t, d, dep.Spec.Selector, map[string]labels.Set{dep.Name: dep.Spec.Template.Labels}); len(got) != 1 {
			t.Errorf("%s: Deployment %s: its selector does not match its pod template", d, dep.Name)
		}
	}
	svcWorkload := map[string]string{}
	for _, svc := range Of[corev1.Service](objs) {
		got := selected(t, d, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, pods)
		if len(got) != 1 {
			t.Errorf("%s: Service %s selects %v, want exactly one workload", d, svc.Name, got)
			continue
		}
		svcWorkload[svc.Name] = got[0]
		for _, p := range svc.Spec.Ports {
			if !slices.ContainsFunc(containerPorts(objs, got[0]), func(cp corev1.ContainerPort) bool {
				return cp.Name == p.TargetPort.String() || cp.ContainerPort == p.TargetPort.IntVal
			}) {
				t.Errorf("%s: Service %s port %s targets %q, not a port of %s", d, svc.Name, p.Name, p.TargetPort.String(), got[0])
			}
		}
	}
	for _, sm := range Of[monitoringv1.ServiceMonitor](objs) {
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		var svcs []*corev1.Service
		for _, svc := range Of[corev1.Service](objs) {
			if sel.Matches(labels.Set(svc.Labels)) {
				svcs = append(svcs, svc)
			}
		}
		if len(svcs) != 1 {
			t.Errorf("%s: ServiceMonitor %s selects %d Services, want 1", d, sm.Name, len(svcs))
			continue
		}
		for _, ep := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(svcs[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				t.Errorf("%s: ServiceMonitor %s scrapes port %q, not a port of Service %s", d, sm.Name, ep.Port, svcs[0].Name)
			}
		}
	}
	for _, pdb := range Of[policyv1.PodDisruptionBudget](objs) {
		if got := selected(t, d, pdb.Spec.Selector, pods); len(got) != 1 {
			t.Errorf("%s: PodDisruptionBudget %s selects %v, want exactly one workload", d, pdb.Name, got)
		}
		// A budget that forbids every eviction of a single replica blocks
		// node drains.
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() < 1 || pdb.Spec.MinAvailable != nil {
			t.Errorf("%s: PodDisruptionBudget %s: want maxUnavailable >= 1 and no minAvailable", d, pdb.Name)
		}
	}
	for _, np := range Of[networkingv1.NetworkPolicy](objs) {
		got := selected(t, d, &np.Spec.PodSelector, pods)
		if len(got) != 1 {
			t.Errorf("%s: NetworkPolicy %s selects %v, want exactly one workload", d, np.Name, got)
			continue
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port == nil || !slices.ContainsFunc(containerPorts(objs, got[0]), func(cp corev1.ContainerPort) bool {
					return cp.Name == p.Port.String() || cp.ContainerPort == p.Port.IntVal
				}) {
					t.Errorf("%s: NetworkPolicy %s opens port %v, not a port of %s", d, np.Name, p.Port, got[0])
				}
			}
		}
	}
}

// TestPathsAreServed checks every HTTP path the manifests probe or scrape
// against the handlers they reach: llmprobe's web handler for `serve`
// containers, the simulator for `simulate` ones.
func TestPathsAreServed(t *testing.T) {
	ready := true
	daemon := httptest.NewServer(lweb.NewHandler(lweb.Options{
		Gatherer: prometheus.NewRegistry(),
		Ready:    func() bool { return ready },
	}))
	defer daemon.Close()
	simURL, _ := simtest.Start(t, simulator.DefaultConfig())
	get := func(base, path string) int {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	checked := 0
	for d, objs := range workloads(t) {
		// base URL by Service name, from the workload behind it.
		baseOf := map[string]string{}
		for _, dep := range Of[appsv1.Deployment](objs) {
			for _, c := range dep.Spec.Template.Spec.Containers {
				if len(c.Args) == 0 {
					t.Errorf("%s: %s: container %s has no args", d, dep.Name, c.Name)
					continue
				}
				base := map[string]string{"serve": daemon.URL, "simulate": simURL}[c.Args[0]]
				if base == "" {
					t.Errorf("%s: %s: container %s runs %q, want serve or simulate", d, dep.Name, c.Name, c.Args[0])
					continue
				}
				for _, svc := range Of[corev1.Service](objs) {
					if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
						baseOf[svc.Name] = base
					}
				}
				for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
					if p != nil && p.HTTPGet != nil {
						if code := get(base, p.HTTPGet.Path); code != http.StatusOK {
							t.Errorf("%s: %s: probe path %s answers %d, want 200", d, dep.Name, p.HTTPGet.Path, code)
						}
						checked++
					}
				}
			}
		}
		for _, sm := range Of[monitoringv1.ServiceMonitor](objs) {
			for svcName, base := range baseOf {
				var svc *corev1.Service
				for _, s := range Of[corev1.Service](objs) {
					if s.Name == svcName {
						svc = s
					}
				}
				sel, _ := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
				if !sel.Matches(labels.Set(svc.Labels)) {
					continue
				}
				for _, ep := range sm.Spec.Endpoints {
					if code := get(base, ep.Path); code != http.StatusOK {
						t.Errorf("%s: ServiceMonitor %s path %s answers %d, want 200", d, sm.Name, ep.Path, code)
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no path checked")
	}
	// The readiness path really reflects readiness.
	ready = false
	if code := get(daemon.URL, "/-/ready"); code != http.StatusServiceUnavailable {
		t.Fatalf("/-/ready when not ready = %d, want 503", code)
	}
}

// keyFile matches the api_key_file values of a configuration.
var keyFile = regexp.MustCompile(`(?m)^\s*api_key_file:\s*(\S+)`)

// TestConfigsPassCheckConfig loads the llmprobe.yml of every kustomization
// as `llmprobe check-config` does. API key files must lie in a Secret volume
// of a workload; the test stands a file in for each.
func TestConfigsPassCheckConfig(t *testing.T) {
	for d, objs := range workloads(t) {
		checkConfigs(t, d, objs)
	}
}

// checkConfigs loads the one llmprobe.yml of objs as check-config does
// (see TestConfigsPassCheckConfig).
func checkConfigs(t *testing.T, d string, objs []Object) {
	t.Helper()
	var secretMounts []string
	for _, w := range podsOf(objs) {
		for _, c := range w.Spec.Containers {
			for _, m := range c.VolumeMounts {
				for _, v := range w.Spec.Volumes {
					if v.Name == m.Name && v.Secret != nil {
						secretMounts = append(secretMounts, strings.TrimSuffix(m.MountPath, "/")+"/")
					}
				}
			}
		}
	}
	n := 0
	for _, cm := range Of[corev1.ConfigMap](objs) {
		data, ok := cm.Data["llmprobe.yml"]
		if !ok {
			continue
		}
		n++
		dir := t.TempDir()
		for _, m := range keyFile.FindAllStringSubmatch(data, -1) {
			i := slices.IndexFunc(secretMounts, func(p string) bool { return strings.HasPrefix(m[1], p) })
			if i < 0 {
				t.Errorf("%s: ConfigMap %s: api_key_file %s is not in a Secret volume (mounted at %v)", d, cm.Name, m[1], secretMounts)
				continue
			}
			p := filepath.Join(dir, strings.TrimPrefix(m[1], secretMounts[i]))
			if err := os.WriteFile(p, []byte("test-key\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range secretMounts {
			data = strings.ReplaceAll(data, p, dir+"/")
		}
		if _, err := config.Parse([]byte(data), d+"/llmprobe.yml"); err != nil {
			t.Errorf("%s: ConfigMap %s: check-config: %v", d, cm.Name, err)
		}
	}
	if n != 1 {
		t.Errorf("%s: %d ConfigMaps with llmprobe.yml, want 1", d, n)
	}
}

func ruleFiles(t *testing.T) []rules.File {
	t.Helper()
	files, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestPrometheusRuleIsTheRuleFiles checks that every kustomization's
// PrometheusRule holds exactly the groups and rules of rules/*.yml (the one
// source; the PrometheusRule is generated from it).
func TestPrometheusRuleIsTheRuleFiles(t *testing.T) {
	files := ruleFiles(t)
	for d, objs := range buildAll(t) {
		checkPrometheusRule(t, d, objs, files, "")
	}
}

// checkPrometheusRule checks that objs hold one PrometheusRule with exactly
// the rules of files (see TestPrometheusRuleIsTheRuleFiles).
//
// upSelector, when set, is the selector the rendering gives LLMProbeDown's
// `up` in place of the rule file's (the chart's release job).
func checkPrometheusRule(t *testing.T, d string, objs []Object, files []rules.File, upSelector string) {
	t.Helper()
	prs := Of[monitoringv1.PrometheusRule](objs)
	if len(prs) != 1 {
		t.Fatalf("%s: %d PrometheusRules, want 1", d, len(prs))
	}
	var want []string
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				expr := r.Expr
				if upSelector != "" && r.Alert == "LLMProbeDown" {
					expr = strings.ReplaceAll(expr, `up{job=~"llmprobe"}`, "up{"+upSelector+"}")
				}
				want = append(want, ruleKey(g.Name, r.Record, r.Alert, expr, r.For.String(), r.Labels, r.Annotations))
			}
		}
	}
	var got []string
	for _, g := range prs[0].Spec.Groups {
		for _, r := range g.Rules {
			f := ""
			if r.For != nil {
				dur, err := model.ParseDuration(string(*r.For))
				if err != nil {
					t.Fatalf("%s: rule %s%s: for: %v", d, r.Record, r.Alert, err)
				}
				f = dur.String()
			}
			got = append(got, ruleKey(g.Name, r.Record, r.Alert, r.Expr.String(), f, r.Labels, r.Annotations))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: the PrometheusRule differs from rules/*.yml (%d rules, want %d): %s", d, len(got), len(want), regenerate)
	}
}

func ruleKey(group, record, alert, expr, forDur string, l, a map[string]string) string {
	if forDur == "0s" {
		forDur = ""
	}
	return strings.Join([]string{group, record, alert, strings.TrimSpace(expr), forDur,
		labels.Set(l).String(), labels.Set(a).String()}, "\x00")
}

// TestPrometheusRuleReadsKnownMetrics checks every metric name the
// PrometheusRule's expressions read against llmprobe's registry, vLLM's
// documented metrics and the recording rules.
func TestPrometheusRuleReadsKnownMetrics(t *testing.T) {
	files := ruleFiles(t)
	cat, err := rulestest.Catalog(files)
	if err != nil {
		t.Fatal(err)
	}
	p := rules.NewParser()
	pr := Of[monitoringv1.PrometheusRule](buildAll(t)["base"])[0]
	n := 0
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			names, err := rules.MetricNames(p, r.Expr.String())
			if err != nil {
				t.Errorf("%s%s: %v", r.Record, r.Alert, err)
			}
			for _, name := range names {
				n++
				if _, ok := cat.Source(name); !ok {
					t.Errorf("%s%s reads %s, which nothing exports", r.Record, r.Alert, name)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no metric name checked")
	}
}

// TestDashboardsConfigMapIsTheDashboards checks that the dashboard
// ConfigMaps hold exactly dashboards/*.json, byte for byte, one dashboard
// each (one ConfigMap for all would outgrow kubectl apply's annotation
// limit, TestObjectsFitTheLastAppliedAnnotation), each labelled for
// Grafana's sidecar.
func TestDashboardsConfigMapIsTheDashboards(t *testing.T) {
	for d, objs := range buildAll(t) {
		checkDashboards(t, d, objs, "llmprobe-dashboard-")
	}
}

// checkDashboards checks that the ConfigMaps of objs named prefix* hold
// exactly dashboards/*.json, one each, labelled for Grafana's sidecar (see
// TestDashboardsConfigMapIsTheDashboards).
func checkDashboards(t *testing.T, d string, objs []Object, prefix string) {
	t.Helper()
	paths, err := filepath.Glob("../dashboards/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	got := map[string]string{}
	for _, c := range Of[corev1.ConfigMap](objs) {
		if !strings.HasPrefix(c.Name, prefix) {
			continue
		}
		if len(c.Data) != 1 || c.Labels["grafana_dashboard"] != "1" {
			t.Errorf("%s: ConfigMap %s: %d keys, labels %v; want one dashboard labelled grafana_dashboard: \"1\"", d, c.Name, len(c.Data), c.Labels)
		}
		for k, v := range c.Data {
			got[k] = v
		}
	}
	if len(got) != len(paths) {
		t.Errorf("%s: %d dashboards in the ConfigMaps, want %d: %s", d, len(got), len(paths), regenerate)
	}
	for _, p := range paths {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got[filepath.Base(p)] != string(want) {
			t.Errorf("%s: dashboard %s in the ConfigMaps differs from %s: %s", d, filepath.Base(p), p, regenerate)
		}
	}
}

// TestSimulatorJoinLabel checks that the simulator's ServiceMonitor labels
// its series with the llmprobe target name that probes it (the join of the
// server-side rules and dashboards).
func TestSimulatorJoinLabel(t *testing.T) {
	objs := buildAll(t)["overlays/simulator"]
	var sm *monitoringv1.ServiceMonitor
	for _, s := range Of[monitoringv1.ServiceMonitor](objs) {
		if s.Name == "vllm-simulator" {
			sm = s
		}
	}
	if sm == nil || len(sm.Spec.Endpoints) != 1 {
		t.Fatal("overlays/simulator: no ServiceMonitor vllm-simulator with one endpoint")
	}
	var target string
	for _, r := range sm.Spec.Endpoints[0].RelabelConfigs {
		if r.TargetLabel == "target" && r.Replacement != nil {
			target = *r.Replacement
		}
	}
	var cfgData string
	for _, cm := range Of[corev1.ConfigMap](objs) {
		if d, ok := cm.Data["llmprobe.yml"]; ok {
			cfgData = d
		}
	}
	cfg, err := config.Parse([]byte(cfgData), "llmprobe.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Targets) != 1 || cfg.Targets[0].Name != target || !strings.Contains(cfg.Targets[0].BaseURL, "//vllm-simulator:") {
		t.Fatalf("simulator ServiceMonitor sets target=%q; want the one target of the config, %s at %s",
			target, cfg.Targets[0].Name, cfg.Targets[0].BaseURL)
	}
}

// TestVLLMOverlayRequiresItsKeys checks that the vllm overlay makes the API
// key Secret required (the base leaves it optional) and that both promote
// the kube-prometheus-stack selector label.
func TestVLLMOverlayRequiresItsKeys(t *testing.T) {
	optional := func(objs []Object) *bool {
		for _, dep := range Of[appsv1.Deployment](objs) {
			for _, v := range dep.Spec.Template.Spec.Volumes {
				if v.Secret != nil && v.Secret.SecretName == "llmprobe-api-keys" {
					return v.Secret.Optional
				}
			}
		}
		t.Fatal("no llmprobe-api-keys volume")
		return nil
	}
	if o := optional(buildAll(t)["base"]); o == nil || !*o {
		t.Error("base: the API key Secret must be optional")
	}
	if o := optional(buildAll(t)["overlays/vllm"]); o == nil || *o {
		t.Error("overlays/vllm: the API key Secret must be required")
	}
	for _, d := range []string{"overlays/vllm", "overlays/simulator"} {
		for _, o := range buildAll(t)[d] {
			if !strings.HasPrefix(o.APIVersion, "monitoring.coreos.com/") {
				continue
			}
			meta := reflectMeta(o)
			if meta.GetLabels()["release"] != "kube-prometheus-stack" {
				t.Errorf("%s: %s %s has no release label for kube-prometheus-stack", d, o.Kind, o.Name)
			}
		}
	}
}

func reflectMeta(o Object) metav1.Object {
	m, ok := o.Value.(metav1.Object)
	if !ok {
		panic(o.Kind + " has no ObjectMeta")
	}
	return m
}

// TestVLLMServiceMonitorJoinLabel checks the ServiceMonitor shipped beside
// the vllm overlay for the vLLM it probes: a valid ServiceMonitor (strict
// decoding) of another namespace that labels the series with the llmprobe
// target name of the overlay's config, the join Kubernetes needs (Prometheus
// scrapes the pods, llmprobe calls the Service).
func TestVLLMServiceMonitorJoinLabel(t *testing.T) {
	data, err := os.ReadFile("kubernetes/overlays/vllm/vllm-servicemonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	sm, ok := o.Value.(*monitoringv1.ServiceMonitor)
	if !ok || len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("want a ServiceMonitor with one endpoint, got %s %s", o.Kind, o.Name)
	}
	if ns := sm.Spec.NamespaceSelector.MatchNames; len(ns) != 1 || ns[0] != "vllm" {
		t.Errorf("namespaceSelector %v, want the vllm namespace of the overlay's base_url", ns)
	}
	var target string
	for _, r := range sm.Spec.Endpoints[0].RelabelConfigs {
		if r.TargetLabel == "target" && r.Replacement != nil {
			target = *r.Replacement
		}
	}
	cfgData, err := os.ReadFile("kubernetes/overlays/vllm/llmprobe.yml")
	if err != nil {
		t.Fatal(err)
	}
	// Not config.Parse: it reads the API key file, which exists only in the pod.
	var cfg struct {
		Targets []struct {
			Name    string `json:"name"`
			BaseURL string `json:"base_url"`
		} `json:"targets"`
	}
	if err := yaml.Unmarshal(cfgData, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Targets) != 1 || cfg.Targets[0].Name != target || !strings.Contains(cfg.Targets[0].BaseURL, "//vllm.vllm.svc") {
		t.Fatalf("ServiceMonitor sets target=%q; want the one target of the overlay's config (%v)", target, cfg.Targets)
	}
	if sm.Labels["release"] != "kube-prometheus-stack" {
		t.Error("no release label for kube-prometheus-stack")
	}
}

// checkSweepsWritable: a serve container names its --sweeps.dir, and that
// directory lies on a writable volume (the root is read-only) that is an
// emptyDir with a sizeLimit above --sweeps.retention.size, or a claim
// (issue 37: scheduled sweeps failed with "read-only file system" in every
// shipped deployment).
func checkSweepsWritable(t *testing.T, where string, w workload, c corev1.Container) {
	t.Helper()
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		return
	}
	flag := func(name string) string {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		return ""
	}
	dir := flag("sweeps.dir")
	if !strings.HasPrefix(dir, "/") {
		t.Errorf("%s: serve has no absolute --sweeps.dir (%q): its default ./sweeps is on the read-only root", where, dir)
		return
	}
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if (dir == m.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/")) &&
			(mount == nil || len(m.MountPath) > len(mount.MountPath)) {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil || mount.ReadOnly {
		t.Errorf("%s: --sweeps.dir=%s is on no writable volume mount", where, dir)
		return
	}
	if slices.Contains(w.Claims, mount.Name) {
		return
	}
	i := slices.IndexFunc(w.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
	if i < 0 {
		t.Errorf("%s: --sweeps.dir=%s: volume %q is not in the pod", where, dir, mount.Name)
		return
	}
	v := w.Spec.Volumes[i]
	switch {
	case v.PersistentVolumeClaim != nil:
	case v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil:
		size, err := units.ParseBase2Bytes(flag("sweeps.retention.size"))
		if err != nil || size <= 0 || int64(size) >= v.EmptyDir.SizeLimit.Value() {
			t.Errorf("%s: --sweeps.retention.size=%q (%v) must be set and below the emptyDir's sizeLimit %s (over it the kubelet evicts the pod)",
				where, flag("sweeps.retention.size"), err, v.EmptyDir.SizeLimit)
		}
	default:
		t.Errorf("%s: --sweeps.dir=%s: volume %q is neither a bounded emptyDir nor a claim", where, dir, mount.Name)
	}
}
