package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	ltestutil "github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// secretKey is the API key of TestSecretsNeverLeave: recognisable in any
// output.
const secretKey = "sk-llmprobe-canary-4b1d9e0c7a"

// secretEcho serves the simulator behind newSecretServer: the URL of an
// echoing server.
func secretEcho(t *testing.T) string { return newSecretServer(t).URL }

// secretServer serves the simulator but puts every credential it receives
// into every surface a server controls. The credentials are the values of
// Authorization, Proxy-Authorization (it is also the proxy of the targets
// that set proxy_url: a proxied request arrives here with its absolute
// URL) and X-Gateway-Key, each whole, without its scheme ("Bearer ",
// "Basic "), and for Basic the decoded user:password and the password. It
// echoes them in a response header on every answer, /v1/models (root,
// owned_by), /version, the target's /metrics label values, the first
// /tokenize answer (a 400 echoing them), and on the generation path in turn
// a 401 echoing them (in its reason phrase too: "401 Unauthorized Bearer
// sk-...", as is the first /tokenize's 400), a stream whose error event
// echoes them, and the simulator's good answer. /token is an OAuth2 token endpoint handing out
// a fresh access token per fetch (valid for 1 s: oauth2 refreshes a token
// 10 s before its expires_in). Rotations, when set, replace a credential
// file's content once the server has seen the old value a few times (the
// file rotated while the run goes on).
type secretServer struct {
	*httptest.Server
	mu        sync.Mutex
	seen      map[string]int // credential value -> requests that carried it
	tokens    []string       // OAuth2 access tokens handed out
	rotations map[string]rotation
	tokenize  atomic.Uint64
	gen       atomic.Uint64
	// TLS is the https twin, reached through CONNECT (tunnel); connect
	// holds the credentials of the last CONNECT, conns the tunnels'
	// connections, tunnels their pipes.
	TLS     *httptest.Server
	connect []string
	conns   []net.Conn
	tunnels sync.WaitGroup
	// logFile, when set, gets a line per request naming its credentials:
	// the server's log that `sweep --server-log` copies.
	logFile string
}

// rotation writes next into file once the server has seen its old value
// rotateAfter times.
type rotation struct{ file, next string }

const rotateAfter = 5

func newSecretServer(t *testing.T) *secretServer {
	t.Helper()
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	s := &secretServer{seen: map[string]int{}, rotations: map[string]rotation{}}
	simH := sim.Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			s.tunnel(w, r)
			return
		}
		if r.URL.Path == "/token" {
			s.mu.Lock()
			tok := fmt.Sprintf("oauth-access-%d-%d", time.Now().UnixNano()%1e9, len(s.tokens))
			s.tokens = append(s.tokens, tok)
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":11}`, tok)
			return
		}
		creds := s.credentials(r)
		if r.TLS != nil { // reached through a tunnel: the CONNECT's credentials too
			creds = append(creds, s.connectCreds()...)
		}
		all := strings.Join(creds, " ")
		first := ""
		if len(creds) > 0 {
			first = creds[0]
		}
		w.Header().Set("X-Echo", all)
		s.serve(w, r, simH, all, first, creds)
	}))
	// The TLS twin: the target of an https base_url reached through this
	// server as a CONNECT proxy (tunnel); it echoes the credentials of the
	// CONNECT requests too.
	s.TLS = httptest.NewTLSServer(s.Config.Handler)
	t.Cleanup(func() {
		s.Close()
		s.TLS.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.tunnels.Wait()
		sim.Close()
	})
	return s
}

// tunnel answers a CONNECT to the TLS twin: it counts the request's
// credentials (Proxy-Authorization from the proxy_url userinfo, the
// proxy_connect_header values), keeps them for the twin to echo, and pipes
// the connection through.
func (s *secretServer) tunnel(w http.ResponseWriter, r *http.Request) {
	creds := s.credentials(r)
	for _, v := range r.Header.Values("X-Proxy-Token") {
		creds = append(creds, v)
		s.mu.Lock()
		s.seen[v]++
		s.mu.Unlock()
	}
	up, err := net.Dial("tcp", s.TLS.Listener.Addr().String())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	down, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	s.mu.Lock()
	s.connect = creds
	s.conns = append(s.conns, up, down)
	s.mu.Unlock()
	_, _ = io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n")
	s.tunnels.Add(2)
	pipe := func(dst, src net.Conn) {
		defer s.tunnels.Done()
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	go pipe(up, down)
	go pipe(down, up)
}

// connectCreds returns the credentials of the last CONNECT request.
func (s *secretServer) connectCreds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.connect)
}

// credentials returns the credentials r carries, in every form the
// server echoes, and counts them (rotating files whose old value was seen
// rotateAfter times).
func (s *secretServer) credentials(r *http.Request) []string {
	var out []string
	for _, h := range []string{"Authorization", "Proxy-Authorization", "X-Gateway-Key"} {
		for _, v := range r.Header.Values(h) {
			out = append(out, v)
			scheme, cred, ok := strings.Cut(v, " ")
			if !ok {
				continue
			}
			out = append(out, cred)
			if strings.EqualFold(scheme, "basic") {
				if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
					out = append(out, string(dec))
					if _, pw, ok := strings.Cut(string(dec), ":"); ok {
						out = append(out, pw)
					}
				}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logFile != "" {
		if f, err := os.OpenFile(s.logFile, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
			fmt.Fprintf(f, "INFO %s %s creds=%s\n", r.Method, r.URL.Path, strings.Join(out, " "))
			f.Close()
		}
	}
	for _, c := range out {
		s.seen[c]++
		if rot, ok := s.rotations[c]; ok && s.seen[c] >= rotateAfter {
			delete(s.rotations, c)
			_ = os.WriteFile(rot.file, []byte(rot.next+"\n"), 0o600)
		}
	}
	return out
}

// serve answers r on the echoing surfaces.
func (s *secretServer) serve(w http.ResponseWriter, r *http.Request, simH http.Handler, all, first string, creds []string) {
	switch r.URL.Path {
	case "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"llmprobe-sim","object":"model","root":%q,"owned_by":%q,"max_model_len":8192}]}`, all, first)
	case "/version":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"version":%q}`, "0.9-"+all)
	case "/metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\n")
		for i, c := range creds {
			fmt.Fprintf(w, "vllm:num_requests_running{model_name=%q,auth=\"%d\"} 0\n", c, i)
		}
		fmt.Fprintf(w, "vllm:num_requests_running{model_name=\"all\",auth=%q} 0\n", all)
	case "/tokenize":
		if s.tokenize.Add(1) == 1 {
			rawReply(w, "400 Bad Request "+all, all, `{"error":{"message":"tokenizer refuses key `+all+`","code":400}}`)
			return
		}
		simH.ServeHTTP(w, r)
	case "/v1/completions", "/v1/chat/completions":
		switch s.gen.Add(1) % 3 {
		case 0:
			_, _ = io.Copy(io.Discard, r.Body)
			rawReply(w, "401 Unauthorized "+all, all, `{"error":{"message":"invalid api key: `+all+`","code":401}}`)
		case 1:
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\"}]}\n\nevent: error\ndata: {\"error\":{\"message\":\"revoked %s\"}}\n\n", strings.ReplaceAll(all, `"`, ``))
		default:
			simH.ServeHTTP(w, r)
		}
	default:
		simH.ServeHTTP(w, r)
	}
}

// rawReply answers with status (code and reason phrase: the server's own,
// echoing credentials as a gateway may, "401 Unauthorized Bearer sk-...",
// which net/http's ResponseWriter cannot write), an X-Echo header holding
// echo and body, on a connection that then closes.
func rawReply(w http.ResponseWriter, status, echo, body string) {
	conn, bw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nX-Echo: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		strings.NewReplacer("\r", "", "\n", "").Replace(status), strings.NewReplacer("\r", "", "\n", "").Replace(echo), len(body), body)
	_ = bw.Flush()
}

// rotate makes the server replace file's content old by next once it has
// seen old rotateAfter times.
func (s *secretServer) rotate(file, old, next string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotations[old] = rotation{file: file, next: next}
}

// seenTimes returns how many requests carried credential v.
func (s *secretServer) seenTimes(v string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[v]
}

// handedOut returns the OAuth2 access tokens handed out so far.
func (s *secretServer) handedOut() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// TestSecretsNeverLeave runs `llmprobe serve` with a recognisable API key
// against a server that echoes the key everywhere it can, at debug log
// level with pprof and the lifecycle API on, reloads it, and greps every
// output surface for the key: the log (every level), /metrics, every page
// (/, /config, /-/healthy, /-/ready), /debug/pprof/ and its cmdline (with a
// key-bearing URL on the command line), and a goroutine dump. Panics inside
// a request are covered by prober/client's TestPanicMessageIsRedacted.
// Sweep artifacts are checked with noSecretInTree (a sweep run by the
// sweep tests can call it on its output directory).
func TestSecretsNeverLeave(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(secretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := secretEcho(t)
	cfgPath := filepath.Join(dir, "llmprobe.yml")
	writeCfg := func(rate int) {
		t.Helper()
		cfg := fmt.Sprintf(`global: {timeout: 5s, ttft_timeout: 2s, stall_timeout: 1s}
targets:
  - name: echo
    base_url: %s
    api_key_file: %s
    metrics_url: %s/metrics?api_key=%s
    probes:
      - name: p
        rate: %d
        workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}
  - name: echo-chat
    base_url: %s
    api: chat
    api_key_file: %s
    probes:
      - name: p
        rate: 10
        workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}
`, base, keyFile, base, secretKey, rate, base, keyFile)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(20)
	// The pprof cmdline shows os.Args: put a key-bearing URL there, as a
	// --push.url with credentials would.
	oldArgs := os.Args
	os.Args = append(append([]string(nil), oldArgs...), "--push.url=https://u:"+secretKey+"@push.invalid/api/v1/import/prometheus", "--web.api-key="+secretKey)
	t.Cleanup(func() { os.Args = oldArgs })

	web, logs, stop := startServe(t, "--config.file", cfgPath, "--log.level", "debug",
		"--web.enable-pprof", "--web.enable-lifecycle")
	// Every echoing answer has reached the daemon: failures of both kinds
	// and successes, on both targets.
	// (The outcome series exist from the start at 0: wait for counts.)
	for _, target := range []string{"echo", "echo-chat"} {
		for _, outcome := range []string{"http_4xx", "stream", "success"} {
			ltestutil.Eventually(t, target+" requests with outcome "+outcome, func() bool {
				_, body := get(t, web+"/metrics")
				snap, err := scrape.NewSnapshot(time.Now(), []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				n, _ := snap.Sum("llmprobe_requests_total", map[string]string{"target": target, "outcome": outcome})
				_, info := snap.Sum("llmprobe_target_info", map[string]string{"target": target})
				return n > 0 && info
			})
		}
	}
	writeCfg(25)
	if code, _ := postReload(t, web); code != http.StatusOK {
		t.Fatalf("reload: %d", code)
	}
	ltestutil.Eventually(t, "the reloaded probe", func() bool {
		_, body := get(t, web+"/config")
		return strings.Contains(body, "rate: 25")
	})

	surfaces := map[string]string{}
	for _, path := range []string{"/metrics", "/", "/config", "/-/healthy", "/-/ready",
		"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=2"} {
		code, body := get(t, web+path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
		surfaces["GET "+path] = body
	}
	if !strings.Contains(surfaces["GET /debug/pprof/cmdline"], "push.invalid") {
		t.Errorf("the cmdline check did not see the test's arguments: %q", surfaces["GET /debug/pprof/cmdline"])
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d", code)
	}
	surfaces["log"] = logs.String()
	for _, lvl := range []string{"level=debug", "level=info", "level=warn"} {
		if !strings.Contains(surfaces["log"], lvl) {
			t.Errorf("the log has no %s line: the check would miss that level", lvl)
		}
	}
	for where, s := range surfaces {
		noSecret(t, where, s, secretKey)
	}
}

// noSecret fails the test when s holds secret, showing where.
func noSecret(t testing.TB, where, s, secret string) {
	t.Helper()
	if i := strings.Index(s, secret); i >= 0 {
		lo, hi := max(0, i-160), min(len(s), i+len(secret)+40)
		t.Errorf("the secret is in %s: ...%s...", where, s[lo:hi])
	}
}

// noSecretInTree fails the test for every file under dir that holds secret
// (gzip files are read decompressed): the check for a sweep's artifacts,
// snapshots included.
func noSecretInTree(t testing.TB, dir, secret string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		files++
		noSecret(t, path, string(b), secret)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Errorf("no file under %s: nothing was checked", dir)
	}
}

func TestNoSecretInTree(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "step-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, "metric{auth=\"Bearer "+secretKey+"\"} 1\n")
	_ = zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "step-0", "metrics-during.txt.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"ok":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{}
	noSecretInTree(ft, dir, secretKey)
	if ft.errors != 1 {
		t.Errorf("noSecretInTree reported %d errors for one leaking file, want 1", ft.errors)
	}
	ft = &fakeT{}
	noSecretInTree(ft, dir, "sk-not-there")
	if ft.errors != 0 {
		t.Errorf("noSecretInTree reported %d errors for a clean tree", ft.errors)
	}
}

// fakeT counts the errors a check reports, to test the check itself.
type fakeT struct {
	testing.TB
	errors int
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Errorf(string, ...any)     { f.errors++ }
func (f *fakeT) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (f *fakeT) Fatalf(s string, a ...any) { panic(fmt.Sprintf(s, a...)) }

// TestSweepSecretsNeverLeave runs `llmprobe sweep` with the recognisable key
// against the same echoing server, at debug log level: no file of the run
// directory (records, errors, snapshots, during-step scrapes, result,
// analysis, manifest, command line) and neither stdout nor the log holds
// the key.
func TestSweepSecretsNeverLeave(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(secretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir, stdout, stderr := sweepSecretEcho(t, dir, "9", "--api-key-file", keyFile)
	for name, s := range map[string]string{"stdout": stdout, "the log": stderr} {
		if strings.Contains(s, secretKey) {
			t.Errorf("%s holds the API key:\n%s", name, s)
		}
	}
	for _, f := range []string{artifacts.RecordsFile, artifacts.ErrorsFile, artifacts.MetricsDuringFile} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// The echoed errors are there (redacted), so the check had something
	// to find.
	if b, _ := os.ReadFile(filepath.Join(runDir, artifacts.ErrorsFile)); !bytes.Contains(b, []byte("http_4xx")) || !bytes.Contains(b, []byte(`"stream"`)) {
		t.Errorf("errors-redacted.jsonl lacks the echoing 401s and error events:\n%s", b)
	}
	noSecretInTree(t, runDir, secretKey)
}

// sweepSecretEcho sweeps the echoing server (secretEcho) at debug log level
// with the credential flags auth, numPrompts requests a step of 16 tokens
// in and 4 out, and returns the run directory (under dir/runs), stdout and
// the log. The server refuses its first /tokenize (a calibration would then
// meet its failing generations and stop the sweep before any artifact):
// that refusal is used up first, so prompts are sized by /tokenize and the
// sweep runs into its echoed errors.
func sweepSecretEcho(t *testing.T, dir, numPrompts string, auth ...string) (runDir, stdout, stderr string) {
	t.Helper()
	base := secretEcho(t)
	resp, err := http.Post(base+"/tokenize", "application/json", strings.NewReader(`{"model":"llmprobe-sim","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out := filepath.Join(dir, "runs")
	stdout, stderr = runOK(t, append([]string{"sweep", "--target", base, "--rates", "20", "--num-prompts", numPrompts,
		"--warmups", "1", "--input-len", "16", "--output-len", "4", "--out", out, "--name", "echo", "--no-progress",
		"--log.level", "debug", "--max-send-lag", "10s", "--max-sched-latency", "10s", "--max-error-rate", "1"}, auth...)...)
	return onlyRunDir(t, out, "*-echo"), stdout, stderr
}
