package client

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestAttributionOverSimulator sends requests to a simulator that answers
// x-served-by as a gateway over more replicas than the distinct-value
// bound: the header is recorded per request, the x-request-id sent is
// echoed back and recorded, and the values past the bound fold into
// "other".
func TestAttributionOverSimulator(t *testing.T) {
	cfg := simtest.Fast()
	cfg.ServedBy = "replica"
	cfg.ServedByReplicas = prober.MaxAttributionValues + 3
	base, _ := simtest.Start(t, cfg)
	attr, err := NewAttribution([]string{"X-Served-By", "x-absent"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Options{BaseURL: base, Attribution: attr})
	distinct := map[string]int{}
	for i := range cfg.ServedByReplicas {
		id := fmt.Sprintf("attr-test-%d", i)
		rec := do(t, context.Background(), c, Request{ID: id, Prompt: "hello", MaxTokens: 2, IgnoreEOS: true})
		if !rec.OK() {
			t.Fatalf("request %d: %s %s", i, rec.Error, rec.ErrorMessage)
		}
		if rec.RequestIDEcho != id {
			t.Errorf("request %d: echo %q, want the id sent %q", i, rec.RequestIDEcho, id)
		}
		v, ok := rec.Attribution["x-served-by"]
		if !ok || len(rec.Attribution) != 1 {
			t.Fatalf("request %d: attribution %v, want x-served-by only", i, rec.Attribution)
		}
		if rec.Backend != v {
			t.Errorf("request %d: backend %q, want the x-served-by value %q", i, rec.Backend, v)
		}
		distinct[v]++
	}
	if got := distinct[prober.AttributionOther]; got != 3 {
		t.Errorf("%d requests folded into %q, want 3 (values %v)", got, prober.AttributionOther, distinct)
	}
	if len(distinct) != prober.MaxAttributionValues+1 {
		t.Errorf("%d distinct values, want %d and %q", len(distinct), prober.MaxAttributionValues, prober.AttributionOther)
	}
}

// TestAttributionNone: a configured header that never comes back leaves
// the backend "none"; without an Attribution nothing is recorded but the
// echo.
func TestAttributionNone(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	attr, err := NewAttribution([]string{"x-served-by"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []*Attribution{attr, nil} {
		c := newClient(t, Options{BaseURL: base, Attribution: a})
		rec := do(t, context.Background(), c, Request{ID: "none-1", Prompt: "hi", MaxTokens: 1})
		c.CloseIdleConnections()
		want := prober.BackendNone
		if a == nil {
			want = ""
		}
		if !rec.OK() || rec.Backend != want || rec.Attribution != nil || rec.RequestIDEcho != "none-1" {
			t.Errorf("attribution %v: record %s backend %q attribution %v echo %q, want backend %q", a != nil,
				rec.Outcome(), rec.Backend, rec.Attribution, rec.RequestIDEcho, want)
		}
	}
}

func TestAttributionBounds(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"x-a", "X-A"}, `attribution header "X-A" is named twice`},
		{[]string{"x a"}, `header name "x a": character ' ' is not allowed in a header name`},
		{[]string{""}, `header name "": want 1 to 64 characters`},
		{strings.Split("a,b,c,d,e,f,g,h,i", ","), "at most 8 attribution headers, got 9"},
	} {
		if _, err := NewAttribution(tc.names); err == nil || err.Error() != tc.want {
			t.Errorf("NewAttribution(%q) = %v, want %q", tc.names, err, tc.want)
		}
	}
	long := strings.Repeat("é", prober.MaxHeaderValueLen)
	if v := HeaderValue(long, nil); len(v) > prober.MaxHeaderValueLen || !strings.HasPrefix(long, v) || len(v) < prober.MaxHeaderValueLen-1 {
		t.Errorf("HeaderValue cut to %d bytes %q", len(v), v)
	}
	if v := HeaderValue("a\x01b", nil); v != "a?b" {
		t.Errorf("HeaderValue(control) = %q", v)
	}
	if v := HeaderValue("pod-1 sk-s3cr3t-key", nil, "sk-s3cr3t-key"); strings.Contains(v, "s3cr3t") {
		t.Errorf("HeaderValue kept a secret: %q", v)
	}
	a, _ := NewAttribution([]string{"x-served-by"})
	h := http.Header{"X-Served-By": {"pod-1"}}
	var rec prober.Record
	a.record(h, &rec, nil, nil)
	if rec.Backend != "pod-1" {
		t.Errorf("backend %q", rec.Backend)
	}
}
