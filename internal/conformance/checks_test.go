package conformance_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// TestCorpusMetrics scrapes each corpus /metrics over HTTP, as a sweep and
// the daemon do: the format is the one the Content-Type names, the engine
// is detected from the names, the idle proof is known, and every figure
// the adapter reads is the one the file holds (or unknown where the
// engine's release lacks its metric).
func TestCorpusMetrics(t *testing.T) {
	for _, m := range loadCorpus(t) {
		if m.Metrics == nil {
			continue
		}
		t.Run(m.name(), func(t *testing.T) {
			base := serve(t, m, nil, nil)
			snap, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics")
			if err != nil {
				t.Fatalf("scrape: %v", err)
			}
			wantFormat := scrape.FormatText
			if strings.HasPrefix(m.Metrics.ContentType, "application/openmetrics-text") {
				wantFormat = scrape.FormatOpenMetrics
			}
			if snap.Format != wantFormat {
				t.Errorf("format %s, want %s", snap.Format, wantFormat)
			}
			// The same bytes read back as an artifact parse to the same families.
			again, err := scrape.NewSnapshot(time.Now(), m.read(t, m.Metrics.File))
			if err != nil {
				t.Fatalf("NewSnapshot: %v", err)
			}
			if got, want := signatures(again), signatures(snap); !maps.Equal(got, want) {
				t.Errorf("NewSnapshot families differ from the scrape's: %v vs %v", got, want)
			}
			checkExposition(t, m, snap)
			// The same families as Go servers send them (length-delimited
			// protobuf, negotiated first) read the same.
			pb := protobufOf(t, snap)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
				_, _ = w.Write(pb)
			}))
			defer srv.Close()
			psnap, err := scrape.Fetch(context.Background(), http.DefaultClient, srv.URL)
			if err != nil {
				t.Fatalf("scrape protobuf: %v", err)
			}
			if psnap.Format != scrape.FormatProtobuf {
				t.Errorf("format %s, want protobuf", psnap.Format)
			}
			if got, want := signatures(psnap), signatures(snap); !maps.Equal(got, want) {
				t.Errorf("protobuf families differ from the exposition's: %v vs %v", got, want)
			}
			checkExposition(t, m, psnap)
		})
	}
}

// checkExposition holds a scraped corpus exposition to its manifest: the
// engine is detected from the names, the idle proof is known, and every
// figure the adapter reads is the one the file holds (or unknown where the
// engine's release lacks its metric).
func checkExposition(t *testing.T, m *manifest, snap *scrape.Snapshot) {
	t.Helper()
	eng, ok := engine.FromMetrics(snap)
	if !ok || string(eng.Name()) != m.Expect.Engine {
		t.Fatalf("detected %q (ok %v), want %q", eng.Name(), ok, m.Expect.Engine)
	}
	if idle, known := eng.Idle(snap); !known || !idle {
		t.Errorf("idle proof: idle=%v known=%v, want an idle server known to be idle", idle, known)
	}
	for q, want := range m.Expect.Quantities {
		v := eng.Read(snap, engine.Quantity(q))
		if !v.Known || math.Abs(v.Value-want) > 1e-9*math.Max(1, want) {
			t.Errorf("%s = %v (known %v), want %v", q, v.Value, v.Known, want)
		}
	}
	for _, q := range m.Expect.Unknown {
		if v := eng.Read(snap, engine.Quantity(q)); v.Known {
			t.Errorf("%s = %v, want unknown: this release does not export %v", q, v.Value, eng.Source(engine.Quantity(q)))
		}
	}
	for _, l := range engine.Latencies {
		want, listed := m.Expect.Latencies[string(l)]
		h, ok := eng.Histogram(snap, l)
		switch {
		case !listed && ok:
			t.Errorf("latency %s read from %v, but the manifest lists none", l, eng.LatencySource(l))
		case listed && !ok:
			t.Errorf("latency %s not read (sources %v)", l, eng.LatencySource(l))
		case listed && h.Count() != float64(want):
			t.Errorf("latency %s count %v, want %d", l, h.Count(), want)
		}
	}
	if eng.HasConfigLabels() {
		labels := eng.ConfigLabels(snap)
		for k, v := range m.Expect.Config {
			if labels[k] != v {
				t.Errorf("config %s = %q, want %q", k, labels[k], v)
			}
		}
		// The fingerprint reads the same labels from the raw exposition.
		fp := fingerprint.EngineConfig(snap.Raw)
		for k, v := range labels {
			if fp[k] != v {
				t.Errorf("fingerprint config %s = %q, scrape says %q", k, fp[k], v)
			}
		}
	}
}

// protobufOf encodes the families of snap as length-delimited protobuf,
// in name order.
func protobufOf(t *testing.T, snap *scrape.Snapshot) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, n := range slices.Sorted(maps.Keys(snap.Families)) {
		if err := enc.Encode(snap.Families[n]); err != nil {
			t.Fatalf("encode %s: %v", n, err)
		}
	}
	return buf.Bytes()
}

// TestCorpusDiscover runs discovery against each corpus server: the
// engine (from /metrics, else its own endpoints), version, context length
// and engine configuration are the files'.
func TestCorpusDiscover(t *testing.T) {
	for _, m := range loadCorpus(t) {
		t.Run(m.name(), func(t *testing.T) {
			info := discover(t, serve(t, m, nil, nil), m.Model)
			e := m.Expect
			if string(info.Engine) != e.Engine || info.EngineSource != e.EngineSource {
				t.Errorf("engine %q from %q, want %q from %q", info.Engine, info.EngineSource, e.Engine, e.EngineSource)
			}
			if info.ServerVersion != e.ServerVersion {
				t.Errorf("server version %q, want %q", info.ServerVersion, e.ServerVersion)
			}
			if info.MaxModelLen != e.MaxModelLen || info.MaxModelLenSource != e.MaxModelLenSource {
				t.Errorf("max_model_len %d from %q, want %d from %q", info.MaxModelLen, info.MaxModelLenSource, e.MaxModelLen, e.MaxModelLenSource)
			}
			for k, v := range e.Config {
				if info.EngineConfig[k] != v {
					t.Errorf("engine config %s = %q, want %q (all: %v)", k, info.EngineConfig[k], v, info.EngineConfig)
				}
			}
			if len(info.EngineNotes) > 0 {
				t.Errorf("every info endpoint is served, yet: %q", info.EngineNotes)
			}
			if m.NoMetrics != "" {
				if reason := engine.Get(info.Engine).NoMetricsReason(); reason == "" {
					t.Errorf("engine %s has no /metrics, but its adapter gives no reason", info.Engine)
				}
			}
		})
	}
}

// request is the probe request of a corpus stream.
func request(s streamCase) client.Request {
	r := client.Request{ID: "corpus", MaxTokens: 5}
	if s.API == client.APIChat || s.API == client.APIMessages {
		r.Messages = []client.Message{{Role: "user", Content: "What is the capital of France?"}}
	} else {
		r.Prompt = "The capital of France is"
	}
	if s.Tool != "" {
		r.Tools = []client.Tool{{Name: s.Tool, Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
		r.ToolChoice = "auto"
	}
	return r
}

// TestCorpusStreams reads each corpus stream with the streaming client:
// the request succeeds, usage is read, the finish reason, reasoning tokens
// and tool calls are the stream's.
func TestCorpusStreams(t *testing.T) {
	for _, m := range loadCorpus(t) {
		for _, s := range slices.Concat(m.Streams, m.MessagesStreams) {
			t.Run(m.name()+"/"+s.File, func(t *testing.T) {
				base := serve(t, m, &s, nil)
				c, err := client.New(client.Options{BaseURL: base, API: s.API, Model: m.Model, Timeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				rec := &prober.Record{}
				c.Do(context.Background(), request(s), rec)
				if rec.Error != prober.ClassNone {
					t.Fatalf("error %s: %s", rec.Error, rec.ErrorMessage)
				}
				if rec.PromptTokens != s.PromptTokens || rec.CompletionTokens != s.CompletionTokens {
					t.Errorf("usage %d prompt + %d completion, want %d + %d", rec.PromptTokens, rec.CompletionTokens,
						s.PromptTokens, s.CompletionTokens)
				}
				if rec.FinishReason != s.FinishReason {
					t.Errorf("finish reason %q, want %q", rec.FinishReason, s.FinishReason)
				}
				if rec.ReasoningTokens != s.ReasoningTokens {
					t.Errorf("reasoning tokens %d, want %d", rec.ReasoningTokens, s.ReasoningTokens)
				}
				if rec.ToolCalls != s.ToolCalls {
					t.Errorf("tool calls %d, want %d", rec.ToolCalls, s.ToolCalls)
				}
				if s.ToolCalls == 0 && rec.TTFT <= 0 {
					t.Errorf("no TTFT recorded for a stream with text")
				}
			})
		}
	}
}

// TestCorpusErrors sends a request to each corpus error body: the class is
// the status's and the message is the engine's own, read from its shape.
func TestCorpusErrors(t *testing.T) {
	for _, m := range loadCorpus(t) {
		for _, e := range m.Errors {
			t.Run(m.name()+"/"+e.File, func(t *testing.T) {
				base := serve(t, m, nil, &e)
				c, err := client.New(client.Options{BaseURL: base, API: client.APIChat, Model: m.Model, Timeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				rec := &prober.Record{}
				c.Do(context.Background(), request(streamCase{API: client.APIChat}), rec)
				if rec.Error != prober.ClassForStatus(e.Status) || rec.HTTPStatus != e.Status {
					t.Errorf("class %q status %d, want %q %d", rec.Error, rec.HTTPStatus, prober.ClassForStatus(e.Status), e.Status)
				}
				if !strings.Contains(rec.ErrorMessage, e.Message) {
					t.Errorf("message %q does not hold the engine's %q", rec.ErrorMessage, e.Message)
				}
			})
		}
	}
}

// TestCorpusInfoErrors serves each corpus with one info endpoint failing
// as the engine fails it (its own status and body): discovery still
// succeeds, the engine is still known, and Info.EngineNotes names the call,
// the status and its class, so that the fingerprint's field is
// not-recorded with that reason.
func TestCorpusInfoErrors(t *testing.T) {
	for _, m := range loadCorpus(t) {
		for call, ec := range m.InfoErrors {
			t.Run(m.name()+"/"+call, func(t *testing.T) {
				method, path, ok := strings.Cut(call, " ")
				if !ok {
					t.Fatalf("info_errors key %q is not \"METHOD /path\"", call)
				}
				body := m.read(t, ec.File)
				if !strings.Contains(string(body), ec.Message) {
					t.Fatalf("%s does not hold %q", ec.File, ec.Message)
				}
				// The failing route replaces the corpus's own.
				mc := *m
				mc.Routes, mc.Posts = without(m.Routes, method == http.MethodGet, path), without(m.Posts, method == http.MethodPost, path)
				info := discover(t, serveWith(t, &mc, call, ec.Status, body), m.Model)
				if string(info.Engine) != m.Expect.Engine {
					t.Errorf("engine %q, want %q", info.Engine, m.Expect.Engine)
				}
				want := fmt.Sprintf("%s: HTTP %d %s (%s)", call, ec.Status, http.StatusText(ec.Status), prober.ClassForStatus(ec.Status))
				if len(info.EngineNotes) != 1 || info.EngineNotes[0] != want {
					t.Errorf("engine notes %q, want [%q]", info.EngineNotes, want)
				}
			})
		}
	}
}

// without returns routes less path when drop is set.
func without(routes map[string]string, drop bool, path string) map[string]string {
	out := map[string]string{}
	for p, f := range routes {
		if !drop || p != path {
			out[p] = f
		}
	}
	return out
}

// serveWith is serve with one more route, call ("METHOD /path"),
// answering status and body.
func serveWith(t *testing.T, m *manifest, call string, status int, body []byte) string {
	t.Helper()
	base := serve(t, m, nil, nil)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := simtest.Proxy(target)
	mux := http.NewServeMux()
	mux.HandleFunc(call, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	mux.Handle("/", proxy)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// discover runs endpoint discovery against base for model.
func discover(t *testing.T, base, model string) endpoint.Info {
	t.Helper()
	ep, err := endpoint.New(endpoint.Options{BaseURL: base, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	info, err := ep.Discover(context.Background())
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	return info
}
