package deploy

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// workload is the pod template of a Deployment, StatefulSet, Job or CronJob.
type workload struct {
	Kind, Name, Namespace string
	Spec                  corev1.PodSpec
	// Claims are the StatefulSet's volumeClaimTemplates names: volumes its
	// pods get without a PVC object in the output.
	Claims []string
}

// LongRunning reports whether the workload's pods serve until stopped
// (they need liveness and readiness probes; a Job's pods run to completion).
func (w workload) LongRunning() bool { return w.Kind == "Deployment" || w.Kind == "StatefulSet" }

// podsOf returns the pod templates of every workload kind in objs.
func podsOf(objs []Object) []workload {
	var out []workload
	for _, d := range Of[appsv1.Deployment](objs) {
		out = append(out, workload{Kind: "Deployment", Name: d.Name, Namespace: d.Namespace, Spec: d.Spec.Template.Spec})
	}
	for _, s := range Of[appsv1.StatefulSet](objs) {
		w := workload{Kind: "StatefulSet", Name: s.Name, Namespace: s.Namespace, Spec: s.Spec.Template.Spec}
		for _, c := range s.Spec.VolumeClaimTemplates {
			w.Claims = append(w.Claims, c.Name)
		}
		out = append(out, w)
	}
	for _, j := range Of[batchv1.Job](objs) {
		out = append(out, workload{Kind: "Job", Name: j.Name, Namespace: j.Namespace, Spec: j.Spec.Template.Spec})
	}
	for _, c := range Of[batchv1.CronJob](objs) {
		out = append(out, workload{Kind: "CronJob", Name: c.Name, Namespace: c.Namespace, Spec: c.Spec.JobTemplate.Spec.Template.Spec})
	}
	return out
}

// clusterScoped are the kinds of Kinds that have no namespace.
var clusterScoped = map[string]bool{"Namespace": true}

// overlayNamespace reads the namespace a kustomization under kubeRoot sets.
func overlayNamespace(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(kubeRoot, dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	return k.Namespace
}

// TestOverlaysSetTheirNamespace checks that every overlay sets a namespace
// and that every namespaced object it outputs is in it: an object without
// one lands in the namespace of kubectl's context, away from the
// ConfigMaps, ServiceAccount and Services it uses.
func TestOverlaysSetTheirNamespace(t *testing.T) {
	n := 0
	for d, objs := range buildAll(t) {
		if !strings.HasPrefix(d, "overlays/") {
			continue
		}
		n++
		ns := overlayNamespace(t, d)
		if ns == "" {
			t.Errorf("%s: its kustomization.yaml sets no namespace", d)
			continue
		}
		checkNamespace(t, d, ns, objs)
	}
	if n == 0 {
		t.Fatal("no overlay")
	}
}

// checkNamespace checks that every namespaced object of objs is in ns and
// that a Namespace object, if any, is ns.
func checkNamespace(t *testing.T, d, ns string, objs []Object) {
	t.Helper()
	for _, o := range objs {
		switch {
		case clusterScoped[o.Kind] && o.Kind == "Namespace" && o.Name != ns:
			t.Errorf("%s: creates Namespace %s, not its namespace %s", d, o.Name, ns)
		case !clusterScoped[o.Kind] && o.Namespace != ns:
			t.Errorf("%s: %s %s is in namespace %q, want the overlay's %q", d, o.Kind, o.Name, o.Namespace, ns)
		}
	}
}

// external are the objects a kustomization may require without carrying
// them, each with the text its kustomization.yaml must hold to tell the
// user how to make it. API keys are never committed.
var external = map[string]string{
	"Secret/llmprobe-api-keys": "create secret generic llmprobe-api-keys",
}

// podRefs returns the objects ("Kind/name") a pod spec requires, and the
// optional ones apart (a pod starts without those).
func podRefs(spec corev1.PodSpec) (required, optional []string) {
	add := func(ref string, opt *bool) {
		if opt != nil && *opt {
			optional = append(optional, ref)
		} else {
			required = append(required, ref)
		}
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	required = append(required, "ServiceAccount/"+sa)
	for _, s := range spec.ImagePullSecrets {
		required = append(required, "Secret/"+s.Name)
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap/"+v.ConfigMap.Name, v.ConfigMap.Optional)
		case v.Secret != nil:
			add("Secret/"+v.Secret.SecretName, v.Secret.Optional)
		case v.PersistentVolumeClaim != nil:
			add("PersistentVolumeClaim/"+v.PersistentVolumeClaim.ClaimName, nil)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add("ConfigMap/"+src.ConfigMap.Name, src.ConfigMap.Optional)
				}
				if src.Secret != nil {
					add("Secret/"+src.Secret.Name, src.Secret.Optional)
				}
			}
		}
	}
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add("ConfigMap/"+e.ConfigMapRef.Name, e.ConfigMapRef.Optional)
			}
			if e.SecretRef != nil {
				add("Secret/"+e.SecretRef.Name, e.SecretRef.Optional)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add("ConfigMap/"+r.Name, r.Optional)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add("Secret/"+r.Name, r.Optional)
			}
		}
	}
	return required, optional
}

// TestReferencesResolve checks that every ConfigMap, Secret,
// ServiceAccount and PersistentVolumeClaim a pod needs is an object of the
// output in the pod's namespace, under its final name (a generated
// ConfigMap's name carries a hash: a reference kustomize did not rewrite
// names nothing), and that every volume mount names a volume. The
// ServiceAccount default exists in every namespace; a required Secret the
// user makes is allowed where the kustomization tells how (external).
func TestReferencesResolve(t *testing.T) {
	checked := 0
	for d, objs := range workloads(t) {
		kust, err := os.ReadFile(filepath.Join(kubeRoot, d, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		checked += checkReferences(t, d, objs, func(ref string) bool {
			return external[ref] != "" && strings.Contains(string(kust), external[ref])
		})
	}
	if checked == 0 {
		t.Fatal("no reference checked")
	}
}

// checkReferences checks that every object a pod of objs requires is in
// objs, in the pod's namespace, or is the ServiceAccount default, or one
// userMade allows (a Secret the user creates); and that every volume mount
// names a volume. It returns how many references it checked.
func checkReferences(t *testing.T, d string, objs []Object, userMade func(ref string) bool) int {
	t.Helper()
	checked := 0
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Namespace+"/"+o.Kind+"/"+o.Name] = true
	}
	for _, w := range podsOf(objs) {
		where := d + ": " + w.Kind + " " + w.Name
		required, _ := podRefs(w.Spec)
		for _, ref := range required {
			checked++
			switch {
			case have[w.Namespace+"/"+ref], ref == "ServiceAccount/default":
			case userMade(ref):
			default:
				t.Errorf("%s requires %s, which is not in the output's namespace %q", where, ref, w.Namespace)
			}
		}
		vols := map[string]bool{}
		for _, v := range w.Spec.Volumes {
			vols[v.Name] = true
		}
		for _, c := range w.Claims {
			vols[c] = true
		}
		for _, c := range append(append([]corev1.Container(nil), w.Spec.InitContainers...), w.Spec.Containers...) {
			for _, m := range c.VolumeMounts {
				if !vols[m.Name] {
					t.Errorf("%s: container %s mounts %s, which is no volume of the pod", where, c.Name, m.Name)
				}
			}
		}
	}
	return checked
}

// imageRef splits an image reference into its name, tag and digest.
func imageRef(image string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// TestImagesAreTagged checks every container image of every kustomization:
// an untagged image is :latest, which pulls whatever was pushed last and,
// with imagePullPolicy IfNotPresent, never the same on every node.
func TestImagesAreTagged(t *testing.T) {
	checkEach(t, workloads(t), checkImagesTagged, "no image checked")
	for _, tc := range []struct{ image, tag, digest string }{
		{"llmprobe", "", ""}, {"llmprobe:dev", "dev", ""}, {"registry:5000/llmprobe", "", ""},
		{"registry:5000/llmprobe:v1", "v1", ""}, {"llmprobe@sha256:ab", "", "sha256:ab"},
	} {
		if _, tag, digest := imageRef(tc.image); tag != tc.tag || digest != tc.digest {
			t.Errorf("imageRef(%q) = tag %q digest %q, want %q %q", tc.image, tag, digest, tc.tag, tc.digest)
		}
	}
}

// checkImagesTagged checks every container image of objs for a tag other
// than latest or a digest, and returns how many it checked.
func checkImagesTagged(t *testing.T, d string, objs []Object) int {
	t.Helper()
	n := 0
	for _, w := range podsOf(objs) {
		for _, c := range append(append([]corev1.Container(nil), w.Spec.InitContainers...), w.Spec.Containers...) {
			n++
			if _, tag, digest := imageRef(c.Image); digest == "" && (tag == "" || tag == "latest") {
				t.Errorf("%s: %s %s container %s: image %q has no tag other than latest (set images: in the kustomization)",
					d, w.Kind, w.Name, c.Name, c.Image)
			}
		}
	}
	return n
}

// lastAppliedLimit is the most bytes an object's annotations may hold
// (262,144, Kubernetes' TotalAnnotationSizeLimitB); client-side kubectl apply
// stores the whole object as JSON in the annotation
// kubectl.kubernetes.io/last-applied-configuration, so an object larger
// than that cannot be applied. lastAppliedBudget leaves a quarter for
// growth (another dashboard, more rules).
const (
	lastAppliedLimit  = 262144
	lastAppliedBudget = lastAppliedLimit * 3 / 4
)

// TestObjectsFitTheLastAppliedAnnotation checks every object of every
// kustomization (the dashboards ConfigMaps first: a dashboard is tens of
// kilobytes) against the last-applied annotation's budget.
func TestObjectsFitTheLastAppliedAnnotation(t *testing.T) {
	largest, which := 0, ""
	for d, objs := range buildAll(t) {
		if n, w := checkLastApplied(t, d, objs); n > largest {
			largest, which = n, w
		}
	}
	t.Logf("largest object: %s, %d bytes (budget %d)", which, largest, lastAppliedBudget)
}

// checkLastApplied checks every object of objs against lastAppliedBudget
// and returns the size of the largest and which it is.
func checkLastApplied(t *testing.T, d string, objs []Object) (largest int, which string) {
	t.Helper()
	for _, o := range objs {
		b, err := json.Marshal(o.Value)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > largest {
			largest, which = len(b), d+": "+o.Kind+" "+o.Name
		}
		if len(b) > lastAppliedBudget {
			t.Errorf("%s: %s %s is %d bytes of JSON, over %d (3/4 of the %d-byte last-applied annotation limit of kubectl apply): split it",
				d, o.Kind, o.Name, len(b), lastAppliedBudget, lastAppliedLimit)
		}
	}
	return largest, which
}

// shardArg matches serve's --shard=$(POD_INDEX)/N.
var shardArg = regexp.MustCompile(`^--shard=\$\(POD_INDEX\)/(\d+)$`)

// TestShardedDemoGivesEveryShardTargets checks every StatefulSet that runs
// serve --shard=$(POD_INDEX)/N: N equals its replicas, and its
// configuration has targets for every shard (a shard without one probes
// nothing and exports no probe series).
func TestShardedDemoGivesEveryShardTargets(t *testing.T) {
	checkEach(t, workloads(t), checkShards, "no sharded StatefulSet")
}

// checkShards checks every sharded StatefulSet of objs (see
// TestShardedDemoGivesEveryShardTargets) and returns how many it checked.
func checkShards(t *testing.T, d string, objs []Object) int {
	t.Helper()
	n := 0
	for _, s := range Of[appsv1.StatefulSet](objs) {
		count := 0
		for _, c := range s.Spec.Template.Spec.Containers {
			for _, a := range c.Args {
				if m := shardArg.FindStringSubmatch(a); m != nil {
					count, _ = strconv.Atoi(m[1])
				}
			}
		}
		if count == 0 {
			continue
		}
		n++
		if s.Spec.Replicas == nil || int(*s.Spec.Replicas) != count {
			replicas := "no"
			if s.Spec.Replicas != nil {
				replicas = strconv.Itoa(int(*s.Spec.Replicas))
			}
			t.Errorf("%s: StatefulSet %s: --shard=.../%d but %s replicas", d, s.Name, count, replicas)
		}
		cfg := statefulSetConfig(t, objs, s)
		owned := make([][]string, count)
		for _, tc := range cfg.Targets {
			i := manager.Owner(tc.Name, count)
			owned[i] = append(owned[i], tc.Name)
		}
		for i, names := range owned {
			if len(names) == 0 {
				t.Errorf("%s: StatefulSet %s: shard %d/%d owns no target of its %d", d, s.Name, i, count, len(cfg.Targets))
			}
		}
		t.Logf("%s: shards own %v", d, owned)
	}
	return n
}

// statefulSetConfig parses the llmprobe.yml of the ConfigMap s mounts.
func statefulSetConfig(t *testing.T, objs []Object, s *appsv1.StatefulSet) *config.Config {
	t.Helper()
	for _, v := range s.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		for _, cm := range Of[corev1.ConfigMap](objs) {
			if data, ok := cm.Data["llmprobe.yml"]; ok && cm.Name == v.ConfigMap.Name {
				cfg, err := config.Parse([]byte(data), cm.Name+"/llmprobe.yml")
				if err != nil {
					t.Fatal(err)
				}
				return cfg
			}
		}
	}
	t.Fatalf("StatefulSet %s mounts no ConfigMap with llmprobe.yml", s.Name)
	return nil
}

// callee is a URL an overlay's pods call, and the namespace they call from.
type callee struct{ URL, Namespace string }

// targetURLs returns the URLs an overlay's pods call: the base_url of every
// target of its llmprobe.yml and every --target= of a container's args.
func targetURLs(t *testing.T, d string, objs []Object) []callee {
	t.Helper()
	var urls []callee
	for _, cm := range Of[corev1.ConfigMap](objs) {
		data, ok := cm.Data["llmprobe.yml"]
		if !ok {
			continue
		}
		var cfg struct {
			Targets []struct {
				BaseURL string `json:"base_url"`
			} `json:"targets"`
		}
		if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
			t.Fatalf("%s: ConfigMap %s: %v", d, cm.Name, err)
		}
		for _, tc := range cfg.Targets {
			urls = append(urls, callee{tc.BaseURL, cm.Namespace})
		}
	}
	for _, w := range podsOf(objs) {
		for _, c := range w.Spec.Containers {
			for _, a := range c.Args {
				if u, ok := strings.CutPrefix(a, "--target="); ok {
					urls = append(urls, callee{u, w.Namespace})
				}
			}
		}
	}
	return urls
}

// TestTargetServicesExist checks that every target an overlay's pods call
// in their own namespace (a bare Service name, or <svc>.<namespace>.svc...)
// is a Service of the overlay with that port: the sweep Job's
// http://vllm-simulator:8000 resolves only beside the simulator. A target
// in another namespace (overlays/vllm's vllm.vllm.svc) is the overlay's
// documented parameter.
func TestTargetServicesExist(t *testing.T) {
	n := 0
	for d, objs := range buildAll(t) {
		if !strings.HasPrefix(d, "overlays/") {
			continue
		}
		for _, c := range targetURLs(t, d, objs) {
			raw, ns := c.URL, c.Namespace
			u, err := url.Parse(raw)
			if err != nil {
				t.Errorf("%s: target %q: %v", d, raw, err)
				continue
			}
			parts := strings.Split(u.Hostname(), ".")
			if len(parts) > 1 && (parts[1] != ns || len(parts) < 3 || parts[2] != "svc") {
				continue // another namespace or outside the cluster
			}
			n++
			port, _ := strconv.Atoi(u.Port())
			found := false
			for _, svc := range Of[corev1.Service](objs) {
				if svc.Name == parts[0] && svc.Namespace == ns && slices.ContainsFunc(svc.Spec.Ports,
					func(p corev1.ServicePort) bool { return int(p.Port) == port }) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: target %s: no Service %s with port %d in the caller's namespace %q", d, raw, parts[0], port, ns)
			}
		}
	}
	if n == 0 {
		t.Fatal("no in-namespace target checked")
	}
}
