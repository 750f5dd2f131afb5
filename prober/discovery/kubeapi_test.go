package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
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
	for !a.closed && r.Context().Err() == nil {
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
