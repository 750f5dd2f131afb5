package manager_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	ltestutil "github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// The fault matrix (docs/reliability.md): every way a serving endpoint can
// fail, each against a daemon (a Manager with a real config, the real
// probe metrics, a debug logger) probing a faulty target beside a healthy
// control target. For each scenario the test checks
//
//   - the class of every record of the faulty target before it heals;
//   - that the daemon still probes afterwards: once the fault is gone (the
//     server heals, or a reload points the target at a good server) the
//     faulty target records a success, and the control target records
//     successes sent after the fault records;
//   - memory: the heap after the scenario (daemon stopped, servers closed,
//     GC) is within faultHeapAfter of the heap before, and the heap sampled
//     during it stays within faultHeapPeak (a 50 MB answer is never held);
//   - no goroutine is left once the daemon and the servers stopped (goleak);
//   - for every scenario, that the API key appears in no record, log line
//     (debug included), status page data or metric, although the echo
//     scenario's server puts it in every answer.
//
// The timeouts are short (faultTarget) so that the whole matrix takes a few
// seconds.

// Memory bounds of one fault scenario, in bytes of Go heap.
const (
	// faultHeapAfter bounds HeapAlloc after the scenario (everything
	// stopped, after runtime.GC) minus HeapAlloc before it.
	faultHeapAfter = 8 << 20
	// faultHeapPeak bounds the highest HeapAlloc sampled during the
	// scenario minus HeapAlloc before it: well under the 50 MB bodies.
	faultHeapPeak = 40 << 20
)

// faultKey is the API key of every target: recognisable in any output.
const faultKey = "sk-llmprobe-fault-matrix-7f3a9c"

// faultTarget is the faulty target's config; %s is its base URL, %s its
// settings (faultSettings and the scenario's). Probes send 4-token prompts
// for 2 output tokens.
const faultTarget = `
  - name: fault
    base_url: %s
    api_key_env: LLMPROBE_FAULT_KEY
%s    probes:
      - name: p
        rate: 20
        arrival: constant
        max_concurrency: 8
        workload: {input_tokens: {dist: fixed, value: 4}, output_tokens: {dist: fixed, value: 2}}
`

// faultSettings are the faulty target's default timeouts: short, so the
// matrix is quick.
var faultSettings = map[string]string{"timeout": "5s", "ttft_timeout": "1s", "stall_timeout": "500ms"}

// settingsYAML renders faultSettings overridden by extra, one key a line.
func settingsYAML(extra map[string]string) string {
	m := maps.Clone(faultSettings)
	maps.Copy(m, extra)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "    %s: %s\n", k, m[k])
	}
	return b.String()
}

// controlTarget probes a healthy simulator beside the faulty one.
const controlTarget = `
  - name: control
    base_url: %s
    api_key_env: LLMPROBE_FAULT_KEY
    probes:
      - name: p
        rate: 20
        arrival: constant
        workload: {input_tokens: {dist: fixed, value: 4}, output_tokens: {dist: fixed, value: 2}}
`

// faultEnv is what a scenario's setup gets: a simulator of its own and a
// server in front of it whose generation path the scenario may take over.
type faultEnv struct {
	t      *testing.T
	sim    *simulator.Simulator
	simURL string // the simulator itself (healthy unless the scenario sets faults)
	front  string // the front server: the scenario's handler while faulty, else the simulator
	faulty atomic.Bool
	mu     sync.Mutex
	gen    http.HandlerFunc // the generation path while faulty
	all    http.HandlerFunc // every path while faulty
}

// generation makes the front server answer /v1/completions with h until
// the scenario heals.
func (e *faultEnv) generation(h http.HandlerFunc) string {
	e.mu.Lock()
	e.gen = h
	e.mu.Unlock()
	return e.front
}

// everything makes the front server answer every path with h until the
// scenario heals.
func (e *faultEnv) everything(h http.HandlerFunc) string {
	e.mu.Lock()
	e.all = h
	e.mu.Unlock()
	return e.front
}

func (e *faultEnv) handlers() (gen, all http.HandlerFunc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.gen, e.all
}

// simFaults makes the simulator itself faulty until the scenario heals.
func (e *faultEnv) simFaults(set func(f *simulator.Faults)) string {
	f := simulator.DefaultFaults()
	set(&f)
	e.sim.SetFaults(f)
	return e.simURL
}

// faultScenario is one row of the matrix.
type faultScenario struct {
	name string
	// setup starts the fault and returns the faulty target's base URL.
	setup func(e *faultEnv) string
	// extra overrides or adds settings of the faulty target.
	extra map[string]string
	// want are the classes its records may have before it heals
	// (prober.ClassNone: success); each of them must occur.
	want []prober.ErrorClass
	// n is how many records of the faulty target to check (default 3).
	n int
	// reload heals by a reload pointing the target at the simulator
	// (faults in the address itself); otherwise the server heals.
	reload bool
	// check, when set, checks each record further.
	check func(t *testing.T, r *prober.Record)
}

func TestFaultMatrix(t *testing.T) {
	t.Setenv("LLMPROBE_FAULT_KEY", faultKey)
	for _, sc := range faultScenarios() {
		t.Run(sc.name, func(t *testing.T) { runFaultScenario(t, sc) })
	}
}

func runFaultScenario(t *testing.T, sc faultScenario) {
	// Registered first, so it runs last: after the daemon, the servers
	// and the simulator stopped.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	before := heapAlloc()
	sampler := startHeapSampler()
	t.Cleanup(func() { sampler.stop() })

	env := newFaultEnv(t)
	base := sc.setup(env)
	env.faulty.Store(true)

	logs := &ltestutil.SyncBuffer{}
	reg := prometheus.NewRegistry()
	col := newCollector()
	m := manager.New(manager.Options{
		Logger:    log.NewLogfmtLogger(logs), // every level, debug included
		Observers: []manager.Observer{probemetrics.New(reg), col},
	})
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			m.Stop()
		}
	}
	defer stop()
	yml := func(faultURL string, extra map[string]string) string {
		return "targets:" + fmt.Sprintf(faultTarget, faultURL, settingsYAML(extra)) + fmt.Sprintf(controlTarget, env.simURL)
	}
	if err := m.Apply(context.Background(), parse(t, yml(base, sc.extra))); err != nil {
		t.Fatal(err)
	}

	n := sc.n
	if n == 0 {
		n = 3
	}
	evs := col.waitFor(t, 15*time.Second, fmt.Sprintf("%d records of the faulty target", n), func(evs []event) bool {
		return len(ofTarget(evs, "fault")) >= n
	})
	faultRecs := ofTarget(evs, "fault")
	seen := map[prober.ErrorClass]int{}
	for _, r := range faultRecs {
		seen[r.Error]++
		if !slices.Contains(sc.want, r.Error) {
			t.Errorf("record %s: class %q (%s), want one of %q", r.RequestID, r.Error, r.ErrorMessage, sc.want)
			continue
		}
		if len(r.ErrorMessage) > 300 {
			t.Errorf("record %s: error message of %d bytes: %.80q...", r.RequestID, len(r.ErrorMessage), r.ErrorMessage)
		}
		if sc.check != nil {
			sc.check(t, r)
		}
	}
	for _, c := range sc.want {
		if seen[c] == 0 {
			t.Errorf("no record of class %q among %d (classes seen: %v)", c, len(faultRecs), seen)
		}
	}

	// The daemon goes on: the fault heals, the faulty target recovers, the
	// control target kept probing through it.
	healAt := time.Now()
	env.faulty.Store(false)
	env.sim.SetFaults(simulator.DefaultFaults())
	if sc.reload {
		if err := m.Apply(context.Background(), parse(t, yml(env.simURL, sc.extra))); err != nil {
			t.Fatalf("reload: %v", err)
		}
	}
	col.waitFor(t, 15*time.Second, "a success of each target sent after the fault", func(evs []event) bool {
		ok := map[string]bool{}
		for _, e := range evs {
			if e.Record.OK() && e.Record.Sent.After(healAt) {
				ok[e.Record.Target] = true
			}
		}
		return ok["fault"] && ok["control"]
	})

	status := fmt.Sprintf("%+v", m.Status())
	stop()
	checkNoKey(t, "logs", logs.String())
	checkNoKey(t, "status page data", status)
	checkNoKey(t, "/metrics", exposition(t, reg))
	for _, e := range col.snapshot() {
		b, _ := json.Marshal(e.Record)
		checkNoKey(t, "record "+e.Record.RequestID, string(b))
	}

	// Memory: nothing of the scenario is kept, and nothing big was held.
	peak := sampler.stop()
	after := heapAlloc()
	t.Logf("heap before %s, peak %s, after %s", mib(before), mib(peak), mib(after))
	if after > before+faultHeapAfter {
		t.Errorf("heap after the scenario %s, before %s: grew more than %s", mib(after), mib(before), mib(faultHeapAfter))
	}
	if peak > before+faultHeapPeak {
		t.Errorf("heap peaked at %s during the scenario, before %s: more than %s above", mib(peak), mib(before), mib(faultHeapPeak))
	}
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	e := &faultEnv{t: t}
	e.simURL, e.sim = simtest.Start(t, fastSim())
	simH := e.sim.Handler()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gen, all := e.handlers()
		switch {
		case e.faulty.Load() && all != nil:
			all(w, r)
		case e.faulty.Load() && gen != nil && r.URL.Path == "/v1/completions":
			gen(w, r)
		default:
			simH.ServeHTTP(w, r)
		}
	}))
	e.front = front.URL
	t.Cleanup(front.Close)
	return e
}

func ofTarget(evs []event, target string) []*prober.Record {
	var out []*prober.Record
	for _, e := range evs {
		if e.Record.Target == target {
			out = append(out, e.Record)
		}
	}
	return out
}

func checkNoKey(t *testing.T, where, s string) {
	t.Helper()
	if i := strings.Index(s, faultKey); i >= 0 {
		lo, hi := max(0, i-120), min(len(s), i+len(faultKey)+40)
		t.Errorf("the API key is in the %s: ...%s...", where, s[lo:hi])
	}
}

// exposition is g's /metrics page as the daemon's handler serves it.
func exposition(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	srv := httptest.NewServer(web.NewHandler(web.Options{Gatherer: g}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func mib(b uint64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }

// heapSampler records the highest HeapAlloc seen every 10 ms. It measures;
// nothing waits on it.
type heapSampler struct {
	once sync.Once
	quit chan struct{}
	done chan uint64
	peak uint64
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{quit: make(chan struct{}), done: make(chan uint64, 1)}
	go func() {
		var peak uint64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-s.quit:
				s.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling (idempotent) and returns the peak.
func (s *heapSampler) stop() uint64 {
	s.once.Do(func() { close(s.quit); s.peak = <-s.done })
	return s.peak
}

// Handlers of the scenarios.

func sseHeaders(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// tokenEvent is a vLLM completions chunk of one token.
const tokenEvent = `data: {"id":"cmpl-f","object":"text_completion","model":"llmprobe-sim","choices":[{"index":0,"text":" a","finish_reason":null}]}` + "\n\n"

const doneEvent = "data: [DONE]\n\n"

func writeFlush(w http.ResponseWriter, s string) bool {
	if _, err := io.WriteString(w, s); err != nil {
		return false
	}
	return http.NewResponseController(w).Flush() == nil
}

// status answers code with a content type and body.
func statusPage(code int, ct, body string, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// hugeBody answers 200 (or code) with n bytes made of block repeated.
func hugeBody(code int, ct string, head, block string, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(code)
		big := []byte(strings.Repeat(block, max(1, (64<<10)/len(block))))
		written, _ := io.WriteString(w, head)
		for written < n {
			k, err := w.Write(big)
			if err != nil {
				return // the client gave up: what the scenario expects
			}
			written += k
		}
	}
}

// resetMidStream sends headers and a token event, then resets the TCP
// connection (RST).
func resetMidStream(w http.ResponseWriter, r *http.Request) {
	sseHeaders(w, r)
	writeFlush(w, tokenEvent)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// echo modes: what the generation path or /tokenize answer (every answer
// echoes the key).
const (
	echo401        = "401"         // 401 with the Authorization header in the body
	echoErrorEvent = "error-event" // 200, a token, then an error event holding the key
	echoSim        = "sim"         // the simulator's answer (with the echoing headers)
)

// echoServer puts the Authorization header it receives everywhere it can:
// response headers (every answer), error bodies, SSE error events,
// /v1/models fields (the model id too with modelIsKey), /version,
// /tokenize errors, /metrics label values.
func echoServer(e *faultEnv, gen, tokenize string, modelIsKey bool) http.HandlerFunc {
	sim := e.sim.Handler()
	return func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		key := strings.TrimPrefix(auth, "Bearer ")
		w.Header().Set("X-Echo-Authorization", auth)
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+key+`"`)
		mode := echoSim
		switch r.URL.Path {
		case "/v1/models":
			id := "llmprobe-sim"
			if modelIsKey {
				id = "model-" + key
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","root":%q,"owned_by":%q,"max_model_len":8192}]}`, id, auth, key)
			return
		case "/version":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"version":%q}`, "0.1 "+key)
			return
		case "/metrics":
			fmt.Fprintf(w, "vllm:num_requests_running{model_name=%q} 0\n", key)
			return
		case "/tokenize":
			mode = tokenize
		case "/v1/completions":
			mode = gen
		}
		switch mode {
		case echo401:
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, `{"error":{"message":"invalid api key: `+auth+`","type":"AuthenticationError","code":401}}`, http.StatusUnauthorized)
		case echoErrorEvent:
			sseHeaders(w, r)
			writeFlush(w, tokenEvent)
			writeFlush(w, `data: {"error":{"message":"key `+key+` revoked (`+auth+`)","code":403}}`+"\n\n")
		default:
			sim.ServeHTTP(w, r)
		}
	}
}

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = io.WriteString(zw, s)
	_ = zw.Close()
	return b.String()
}

func faultScenarios() []faultScenario {
	classes := func(c ...prober.ErrorClass) []prober.ErrorClass { return c }
	wantMsg := func(sub string) func(t *testing.T, r *prober.Record) {
		return func(t *testing.T, r *prober.Record) {
			t.Helper()
			if !strings.Contains(r.ErrorMessage, sub) {
				t.Errorf("record %s: message %q does not contain %q", r.RequestID, r.ErrorMessage, sub)
			}
		}
	}
	return []faultScenario{
		{
			name:  "429 with Retry-After (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.HTTP429 = 1 }) },
			want:  classes(prober.ClassHTTP429), check: wantMsg("429"),
		},
		{
			name: "429 without Retry-After",
			setup: func(e *faultEnv) string {
				return e.generation(statusPage(429, "application/json", `{"error":{"message":"slow down","code":429}}`))
			},
			want: classes(prober.ClassHTTP429), check: wantMsg("slow down"),
		},
		{
			name:  "500 (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.HTTP500 = 1 }) },
			want:  classes(prober.ClassHTTP5xx), check: wantMsg("500"),
		},
		{
			name:  "503 (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.HTTP503 = 1 }) },
			want:  classes(prober.ClassHTTP5xx), check: wantMsg("503"),
		},
		{
			name: "connection refused",
			setup: func(e *faultEnv) string {
				return "http://" + testutil.RefusedAddr(e.t)
			},
			want: classes(prober.ClassConnect), reload: true, check: wantMsg("refused"),
		},
		{
			name:  "connection reset before the response (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.ConnectionReset = 1 }) },
			want:  classes(prober.ClassConnect),
		},
		{
			name:  "connection reset mid-stream",
			setup: func(e *faultEnv) string { return e.generation(resetMidStream) },
			want:  classes(prober.ClassStream), check: wantMsg("reset"),
		},
		{
			name: "TLS handshake failure (untrusted certificate)",
			setup: func(e *faultEnv) string {
				srv := httptest.NewTLSServer(e.sim.Handler())
				e.t.Cleanup(srv.Close)
				return srv.URL
			},
			want: classes(prober.ClassConnect), reload: true, check: wantMsg("certificate"),
		},
		{
			name:  "DNS failure (.invalid)",
			setup: func(e *faultEnv) string { return "http://llmprobe-fault-matrix.invalid:8000" },
			want:  classes(prober.ClassConnect), reload: true,
		},
		{
			name: "stall before the first token (simulator)",
			setup: func(e *faultEnv) string {
				return e.simFaults(func(f *simulator.Faults) { f.StallBeforeFirstToken = 1 })
			},
			want: classes(prober.ClassTTFTTimeout),
		},
		{
			name: "stall mid-stream (simulator)",
			setup: func(e *faultEnv) string {
				return e.simFaults(func(f *simulator.Faults) { f.StallMidStream = 1 })
			},
			want: classes(prober.ClassStall),
		},
		{
			name:  "hang: headers, never a token (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.Hang = 1 }) },
			want:  classes(prober.ClassTTFTTimeout),
		},
		{
			name:  "cut without [DONE] (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.CutStream = 1 }) },
			want:  classes(prober.ClassStream), check: wantMsg("before [DONE]"),
		},
		{
			name:  "empty chat answer: role chunk, then [DONE] (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.EmptyAnswer = 1 }) },
			extra: map[string]string{"api": "chat"},
			want:  classes(prober.ClassInvalidResponse), check: wantMsg("empty answer"),
		},
		{
			name:  "malformed JSON event (simulator)",
			setup: func(e *faultEnv) string { return e.simFaults(func(f *simulator.Faults) { f.MalformedEvent = 1 }) },
			want:  classes(prober.ClassStream), check: wantMsg("malformed"),
		},
		{
			name: "error event mid-stream",
			setup: func(e *faultEnv) string {
				return e.generation(func(w http.ResponseWriter, r *http.Request) {
					sseHeaders(w, r)
					writeFlush(w, tokenEvent)
					writeFlush(w, "event: error\ndata: {\"error\":{\"message\":\"engine dead\",\"code\":500}}\n\n")
				})
			},
			want: classes(prober.ClassStream), check: wantMsg("engine dead"),
		},
		{
			name: "wrong content type (200 application/json)",
			setup: func(e *faultEnv) string {
				return e.generation(statusPage(200, "application/json", `{"choices":[{"text":"a"}]}`))
			},
			want: classes(prober.ClassInvalidResponse), check: wantMsg("content type"),
		},
		{
			name: "HTML error page (502 from a proxy)",
			setup: func(e *faultEnv) string {
				return e.generation(statusPage(502, "text/html", "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>"+strings.Repeat("<p>nginx</p>", 2000)+"</body></html>"))
			},
			want: classes(prober.ClassHTTP5xx), check: wantMsg("502"),
		},
		{
			name: "HTML page with 200 (captive portal)",
			setup: func(e *faultEnv) string {
				return e.generation(statusPage(200, "text/html", "<html><body>log in first</body></html>"))
			},
			want: classes(prober.ClassInvalidResponse), check: wantMsg("text/html"),
		},
		{
			name: "unsolicited gzip body",
			setup: func(e *faultEnv) string {
				body := gzipped(tokenEvent + tokenEvent + doneEvent)
				return e.generation(statusPage(200, "text/event-stream", body, "Content-Encoding", "gzip"))
			},
			want: classes(prober.ClassInvalidResponse), check: wantMsg("gzip"),
		},
		{
			name: "50 MB event (one data line)",
			setup: func(e *faultEnv) string {
				return e.generation(hugeBody(200, "text/event-stream", `data: {"choices":[{"text":"`, "x", 50<<20))
			},
			want: classes(prober.ClassInvalidResponse), check: wantMsg("too large"),
		},
		{
			name: "50 MB of token events (over max_body_bytes)",
			setup: func(e *faultEnv) string {
				return e.generation(hugeBody(200, "text/event-stream", "", tokenEvent, 50<<20))
			},
			// Reading 2 MiB of events takes a while under -race on a
			// loaded machine: no timer may fire first.
			extra: map[string]string{"max_body_bytes": "2MiB", "timeout": "20s", "ttft_timeout": "10s", "stall_timeout": "10s"},
			want:  classes(prober.ClassStream), check: wantMsg("too large"),
		},
		{
			name: "50 MB error body",
			setup: func(e *faultEnv) string {
				return e.generation(hugeBody(500, "text/plain", "internal error\n", "y", 50<<20))
			},
			want: classes(prober.ClassHTTP5xx), check: wantMsg("internal error"),
		},
		{
			name: "1-byte drip (simulator)",
			setup: func(e *faultEnv) string {
				return e.simFaults(func(f *simulator.Faults) { f.SlowDrip = 1; f.SlowDripInterval = 100 * time.Microsecond })
			},
			extra: map[string]string{"timeout": "10s", "ttft_timeout": "5s", "stall_timeout": "5s"},
			want:  classes(prober.ClassNone), n: 2,
			check: func(t *testing.T, r *prober.Record) {
				// About 600 bytes at one per 100 µs or more: the drip
				// really happened and was measured.
				if r.E2E < 20*time.Millisecond || r.Events == 0 {
					t.Errorf("record %s: E2E %v with %d events: no drip", r.RequestID, r.E2E, r.Events)
				}
			},
		},
		{
			name: "endless stream",
			setup: func(e *faultEnv) string {
				return e.generation(func(w http.ResponseWriter, r *http.Request) {
					sseHeaders(w, r)
					tick := time.NewTicker(5 * time.Millisecond)
					defer tick.Stop()
					for writeFlush(w, tokenEvent) {
						select {
						case <-tick.C:
						case <-r.Context().Done():
							return
						}
					}
				})
			},
			extra: map[string]string{"timeout": "1s"},
			want:  classes(prober.ClassTimeout),
		},
		{
			name: "redirect loop",
			setup: func(e *faultEnv) string {
				return e.everything(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
				})
			},
			want: classes(prober.ClassInvalidResponse), check: wantMsg("redirect"),
		},
		{
			name:  "server echoing the key everywhere: 401 on requests",
			setup: func(e *faultEnv) string { return e.everything(echoServer(e, echo401, echoSim, false)) },
			want:  classes(prober.ClassHTTP4xx), check: wantMsg("<secret>"),
		},
		{
			name:  "server echoing the key everywhere: error events",
			setup: func(e *faultEnv) string { return e.everything(echoServer(e, echoErrorEvent, echoSim, false)) },
			want:  classes(prober.ClassStream), check: wantMsg("<secret>"),
		},
		{
			name:  "server echoing the key everywhere: 401 on /tokenize",
			setup: func(e *faultEnv) string { return e.everything(echoServer(e, echoSim, echo401, false)) },
			want:  classes(prober.ClassHTTP4xx), check: wantMsg("/tokenize"),
		},
		{
			name:  "server echoing the key everywhere: in the model id",
			setup: func(e *faultEnv) string { return e.everything(echoServer(e, echoSim, echoSim, true)) },
			want:  classes(prober.ClassInvalidResponse), check: wantMsg("/v1/models"),
		},
	}
}
