//go:build !no_kubernetes_sd

package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// kubeAPI is a stand-in for the Kubernetes API server over real HTTP: it
// serves list and watch of the resources it holds as the API does (a list
// with its resourceVersion, a watch stream of ADDED / MODIFIED / DELETED
// events after a given resourceVersion, and the watch-list form with
// sendInitialEvents: the objects as ADDED events, then a BOOKMARK marking
// the end of the initial events), so that client-go's informers, and so
// Prometheus' kubernetes_sd, run against it unchanged.
type kubeAPI struct {
	srv *httptest.Server

	mu      sync.Mutex
	changed *sync.Cond
	rv      int
	kinds   map[string]string                    // collection path -> list kind
	objects map[string]map[string]map[string]any // collection path -> name -> object
	events  map[string][]kubeEvent               // collection path -> every event, in order
	closed  bool
	failing bool // lists and watches answer 500; open watches end
	calls   int  // list and watch requests answered
}

type kubeEvent struct {
	rv  int
	typ string
	obj map[string]any
}

// newKubeAPI serves the collections named by path (e.g.
// /api/v1/namespaces/llm/pods) with their list kinds (PodList).
func newKubeAPI(t *testing.T, kinds map[string]string) *kubeAPI {
	a := &kubeAPI{kinds: kinds, objects: map[string]map[string]map[string]any{}, events: map[string][]kubeEvent{}, rv: 100}
	a.changed = sync.NewCond(&a.mu)
	for p := range kinds {
		a.objects[p] = map[string]map[string]any{}
	}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(func() {
		a.mu.Lock()
		a.closed = true
		a.changed.Broadcast()
		a.mu.Unlock()
		a.srv.Close()
	})
	return a
}

// fail makes lists and watches answer 500 (and ends the open watches),
// or serve again.
func (a *kubeAPI) fail(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failing = on
	a.changed.Broadcast()
}

// requests is how many list and watch requests were answered.
func (a *kubeAPI) requests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// put adds or replaces an object (its metadata.name names it).
func (a *kubeAPI) put(path string, obj map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv++
	meta := obj["metadata"].(map[string]any)
	meta["resourceVersion"] = strconv.Itoa(a.rv)
	name := meta["name"].(string)
	typ := "ADDED"
	if _, ok := a.objects[path][name]; ok {
		typ = "MODIFIED"
	}
	a.objects[path][name] = obj
	a.events[path] = append(a.events[path], kubeEvent{a.rv, typ, obj})
	a.changed.Broadcast()
}

// remove deletes an object.
func (a *kubeAPI) remove(path, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	obj, ok := a.objects[path][name]
	if !ok {
		return
	}
	a.rv++
	delete(a.objects[path], name)
	obj["metadata"].(map[string]any)["resourceVersion"] = strconv.Itoa(a.rv)
	a.events[path] = append(a.events[path], kubeEvent{a.rv, "DELETED", obj})
	a.changed.Broadcast()
}

func (a *kubeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/version" {
		fmt.Fprint(w, `{"major": "1", "minor": "33", "gitVersion": "v1.33.0"}`)
		return
	}
	kind, ok := a.kinds[r.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "%s not found"}`, r.URL.Path)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	a.mu.Lock()
	a.calls++
	failing := a.failing
	a.mu.Unlock()
	if failing {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "InternalError", "code": 500, "message": "etcd is down"}`)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		a.mu.Lock()
		items := []any{}
		for _, o := range a.objects[r.URL.Path] {
			items = append(items, o)
		}
		b, _ := json.Marshal(map[string]any{"kind": kind, "apiVersion": apiVersion(r.URL.Path),
			"metadata": map[string]any{"resourceVersion": strconv.Itoa(a.rv)}, "items": items})
		a.mu.Unlock()
		w.Write(b)
		return
	}
	flusher := w.(http.Flusher)
	enc := json.NewEncoder(w)
	after, _ := strconv.Atoi(q.Get("resourceVersion"))
	a.mu.Lock()
	if q.Get("sendInitialEvents") == "true" {
		for _, o := range a.objects[r.URL.Path] {
			enc.Encode(map[string]any{"type": "ADDED", "object": o})
		}
		enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{"kind": strings.TrimSuffix(kind, "List"),
			"apiVersion": apiVersion(r.URL.Path), "metadata": map[string]any{"resourceVersion": strconv.Itoa(a.rv),
				"annotations": map[string]string{"k8s.io/initial-events-end": "true"}}}})
		after = a.rv
	}
	flusher.Flush()
	// Wake the wait below when the client goes away.
	stop := context.AfterFunc(r.Context(), func() { a.mu.Lock(); a.changed.Broadcast(); a.mu.Unlock() })
	defer stop()
	for !a.closed && !a.failing && r.Context().Err() == nil {
		for _, e := range a.events[r.URL.Path] {
			if e.rv > after {
				enc.Encode(map[string]any{"type": e.typ, "object": e.obj})
				after = e.rv
			}
		}
		flusher.Flush()
		a.changed.Wait()
	}
	a.mu.Unlock()
}

// apiVersion is the apiVersion of the objects under a collection path.
func apiVersion(path string) string {
	if rest, ok := strings.CutPrefix(path, "/apis/"); ok {
		parts := strings.Split(rest, "/")
		return parts[0] + "/" + parts[1]
	}
	return "v1"
}

// pod is a running pod object with one container port.
func pod(name, ip string, port int, labels map[string]string) map[string]any {
	return map[string]any{
		"kind": "Pod", "apiVersion": "v1",
		"metadata": map[string]any{"name": name, "namespace": "llm", "uid": "uid-" + name, "labels": labels},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "vllm", "image": "vllm/vllm-openai",
			"ports": []any{map[string]any{"name": "http", "containerPort": port, "protocol": "TCP"}}}}},
		"status": map[string]any{"phase": "Running", "podIP": ip, "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}
}

// TestKubernetesSD runs kubernetes_sd (role pod, then endpointslice)
// against the API server stand-in over real HTTP: pods added and deleted
// while it runs, one dropped by relabelling on its app label.
// kubeSD is the config of discovery name reading role objects of the
// namespace llm from the API server at url, with more of its keys (YAML
// lines at the key indent, 4 spaces).
func kubeSD(name, role, url, more string) string {
	return fmt.Sprintf("discovery:\n  - name: %s\n    kubernetes_sd_configs:\n      - role: %s\n"+
		"        api_server: %s\n        namespaces: {names: [llm]}\n", name, role, url) + more
}

func TestKubernetesSD(t *testing.T) {
	const pods = "/api/v1/namespaces/llm/pods"
	api := newKubeAPI(t, map[string]string{pods: "PodList"})
	api.put(pods, pod("vllm-0", "10.1.0.1", 8000, map[string]string{"app": "vllm"}))
	api.put(pods, pod("redis-0", "10.1.0.9", 6379, map[string]string{"app": "redis"}))
	r, _ := run(t, kubeSD("pods", "pod", api.srv.URL, `    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app]
        regex: vllm
        action: keep
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
`))
	ts := waitTargets(t, r, nil, "pods:10.1.0.1:8000")
	wantLabels(t, ts[0].Config.Name, ts[0].Labels, map[string]string{"pod": "vllm-0"})
	api.put(pods, pod("vllm-1", "10.1.0.2", 8000, map[string]string{"app": "vllm"}))
	waitTargets(t, r, nil, "pods:10.1.0.1:8000", "pods:10.1.0.2:8000")
	api.remove(pods, "vllm-0")
	waitTargets(t, r, nil, "pods:10.1.0.2:8000")
	if got := promtest.ToFloat64(r.metrics.dropped.WithLabelValues("pods", DropRelabel)); got != 1 {
		t.Errorf("dropped{relabel} = %v, want 1 (redis-0)", got)
	}
	if got := r.metrics.failures.value("pods"); got != 0 {
		t.Errorf("failures = %v", got)
	}
}

// TestKubernetesSDFailuresCounted: an API server that fails every list
// and watch while kubernetes_sd runs. client-go reports those failures to
// klog, not to the logger the mechanism gets, so they reach
// llmprobe_discovery_failures_total from the mechanism's own counter; the
// last good targets are kept, and a recovered server is followed again.
func TestKubernetesSDFailuresCounted(t *testing.T) {
	const pods = "/api/v1/namespaces/llm/pods"
	api := newKubeAPI(t, map[string]string{pods: "PodList"})
	api.put(pods, pod("vllm-0", "10.1.0.1", 8000, nil))
	var logs lockedBuffer
	r, reg := runWith(t, kubeSD("pods", "pod", api.srv.URL, ""), Options{Slog: slog.New(slog.NewJSONHandler(&logs, nil))})
	t.Cleanup(func() { setClientLogger(nil) }) // klog is process-wide: not into a finished test's buffer
	waitTargets(t, r, nil, "pods:10.1.0.1:8000")
	if got := r.metrics.failures.value("pods"); got != 0 {
		t.Fatalf("failures before the outage = %v", got)
	}
	api.fail(true)
	testutil.Eventually(t, "failed watches counted", func() bool { return r.metrics.failures.value("pods") >= 1 })
	// Exported as the series users read, with its entry's label.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var exported []float64
	for _, mf := range mfs {
		if mf.GetName() == "llmprobe_discovery_failures_total" {
			for _, m := range mf.GetMetric() {
				if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "pods" {
					exported = append(exported, m.GetCounter().GetValue())
				}
			}
		}
	}
	if len(exported) != 1 || exported[0] < 1 {
		t.Errorf("llmprobe_discovery_failures_total{discovery=\"pods\"} = %v, want one series >= 1", exported)
	}
	if got, _ := names(r.Targets(nil)); !slices.Equal(got, []string{"pods:10.1.0.1:8000"}) {
		t.Errorf("targets during the outage = %v, want the last good set", got)
	}
	// client-go's lines in the daemon's logger, not on stderr in klog's
	// format.
	testutil.Eventually(t, "client-go's error in the logger", func() bool {
		return strings.Contains(logs.String(), `"level":"ERROR"`) && strings.Contains(logs.String(), `"client":"client-go"`) &&
			strings.Contains(logs.String(), "etcd is down")
	})
	failed := r.metrics.failures.value("pods")
	api.fail(false)
	api.put(pods, pod("vllm-1", "10.1.0.2", 8000, nil))
	waitTargets(t, r, nil, "pods:10.1.0.1:8000", "pods:10.1.0.2:8000")
	if got := r.metrics.failures.value("pods"); got < failed {
		t.Errorf("failures went down from %v to %v", failed, got)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// endpointSlice is an EndpointSlice of the service vllm with one endpoint
// per pod name -> IP (ready unless listed in notReady), port 8000.
func endpointSlice(ips map[string]string, notReady ...string) map[string]any {
	var eps []any
	for _, name := range slices.Sorted(mapsKeys(ips)) {
		eps = append(eps, map[string]any{"addresses": []string{ips[name]},
			"conditions": map[string]any{"ready": !slices.Contains(notReady, name)},
			"targetRef":  map[string]any{"kind": "Pod", "name": name, "namespace": "llm"}})
	}
	return map[string]any{
		"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
		"metadata": map[string]any{"name": "vllm-x1", "namespace": "llm",
			"labels": map[string]string{"kubernetes.io/service-name": "vllm"}},
		"addressType": "IPv4", "endpoints": eps,
		"ports": []any{map[string]any{"name": "http", "port": 8000, "protocol": "TCP"}},
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestKubernetesEndpointSlices runs kubernetes_sd with role endpointslice
// against the stand-in (endpointslices, services and pods listed and
// watched): the ready endpoints of the service, a replica added, one that
// turns not ready dropped by relabelling.
func TestKubernetesEndpointSlices(t *testing.T) {
	const (
		slices_  = "/apis/discovery.k8s.io/v1/namespaces/llm/endpointslices"
		services = "/api/v1/namespaces/llm/services"
		pods     = "/api/v1/namespaces/llm/pods"
	)
	api := newKubeAPI(t, map[string]string{slices_: "EndpointSliceList", services: "ServiceList", pods: "PodList"})
	api.put(services, map[string]any{"kind": "Service", "apiVersion": "v1",
		"metadata": map[string]any{"name": "vllm", "namespace": "llm", "labels": map[string]string{"app": "vllm"}},
		"spec":     map[string]any{"ports": []any{map[string]any{"name": "http", "port": 8000}}}})
	api.put(pods, pod("vllm-0", "10.1.0.1", 8000, map[string]string{"app": "vllm"}))
	api.put(pods, pod("vllm-1", "10.1.0.2", 8000, map[string]string{"app": "vllm"}))
	api.put(slices_, endpointSlice(map[string]string{"vllm-0": "10.1.0.1"}))
	r, _ := run(t, kubeSD("replicas", "endpointslice", api.srv.URL, `    relabel_configs:
      - source_labels: [__meta_kubernetes_service_name, __meta_kubernetes_endpointslice_endpoint_conditions_ready]
        regex: vllm;true
        action: keep
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
`))
	ts := waitTargets(t, r, nil, "replicas:10.1.0.1:8000")
	wantLabels(t, ts[0].Config.Name, ts[0].Labels, map[string]string{"pod": "vllm-0"})
	api.put(slices_, endpointSlice(map[string]string{"vllm-0": "10.1.0.1", "vllm-1": "10.1.0.2"}))
	waitTargets(t, r, nil, "replicas:10.1.0.1:8000", "replicas:10.1.0.2:8000")
	api.put(slices_, endpointSlice(map[string]string{"vllm-0": "10.1.0.1", "vllm-1": "10.1.0.2"}, "vllm-0"))
	waitTargets(t, r, nil, "replicas:10.1.0.2:8000")
	api.remove(slices_, "vllm-x1")
	waitTargets(t, r, nil)
}
