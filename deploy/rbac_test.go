package deploy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// discoveryReads are the only grants a Role of llmprobe may hold: what
// Prometheus' kubernetes_sd_configs reads for the roles endpointslice and
// pod (the objects, and the pods and Services whose metadata it attaches),
// by API group, and only list and watch.
var (
	discoveryReads = map[string][]string{"": {"pods", "services"}, "discovery.k8s.io": {"endpointslices"}}
	discoveryVerbs = []string{"list", "watch"}
)

// checkRole returns an error for every grant of r beyond discoveryReads
// and discoveryVerbs (a wildcard, another group, resource or verb,
// resourceNames, non-resource URLs).
func checkRole(r *rbacv1.Role) error {
	if len(r.Rules) == 0 {
		return fmt.Errorf("Role %s grants nothing", r.Name)
	}
	var errs []error
	for i, rule := range r.Rules {
		where := fmt.Sprintf("Role %s rule %d", r.Name, i)
		if len(rule.NonResourceURLs) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, fmt.Errorf("%s: resourceNames or nonResourceURLs", where))
		}
		for _, v := range rule.Verbs {
			if !slices.Contains(discoveryVerbs, v) {
				errs = append(errs, fmt.Errorf("%s: verb %q, want only %v", where, v, discoveryVerbs))
			}
		}
		for _, g := range rule.APIGroups {
			allowed, ok := discoveryReads[g]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: API group %q", where, g))
				continue
			}
			for _, res := range rule.Resources {
				if !slices.Contains(allowed, res) {
					errs = append(errs, fmt.Errorf("%s: resource %q of group %q, want only %v", where, res, g, allowed))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkDiscoveryRBAC checks that the service account sa of namespace ns is
// bound, by RoleBindings of objs in ns, only to Roles of objs in ns that
// read what discovery needs (checkRole), and by at least one.
func checkDiscoveryRBAC(objs []Object, ns, sa string) error {
	if sa == "" {
		sa = "default"
	}
	roles := map[string]*rbacv1.Role{}
	for _, r := range Of[rbacv1.Role](objs) {
		roles[r.Namespace+"/"+r.Name] = r
	}
	bound := 0
	var errs []error
	for _, b := range Of[rbacv1.RoleBinding](objs) {
		if b.Namespace != ns || !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == ns
		}) {
			continue
		}
		bound++
		if b.RoleRef.Kind != "Role" || b.RoleRef.APIGroup != rbacv1.GroupName {
			errs = append(errs, fmt.Errorf("RoleBinding %s binds %s %s, want a Role of the namespace", b.Name, b.RoleRef.Kind, b.RoleRef.Name))
			continue
		}
		r, ok := roles[ns+"/"+b.RoleRef.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("RoleBinding %s binds Role %s, which is not in namespace %q", b.Name, b.RoleRef.Name, ns))
			continue
		}
		if err := checkRole(r); err != nil {
			errs = append(errs, err)
		}
	}
	if bound == 0 {
		errs = append(errs, fmt.Errorf("no RoleBinding of namespace %q binds ServiceAccount %s", ns, sa))
	}
	return errors.Join(errs...)
}

// TestRBACIsDiscoveryOnly checks every Role and RoleBinding of every
// kustomization: each Role only lists and watches what discovery reads,
// each RoleBinding binds a Role and ServiceAccounts of the output in its
// own namespace; and broken variants fail.
func TestRBACIsDiscoveryOnly(t *testing.T) {
	checkEach(t, buildAll(t), checkRBACObjects, "no RoleBinding in any kustomization")

	role := func(rules ...rbacv1.PolicyRule) []Object {
		return []Object{
			{Kind: "Role", Value: &rbacv1.Role{ObjectMeta: meta("r", "ns"), Rules: rules}},
			{Kind: "RoleBinding", Value: &rbacv1.RoleBinding{
				ObjectMeta: meta("b", "ns"),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "llmprobe", Namespace: "ns"}},
			}},
		}
	}
	ok := rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}}
	if err := checkDiscoveryRBAC(role(ok), "ns", "llmprobe"); err != nil {
		t.Errorf("a list/watch Role on endpointslices: %v", err)
	}
	for _, tc := range []struct {
		name string
		objs []Object
		sa   string
		want string
	}{
		{"get secrets", role(ok, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}), "llmprobe", `resource "secrets"`},
		{"wildcard verb", role(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}}), "llmprobe", `verb "*"`},
		{"another group", role(rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list"}}), "llmprobe", `API group "apps"`},
		{"no binding", role(ok), "other", "no RoleBinding"},
		{"missing role", role(ok)[1:], "llmprobe", "not in namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDiscoveryRBAC(tc.objs, "ns", tc.sa)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// checkRBACObjects checks the Roles and RoleBindings of one output and
// returns how many RoleBindings it checked.
func checkRBACObjects(t *testing.T, d string, objs []Object) int {
	t.Helper()
	for _, r := range Of[rbacv1.Role](objs) {
		if err := checkRole(r); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Namespace+"/"+o.Kind+"/"+o.Name] = true
	}
	n := 0
	for _, b := range Of[rbacv1.RoleBinding](objs) {
		n++
		if !have[b.Namespace+"/Role/"+b.RoleRef.Name] || b.RoleRef.Kind != "Role" {
			t.Errorf("%s: RoleBinding %s binds %s %s, not a Role of the output in %q", d, b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Namespace)
		}
		if len(b.Subjects) == 0 {
			t.Errorf("%s: RoleBinding %s has no subject", d, b.Name)
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != b.Namespace || !have[b.Namespace+"/ServiceAccount/"+s.Name] {
				t.Errorf("%s: RoleBinding %s: subject %s %s/%s is not a ServiceAccount of the output in %q", d, b.Name, s.Kind, s.Namespace, s.Name, b.Namespace)
			}
		}
	}
	return n
}

// perReplicaDiscovery is the part of an llmprobe.yml the per-replica
// overlay and example share: the discovery entries.
type perReplicaDiscovery struct {
	Discovery []map[string]any `json:"discovery"`
}

// loadDiscovery reads the discovery entries of an llmprobe.yml, with each
// template's api_key_file left out (the example has one, the demo's
// simulators take none).
func loadDiscovery(t *testing.T, where string, data []byte) []map[string]any {
	t.Helper()
	var c perReplicaDiscovery
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if len(c.Discovery) == 0 {
		t.Fatalf("%s: no discovery entry", where)
	}
	for _, e := range c.Discovery {
		if tpl, ok := e["target"].(map[string]any); ok {
			delete(tpl, "api_key_file")
		}
	}
	return c.Discovery
}

// TestPerReplicaOverlay checks overlays/per-replica: llmprobe mounts its
// token and is bound to the discovery Role only; the ServiceMonitor keeps
// the scraped labels (honorLabels); the simulated vLLM has 3 replicas
// behind the Service the configuration discovers; the configuration's
// discovery entry equals deploy/examples/per-replica.yml's (API key aside),
// watches its own namespace only (the Role's scope) and gives the targets
// the namespace, service and pod labels rules/llmprobe.replicas.yml groups by.
func TestPerReplicaOverlay(t *testing.T) {
	const d = "overlays/per-replica"
	objs, ok := buildAll(t)[d]
	if !ok {
		t.Fatalf("no kustomization %s", d)
	}
	ns := overlayNamespace(t, d)
	var prober *appsv1.Deployment
	for _, dep := range Of[appsv1.Deployment](objs) {
		if dep.Name == "llmprobe" {
			prober = dep
		}
	}
	if prober == nil {
		t.Fatal("no Deployment llmprobe")
	}
	spec := prober.Spec.Template.Spec
	if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Error("llmprobe's pod does not mount its token: discovery cannot read the API server")
	}
	if err := checkDiscoveryRBAC(objs, ns, spec.ServiceAccountName); err != nil {
		t.Error(err)
	}
	for _, sm := range Of[monitoringv1.ServiceMonitor](objs) {
		if sm.Name == "llmprobe" && (len(sm.Spec.Endpoints) != 1 || !sm.Spec.Endpoints[0].HonorLabels) {
			t.Errorf("ServiceMonitor llmprobe: want one endpoint with honorLabels: true, got %+v", sm.Spec.Endpoints)
		}
	}

	var cfgData string
	for _, cm := range Of[corev1.ConfigMap](objs) {
		if data, ok := cm.Data["llmprobe.yml"]; ok {
			cfgData = data
		}
	}
	overlay := loadDiscovery(t, d+"/llmprobe.yml", []byte(cfgData))
	exampleData, err := os.ReadFile(filepath.Join("examples", "per-replica.yml"))
	if err != nil {
		t.Fatal(err)
	}
	example := loadDiscovery(t, "examples/per-replica.yml", exampleData)
	if !reflect.DeepEqual(overlay, example) {
		t.Errorf("the discovery entries of %s/llmprobe.yml and examples/per-replica.yml differ (API key aside):\n%v\n%v", d, overlay, example)
	}

	var sd struct {
		KubernetesSDConfigs []struct {
			Role       string `json:"role"`
			Namespaces struct {
				OwnNamespace bool     `json:"own_namespace"`
				Names        []string `json:"names"`
			} `json:"namespaces"`
		} `json:"kubernetes_sd_configs"`
		RelabelConfigs []struct {
			TargetLabel string `json:"target_label"`
		} `json:"relabel_configs"`
	}
	b, err := yaml.Marshal(example[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &sd); err != nil {
		t.Fatal(err)
	}
	if len(sd.KubernetesSDConfigs) == 0 {
		t.Fatal("no kubernetes_sd_configs")
	}
	for _, k := range sd.KubernetesSDConfigs {
		if k.Role != "endpointslice" || !k.Namespaces.OwnNamespace || len(k.Namespaces.Names) > 0 {
			t.Errorf("kubernetes_sd_configs %+v: want role endpointslice in its own namespace only (the Role's scope)", k)
		}
	}
	var labels []string
	for _, r := range sd.RelabelConfigs {
		labels = append(labels, r.TargetLabel)
	}
	for _, want := range []string{"namespace", "service", "pod"} {
		if !slices.Contains(labels, want) {
			t.Errorf("relabel_configs set %v, not %s (rules/llmprobe.replicas.yml groups by namespace and service and names the pod)", labels, want)
		}
	}

	found := false
	for _, dep := range Of[appsv1.Deployment](objs) {
		if dep.Name == "vllm" {
			found = dep.Spec.Replicas != nil && *dep.Spec.Replicas >= 3
		}
	}
	if !found {
		t.Error("no Deployment vllm of at least 3 replicas (the replica rules need 3)")
	}
}

// meta is the ObjectMeta of name in namespace ns.
func meta(name, ns string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
