package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"sort"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Object is one object of a built kustomization, decoded strictly into its
// typed struct.
type Object struct {
	// APIVersion and Kind are the object's type ("apps/v1", "Deployment").
	APIVersion, Kind string
	// Name and Namespace are its metadata (Namespace empty when not set).
	Name, Namespace string
	// Value is a pointer to the typed struct: *appsv1.Deployment,
	// *corev1.ConfigMap, *monitoringv1.ServiceMonitor, ...
	Value any
}

// Kinds are the object types the manifests may use, keyed by
// "apiVersion/kind", each with the Go type it is decoded into. An object of
// any other type is an error: add its type here when a manifest starts using
// one. The map is shared: do not modify it.
var Kinds = map[string]reflect.Type{
	"v1/ConfigMap":                                      reflect.TypeFor[corev1.ConfigMap](),
	"v1/PersistentVolumeClaim":                          reflect.TypeFor[corev1.PersistentVolumeClaim](),
	"batch/v1/Job":                                      reflect.TypeFor[batchv1.Job](),
	"batch/v1/CronJob":                                  reflect.TypeFor[batchv1.CronJob](),
	"v1/Namespace":                                      reflect.TypeFor[corev1.Namespace](),
	"v1/Secret":                                         reflect.TypeFor[corev1.Secret](),
	"v1/Service":                                        reflect.TypeFor[corev1.Service](),
	"v1/ServiceAccount":                                 reflect.TypeFor[corev1.ServiceAccount](),
	"apps/v1/Deployment":                                reflect.TypeFor[appsv1.Deployment](),
	"apps/v1/StatefulSet":                               reflect.TypeFor[appsv1.StatefulSet](),
	"networking.k8s.io/v1/NetworkPolicy":                reflect.TypeFor[networkingv1.NetworkPolicy](),
	"policy/v1/PodDisruptionBudget":                     reflect.TypeFor[policyv1.PodDisruptionBudget](),
	"rbac.authorization.k8s.io/v1/Role":                 reflect.TypeFor[rbacv1.Role](),
	"rbac.authorization.k8s.io/v1/RoleBinding":          reflect.TypeFor[rbacv1.RoleBinding](),
	"monitoring.coreos.com/v1/PodMonitor":               reflect.TypeFor[monitoringv1.PodMonitor](),
	"monitoring.coreos.com/v1alpha1/AlertmanagerConfig": reflect.TypeFor[monitoringv1alpha1.AlertmanagerConfig](),
	"monitoring.coreos.com/v1/Probe":                    reflect.TypeFor[monitoringv1.Probe](),
	"monitoring.coreos.com/v1/PrometheusRule":           reflect.TypeFor[monitoringv1.PrometheusRule](),
	"monitoring.coreos.com/v1/ServiceMonitor":           reflect.TypeFor[monitoringv1.ServiceMonitor](),
}

// Kustomizations returns the directories under root (slash-separated,
// relative to root, sorted) that hold a kustomization.yaml of kind
// Kustomization: every one can be built on its own. Components are left out;
// they are built as part of the kustomizations that use them.
func Kustomizations(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		data, err := readFile(path)
		if err != nil {
			return err
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		switch head.Kind {
		case "Kustomization", "":
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		case "Component":
		default:
			return fmt.Errorf("%s: unknown kind %q", path, head.Kind)
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// Build builds the kustomization in dir as `kustomize build dir` does (with
// kustomize's default options) and decodes every object with Decode.
func Build(dir string) ([]Object, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []Object
	var errs []error
	for _, r := range m.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.CurId(), err))
			continue
		}
		o, err := Decode(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", dir, r.CurId(), err))
			continue
		}
		objs = append(objs, o)
	}
	return objs, errors.Join(errs...)
}

// Decode decodes one object (JSON or YAML) into the type Kinds names for its
// apiVersion and kind. Decoding is strict: a field the type does not have,
// a field spelt in another case or a duplicate field is an error, so a typo
// in a manifest fails.
func Decode(data []byte) (Object, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return Object{}, err
		}
		data = j
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.UnmarshalCaseSensitivePreserveInts(data, &head); err != nil {
		return Object{}, err
	}
	t, ok := Kinds[head.APIVersion+"/"+head.Kind]
	if !ok {
		return Object{}, fmt.Errorf("no Go type for apiVersion %q kind %q: add it to deploy.Kinds", head.APIVersion, head.Kind)
	}
	v := reflect.New(t)
	strict, err := json.UnmarshalStrict(data, v.Interface(), json.DisallowDuplicateFields, json.DisallowUnknownFields)
	if err != nil {
		return Object{}, err
	}
	if len(strict) > 0 {
		return Object{}, fmt.Errorf("%s %s: %w", head.APIVersion, head.Kind, errors.Join(strict...))
	}
	meta := v.Elem().FieldByName("ObjectMeta")
	o := Object{APIVersion: head.APIVersion, Kind: head.Kind, Value: v.Interface()}
	if meta.IsValid() {
		o.Name = meta.FieldByName("Name").String()
		o.Namespace = meta.FieldByName("Namespace").String()
	}
	return o, nil
}

// Of returns the objects of objs whose Value is a *T, in order.
func Of[T any](objs []Object) []*T {
	var out []*T
	for _, o := range objs {
		if v, ok := o.Value.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}
