package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/workload"
)

const testKey = "sk-test-secret-0123456789"

func fastSim() simulator.Config {
	c := simulator.DefaultConfig()
	c.StepBase = time.Millisecond
	c.StepPerSeq = time.Microsecond
	c.StepPerPrefillToken = 0
	return c
}

// simWith serves the simulator over real HTTP through middleware mw (nil:
// none).
func simWith(t *testing.T, cfg simulator.Config, mw func(sim http.Handler) http.Handler) string {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	h := sim.Handler()
	if mw != nil {
		h = mw(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return srv.URL
}

// replace is a middleware that serves some paths itself.
func replace(paths map[string]http.HandlerFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if f, ok := paths[r.URL.Path]; ok {
				f(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// discover is e.Discover, failing the test on an error.
func discover(t *testing.T, e *Endpoint) Info {
	t.Helper()
	info, err := e.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// countAndSend counts a calibration text of words words with sz's
// tokenizer, sends it for out output tokens through e's client of model on
// api (streamed), and returns the count and the request's record.
func countAndSend(t *testing.T, e *Endpoint, sz *Sizing, api, model string, words, out int) (int, *prober.Record) {
	t.Helper()
	text := workload.CalibrationText(words)
	n, err := sz.Tokenizer.Count(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.Client(model)
	if err != nil {
		t.Fatal(err)
	}
	rec := &prober.Record{}
	c.Do(context.Background(), NewRequest(api, "r1", workload.Item{Prompt: text, OutputTokens: out}, true), rec)
	return n, rec
}

func newEndpoint(t *testing.T, o Options) *Endpoint {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.CloseIdleConnections)
	return e
}

// classOf returns the class of an *Error, failing the test for another error.
func classOf(t *testing.T, err error) prober.ErrorClass {
	t.Helper()
	if err == nil {
		return prober.ClassNone
	}
	var ee *Error
	if !errors.As(err, &ee) {
		t.Fatalf("error %v (%T) is not an *endpoint.Error", err, err)
	}
	return ee.Class
}

func TestDiscoverSimulator(t *testing.T) {
	sc := fastSim()
	sc.MaxModelLen = 2048
	base, _ := simtest.Start(t, sc)
	e := newEndpoint(t, Options{BaseURL: base + "/v1/"})
	info := discover(t, e)
	if info.Model != "llmprobe-sim" || !info.Listed || info.MaxModelLen != 2048 || info.Root != "llmprobe-sim" ||
		info.ServerVersion == "" || len(info.Models) != 1 {
		t.Errorf("info = %+v", info)
	}
}

func TestDiscoverModelListShapes(t *testing.T) {
	f := func(name, models, version, configured string, want Info, wantErr error) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+testKey {
					http.Error(w, "no key", http.StatusUnauthorized)
					return
				}
				switch r.URL.Path {
				case "/v1/models":
					fmt.Fprint(w, models)
				case "/version":
					if version == "" {
						http.NotFound(w, r)
						return
					}
					fmt.Fprint(w, version)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			e := newEndpoint(t, Options{BaseURL: srv.URL, Model: configured, APIKey: testKey})
			got, err := e.Discover(context.Background())
			if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			if err != nil && classOf(t, err) != prober.ClassInvalidResponse {
				t.Errorf("class %s, want invalid_response", classOf(t, err))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("info\n got %+v\nwant %+v", got, want)
			}
		})
	}
	f("first model, int max_model_len, root, version",
		`{"data":[{"id":"a","root":"/models/a","max_model_len":8192},{"id":"b"}]}`, `{"version":"0.11.0"}`, "",
		Info{Models: []string{"a", "b"}, Model: "a", Listed: true, Root: "/models/a", MaxModelLen: 8192, MaxModelLenSource: "/v1/models max_model_len", ServerVersion: "0.11.0", Engine: engine.Unknown}, nil)
	f("configured model, string max_model_len",
		`{"data":[{"id":"a"},{"id":"b","max_model_len":"4096"}]}`, `{"version":" 1.2 "}`, "b",
		Info{Models: []string{"a", "b"}, Model: "b", Listed: true, MaxModelLen: 4096, MaxModelLenSource: "/v1/models max_model_len", ServerVersion: "1.2", Engine: engine.Unknown}, nil)
	f("max_model_len absent or not an integer, /version absent",
		`{"data":[{"id":"a","max_model_len":"lots"}]}`, "", "",
		Info{Models: []string{"a"}, Model: "a", Listed: true, Engine: engine.Unknown}, nil)
	f("negative max_model_len, version not a string",
		`{"data":[{"id":"a","max_model_len":-1}]}`, `{"version":7}`, "",
		Info{Models: []string{"a"}, Model: "a", Listed: true, Engine: engine.Unknown}, nil)
	f("no model listed", `{"data":[{"id":""}]}`, `{"version":"1"}`, "",
		Info{Models: []string{}, Engine: engine.Unknown}, ErrNoModel)
	f("configured model not listed", `{"data":[{"id":"a"}]}`, `{"version":"1"}`, "z",
		Info{Models: []string{"a"}, Model: "z", ServerVersion: "1", Engine: engine.Unknown}, ErrModelNotListed)
	f("configured model, empty list", `{"data":[]}`, `{"version":"1"}`, "z",
		Info{Models: []string{}, Model: "z", ServerVersion: "1", Engine: engine.Unknown}, nil)
}

func TestDiscoverFailuresAreClassifiedAndRedacted(t *testing.T) {
	closed := func() string { return "http://" + testutil.RefusedAddr(t) }
	f := func(name string, h http.HandlerFunc, want prober.ErrorClass, wantMsg string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			base := closed()
			if h != nil {
				srv := httptest.NewServer(h)
				defer srv.Close()
				base = srv.URL
			}
			// Only the hanging server needs a short timeout; the others
			// get a long one (the large body took over 300 ms to stream
			// under -race on a busy machine).
			timeout := time.Minute
			if want == prober.ClassTimeout {
				timeout = 300 * time.Millisecond
			}
			e := newEndpoint(t, Options{BaseURL: base, APIKey: testKey, DiscoveryTimeout: timeout})
			info, err := e.Discover(context.Background())
			if err == nil {
				t.Fatalf("no error; info %+v", info)
			}
			if got := classOf(t, err); got != want {
				t.Errorf("class %s (%v), want %s", got, err, want)
			}
			if !strings.Contains(err.Error(), wantMsg) {
				t.Errorf("message %q does not contain %q", err, wantMsg)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("API key in message %q", err)
			}
		})
	}
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "key "+r.Header.Get("Authorization"), code)
		}
	}
	f("401", status(401), prober.ClassHTTP4xx, "GET /v1/models: HTTP 401")
	f("429", status(429), prober.ClassHTTP429, "HTTP 429")
	f("503", status(503), prober.ClassHTTP5xx, "HTTP 503")
	f("redirect names its location and is not followed", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			t.Errorf("redirect followed to %s", r.URL.Path)
		}
		w.Header().Set("Location", "https://login.example/?api_key="+testKey)
		w.WriteHeader(http.StatusFound)
	}, prober.ClassInvalidResponse, "redirect to https://login.example/")
	f("bad JSON", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":`) }, prober.ClassInvalidResponse, "bad JSON")
	f("body too large", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"`+strings.Repeat("x", MaxInfoBodyBytes)+`"}]}`)
	}, prober.ClassInvalidResponse, "larger than")
	f("connection refused", nil, prober.ClassConnect, "GET /v1/models: ")
	hang := make(chan struct{})
	defer close(hang)
	f("timeout", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}, prober.ClassTimeout, "GET /v1/models")
}

func TestDiscoverCanceled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	e := newEndpoint(t, Options{BaseURL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Discover(ctx)
	if classOf(t, err) != prober.ClassCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want canceled", err)
	}
}

func TestPromptSizingUsesServerTokenize(t *testing.T) {
	sc := fastSim()
	sc.MaxModelLen = 1024
	base, _ := simtest.Start(t, sc)
	e := newEndpoint(t, Options{BaseURL: base, API: client.APIChat})
	s, err := e.PromptSizing(context.Background(), "llmprobe-sim")
	if err != nil {
		t.Fatal(err)
	}
	if s.Method() != workload.MethodServerTokenize || s.MaxModelLen() != 1024 || s.Fallback != "" {
		t.Errorf("method %s, max_model_len %d, fallback %q", s.Method(), s.MaxModelLen(), s.Fallback)
	}
	again, _ := e.PromptSizing(context.Background(), "llmprobe-sim")
	if again != s {
		t.Error("success not cached")
	}
}

func TestPromptSizingFallsBackToCalibration(t *testing.T) {
	f := func(name string, tokenize http.HandlerFunc) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			var completions atomic.Int32
			base := simWith(t, fastSim(), func(sim http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					switch r.URL.Path {
					case "/tokenize":
						tokenize(w, r)
						return
					case "/v1/completions":
						completions.Add(1)
					}
					sim.ServeHTTP(w, r)
				})
			})
			e := newEndpoint(t, Options{BaseURL: base, APIKey: testKey})
			s, err := e.PromptSizing(context.Background(), "llmprobe-sim")
			if err != nil {
				t.Fatal(err)
			}
			if s.Method() != workload.MethodCalibrated || s.Fallback == "" || s.MaxModelLen() != 0 {
				t.Errorf("method %s, fallback %q, max_model_len %d", s.Method(), s.Fallback, s.MaxModelLen())
			}
			if strings.Contains(s.Fallback, testKey) {
				t.Errorf("key in fallback reason %q", s.Fallback)
			}
			if n := completions.Load(); n != int32(len(CalibrationWords)) {
				t.Errorf("%d calibration requests, want %d", n, len(CalibrationWords))
			}
			// The calibration sizes prompts close to the server's count.
			n, _ := s.Tokenizer.Count(context.Background(), workload.CalibrationText(100))
			if n < 90 || n > 140 {
				t.Errorf("100 words estimated at %d tokens", n)
			}
		})
	}
	f("404", http.NotFound)
	f("405", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusMethodNotAllowed) })
	f("422 from a foreign /tokenize, echoing the key", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"bad field; auth was `+r.Header.Get("Authorization")+`"}}`, http.StatusUnprocessableEntity)
	})
	f("200 in another shape", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"tokens":"not vllm"}`) })
}

func TestPromptSizingDoesNotFallBack(t *testing.T) {
	f := func(name string, tokenize http.HandlerFunc, want prober.ErrorClass) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			var completions atomic.Int32
			base := simWith(t, fastSim(), replace(map[string]http.HandlerFunc{
				"/tokenize":       tokenize,
				"/v1/completions": func(w http.ResponseWriter, r *http.Request) { completions.Add(1); http.NotFound(w, r) },
			}))
			e := newEndpoint(t, Options{BaseURL: base, APIKey: testKey})
			_, err := e.PromptSizing(context.Background(), "llmprobe-sim")
			if got := classOf(t, err); got != want {
				t.Errorf("class %s (%v), want %s", got, err, want)
			}
			if err != nil && strings.Contains(err.Error(), testKey) {
				t.Errorf("key in message %q", err)
			}
			if completions.Load() != 0 {
				t.Error("fell back to calibration")
			}
		})
	}
	echo := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "bad credentials: "+r.Header.Get("Authorization"), code)
		}
	}
	f("401 echoing the key", echo(401), prober.ClassHTTP4xx)
	f("403", echo(403), prober.ClassHTTP4xx)
	f("429", echo(429), prober.ClassHTTP429)
	f("503", echo(503), prober.ClassHTTP5xx)
	f("redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}, prober.ClassInvalidResponse)
	f("connection reset", func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}, prober.ClassConnect)
}

func TestCalibrationRefusesCountedTokens(t *testing.T) {
	// A server without /tokenize whose streams carry no usage: the client
	// counts the token events, which says nothing about the prompt.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"hi\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	e := newEndpoint(t, Options{BaseURL: srv.URL})
	_, err := e.PromptSizing(context.Background(), "m")
	if classOf(t, err) != prober.ClassInvalidResponse || !strings.Contains(err.Error(), "reports no usage.prompt_tokens") {
		t.Errorf("error %v, want invalid_response about missing usage", err)
	}
}

func TestCalibrationRequestFailureIsClassified(t *testing.T) {
	base := simWith(t, fastSim(), replace(map[string]http.HandlerFunc{
		"/tokenize":       http.NotFound,
		"/v1/completions": func(w http.ResponseWriter, r *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) },
	}))
	e := newEndpoint(t, Options{BaseURL: base})
	_, err := e.PromptSizing(context.Background(), "llmprobe-sim")
	if classOf(t, err) != prober.ClassHTTP5xx || !strings.Contains(err.Error(), "calibration request 1") {
		t.Errorf("error %v, want http_5xx of calibration request 1", err)
	}
}

func TestPromptSizingBackoff(t *testing.T) {
	var calls atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	base := simWith(t, fastSim(), replace(map[string]http.HandlerFunc{"/tokenize": func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"count":1,"max_model_len":64}`)
	}}))
	e := newEndpoint(t, Options{BaseURL: base})
	now := time.Unix(1_700_000_000, 0)
	e.now = func() time.Time { return now }
	ctx := context.Background()
	try := func(wantCalls int32, wantOK bool) {
		t.Helper()
		_, err := e.PromptSizing(ctx, "llmprobe-sim")
		if (err == nil) != wantOK {
			t.Fatalf("at %v: error %v, want ok=%v", now, err, wantOK)
		}
		if got := calls.Load(); got != wantCalls {
			t.Fatalf("at %v: %d /tokenize calls, want %d", now, got, wantCalls)
		}
	}
	try(1, false)
	try(1, false) // cached
	now = now.Add(999 * time.Millisecond)
	try(1, false)
	now = now.Add(2 * time.Millisecond) // past the 1 s backoff
	try(2, false)
	now = now.Add(1500 * time.Millisecond) // the wait doubled to 2 s
	try(2, false)
	now = now.Add(600 * time.Millisecond)
	try(3, false)
	for range 10 { // doubles up to the 1 min cap
		now = now.Add(MaxSizingBackoff)
		calls.Store(0)
		try(1, false)
	}
	if w := e.failures["llmprobe-sim"].wait; w != MaxSizingBackoff {
		t.Errorf("backoff %v, want capped at %v", w, MaxSizingBackoff)
	}
	// Another model is tried at once, backoff or not.
	calls.Store(0)
	if _, err := e.PromptSizing(ctx, "another"); err == nil || calls.Load() != 1 {
		t.Errorf("another model: error %v after %d calls, want a fresh failed try", err, calls.Load())
	}
	// Once the backoff expired a success resets it.
	fail.Store(false)
	calls.Store(0)
	now = now.Add(MaxSizingBackoff)
	try(1, true)
	try(1, true) // success cached
	if f := e.failures["llmprobe-sim"]; f != nil {
		t.Errorf("failure %+v kept after a success", f)
	}
	// A canceled set-up is not cached.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.PromptSizing(cctx, "other"); classOf(t, err) != prober.ClassCanceled {
		t.Errorf("canceled set-up: %v", err)
	}
	if e.failures["other"] != nil {
		t.Error("a canceled set-up was cached")
	}
}

func TestNewRequest(t *testing.T) {
	it := workload.Item{Prompt: "p", PrefixTokens: 10, InputTokens: 54, OutputTokens: 16}
	c := NewRequest(client.APICompletions, "id-1", it, true)
	if c.Prompt != "p" || c.Messages != nil || c.MaxTokens != 16 || !c.IgnoreEOS || c.InputTokens != 64 || c.ID != "id-1" {
		t.Errorf("completions request %+v", c)
	}
	ch := NewRequest(client.APIChat, "id-2", it, false)
	if ch.Prompt != "" || len(ch.Messages) != 1 || ch.Messages[0] != (client.Message{Role: "user", Content: "p"}) ||
		ch.IgnoreEOS || ch.InputTokens != 64 {
		t.Errorf("chat request %+v", ch)
	}
}

func TestRedactAndClient(t *testing.T) {
	e := newEndpoint(t, Options{BaseURL: "http://127.0.0.1:1", APIKey: "plain-key-without-shape"})
	if got := e.Redact("echo plain-key-without-shape and Bearer abcdefgh12345"); strings.Contains(got, "plain-key") || strings.Contains(got, "abcdefgh12345") {
		t.Errorf("Redact left a secret: %q", got)
	}
	a, err := e.Client("m")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := e.Client("m"); b != a {
		t.Error("client for the same model rebuilt")
	}
	if b, _ := e.Client("n"); b == a {
		t.Error("client for another model reused")
	}
	if _, err := New(Options{BaseURL: "ftp://x"}); err == nil {
		t.Error("bad base URL accepted")
	}
	if _, err := New(Options{BaseURL: "http://x", API: "images"}); err == nil {
		t.Error("bad API accepted")
	}
}

func TestSameHost(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"http://vllm:8000/metrics", "http://vllm:8000", true},
		{"http://VLLM:8000/metrics", "http://vllm:8000", true},
		{"http://vllm:9000/metrics", "http://vllm:8000", false},
		{"https://vllm:8000/metrics", "http://vllm:8000", false},
		{"http://exporter:8000/metrics", "http://vllm:8000", false},
	} {
		if got := sameHost(tc.a, tc.b); got != tc.want {
			t.Errorf("sameHost(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
