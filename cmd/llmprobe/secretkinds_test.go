package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	ltestutil "github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// The secrets of TestEverySecretKindNeverLeaves, each recognisable and at
// least redact.MinSecretLen long.
const (
	kindCredV1     = "rotated-cred-v1-7f3a91"  // authorization.credentials_file, before the rotation
	kindCredV2     = "rotated-cred-v2-c40e5d"  // ... after it
	kindHeader     = "gw-header-secret-92ab1e" // http_headers secrets
	kindProxyUser  = "proxy-user"
	kindProxyPass  = "proxy-pass-5d2c77"
	kindBasicUser  = "basic-user"
	kindBasicPass  = "basic-pass-e81f03" // basic_auth.password_file
	kindOAuthID    = "oauth-client"
	kindOAuthSec   = "oauth-client-secret-3b9d"
	kindCmpCredV1  = "compare-cred-v1-aa01f2" // the compare side's credentials_file, rotated
	kindCmpCredV2  = "compare-cred-v2-bb93e4"
	kindSweepCred  = "sweep-cred-0c55ab21" // the CLI sweep's --http.config.file
	kindSweepProxy = "sweep-proxy-pass-e3"
	kindTunnelPass = "tunnel-pass-77ce02"    // proxy_url of an https target (CONNECT)
	kindTunnelHdr  = "connect-header-4410fa" // proxy_connect_header
	kindTunnelCred = "tunnel-cred-19bd3e"
)

// TestEverySecretKindNeverLeaves is issue 22 D9/D10, Deliver 3: every kind
// of secret a target's HTTP client sends (an API key, a bearer credentials
// file rotated during the run, an http_headers secret, basic auth as
// user:password and its base64, the proxy_url userinfo and the
// Proxy-Authorization the transport adds, OAuth2 access tokens fetched
// fresh while the run goes on) is echoed by the secret server in its
// bodies, error texts, SSE error events, /v1/models, /version, /metrics
// and its log, and none of them, nor its base64, reaches any surface: the
// daemon's log (debug level), /metrics, /, /config, /-/healthy, /-/ready,
// the sweep API's answers (POST, list, status, every file), every file
// under --sweeps.dir, a CLI sweep's stdout, log and run directory
// (server.log copy included), compare's stdout, log and directory, and,
// with tracing on for all three, every OTLP span body exported (issue 34
// N6: the reason phrase "401 Unauthorized Bearer sk-..." is echoed too).
func TestEverySecretKindNeverLeaves(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon, sweeps and a compare")
	}
	dir := t.TempDir()
	srv := newSecretServer(t)
	otlp := newOTLPBodies(t)
	surfaces := map[string]string{}
	sweepsDir := kindsDaemon(t, srv, dir, surfaces, otlp.URL)
	runOut := kindsSweep(t, srv, dir, surfaces, otlp.URL)
	cmpOut := kindsCompare(t, srv, dir, surfaces, otlp.URL)
	// The spans of every request (tracing on, every request sampled): the
	// exported OTLP bodies, which held "401 Unauthorized Bearer ..." as a
	// span status before issue 34 (N6).
	spans := otlp.all()
	for _, want := range []string{"http_4xx", "POST /tokenize", "401 Unauthorized", "400 Bad Request"} {
		if !strings.Contains(spans, want) {
			t.Errorf("the OTLP bodies (%d bytes) lack %q: the spans of the echoed failures were not exported", len(spans), want)
		}
	}
	surfaces["OTLP span bodies"] = spans

	secrets := kindSecrets(t, srv)
	for where, s := range surfaces {
		for _, sec := range secrets {
			noSecret(t, where, s, sec)
		}
	}
	for _, tree := range []string{sweepsDir, runOut, cmpOut} {
		for _, sec := range secrets {
			noSecretInTree(t, tree, sec)
		}
	}
}

// kindsDaemon runs the daemon of TestEverySecretKindNeverLeaves: five
// targets, one per kind of credential, probed until every echo reached
// them and the rotated file's new content was sent, then a sweep of each
// through the API. It keeps the daemon's log and pages in surfaces and
// returns --sweeps.dir.
func kindsDaemon(t *testing.T, srv *secretServer, dir string, surfaces map[string]string, otlp string) string {
	t.Helper()
	keyFile := writeFile(t, dir, "key", secretKey+"\n")
	credFile := writeFile(t, dir, "cred", kindCredV1+"\n")
	pwFile := writeFile(t, dir, "pw", kindBasicPass+"\n")
	srv.rotate(credFile, kindCredV1, kindCredV2)
	proxy, _ := url.Parse(srv.URL)
	proxy.User = url.UserPassword(kindProxyUser, kindProxyPass)
	tunnelProxy, _ := url.Parse(srv.URL)
	tunnelProxy.User = url.UserPassword(kindProxyUser, kindTunnelPass)
	caFile := writeFile(t, dir, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.TLS.Certificate().Raw})))
	cfg := writeFile(t, dir, "llmprobe.yml", fmt.Sprintf(kindsConfig, srv.URL, credFile, proxy.String(), kindHeader, kindBasicUser, pwFile,
		kindOAuthID, kindOAuthSec, keyFile, srv.TLS.URL, caFile, kindTunnelCred, tunnelProxy.String(), kindTunnelHdr))
	sweepsDir := filepath.Join(dir, "sweeps")
	web, logs, stop := startServe(t, "--config.file", cfg, "--log.level", "debug", "--web.enable-sweeps", "--sweeps.dir", sweepsDir,
		"--tracing.endpoint", otlp)
	targets := []string{"rotated", "basic", "oauth", "key", "tunnel"}
	// The probes meet every echo; the credentials file is rotated (by the
	// server, once it has seen v1 a few times) and v2 is sent and echoed.
	for _, target := range targets {
		for _, outcome := range []string{"http_4xx", "stream", "success"} {
			ltestutil.EventuallyWithin(t, time.Minute, target+" requests with outcome "+outcome, func() bool {
				_, body := get(t, web+"/metrics")
				snap, err := scrape.NewSnapshot(time.Now(), []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				n, _ := snap.Sum("llmprobe_requests_total", map[string]string{"target": target, "outcome": outcome})
				return n > 0
			})
		}
	}
	ltestutil.EventuallyWithin(t, time.Minute, "the rotated credential in use", func() bool { return srv.seenTimes(kindCredV2) >= rotateAfter })
	for _, target := range targets {
		sweepThroughAPI(t, web, target, surfaces)
	}
	for _, path := range []string{"/metrics", "/", "/config", "/-/healthy", "/-/ready", "/api/v1/sweeps"} {
		code, body := get(t, web+path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
		surfaces["GET "+path] = body
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d", code)
	}
	surfaces["daemon log"] = logs.String()
	return sweepsDir
}

// kindsConfig is the daemon config of kindsDaemon.
const kindsConfig = `global: {timeout: 5s, ttft_timeout: 2s, stall_timeout: 1s}
targets:
  - name: rotated
    base_url: %[1]s
    http_config:
      authorization: {type: Bearer, credentials_file: %[2]s}
      proxy_url: %[3]s
      http_headers: {X-Gateway-Key: {secrets: [%[4]s]}}
    probes: [{name: p, rate: 4, workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}}]
  - name: basic
    base_url: %[1]s
    http_config: {basic_auth: {username: %[5]s, password_file: %[6]s}}
    probes: [{name: p, rate: 4, workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}}]
  - name: oauth
    base_url: %[1]s
    api: chat
    http_config: {oauth2: {client_id: %[7]s, client_secret: %[8]s, token_url: %[1]s/token}}
    probes: [{name: p, rate: 4, workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}}]
  - name: key
    base_url: %[1]s
    api_key_file: %[9]s
    probes: [{name: p, rate: 4, workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}}]
  - name: tunnel
    base_url: %[10]s
    http_config:
      tls_config: {ca_file: %[11]s}
      authorization: {credentials: %[12]s}
      proxy_url: %[13]s
      proxy_connect_header: {X-Proxy-Token: [%[14]s]}
    probes: [{name: p, rate: 4, workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}}]
`

// kindsSweep runs a CLI sweep through --http.config.file (a bearer file
// and a proxy with userinfo) with the server's log copied (--server-log);
// it keeps stdout and the log in surfaces and returns --out.
func kindsSweep(t *testing.T, srv *secretServer, dir string, surfaces map[string]string, otlp string) string {
	t.Helper()
	serverLog := filepath.Join(dir, "server.log")
	srv.mu.Lock()
	srv.logFile = serverLog
	srv.mu.Unlock()
	proxy, _ := url.Parse(srv.URL)
	proxy.User = url.UserPassword(kindProxyUser, kindSweepProxy)
	writeFile(t, dir, "sweep-token", kindSweepCred+"\n")
	httpCfg := writeFile(t, dir, "sweep-http.yml", "authorization: {credentials_file: sweep-token}\nproxy_url: "+proxy.String()+"\n")
	out := filepath.Join(dir, "runs")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--target", srv.URL, "--http.config.file", httpCfg, "--rates", "10",
		"--num-prompts", "9", "--warmups", "1", "--input-len", "16", "--output-len", "4", "--out", out, "--name", "kinds",
		"--no-progress", "--log.level", "debug", "--max-send-lag", "10s", "--max-sched-latency", "10s", "--max-error-rate", "1", "--server-log", serverLog,
		"--tracing.endpoint", otlp}, &stdout, &stderr)
	if code != 0 {
		t.Errorf("sweep: exit code %d; stderr:\n%s", code, stderr.String())
	}
	surfaces["sweep stdout"], surfaces["sweep log"] = stdout.String(), stderr.String()
	if b, _ := os.ReadFile(serverLog); !bytes.Contains(b, []byte(kindSweepCred)) {
		t.Errorf("the server's log does not hold the sweep's credential: the server.log check would find nothing")
	}
	if files := treeFiles(t, out); !strings.Contains(files, "server.log") || !strings.Contains(files, "metrics-during.txt") {
		t.Errorf("the CLI sweep's run directory lacks server.log or metrics-during.txt: %s", files)
	}
	return out
}

// kindsCompare runs a compare: the baseline through OAuth2 (fresh tokens
// per round), the candidate through a credentials file rotated during the
// compare and a header secret. It keeps stdout and the log in surfaces
// and returns --out.
func kindsCompare(t *testing.T, srv *secretServer, dir string, surfaces map[string]string, otlp string) string {
	t.Helper()
	cred := writeFile(t, dir, "cmp-cred", kindCmpCredV1+"\n")
	srv.rotate(cred, kindCmpCredV1, kindCmpCredV2)
	baseHTTP := writeFile(t, dir, "base-http.yml", fmt.Sprintf("oauth2: {client_id: %s, client_secret: %s, token_url: %s/token}\n", kindOAuthID, kindOAuthSec, srv.URL))
	candHTTP := writeFile(t, dir, "cand-http.yml", "authorization: {credentials_file: cmp-cred}\nhttp_headers: {X-Gateway-Key: {secrets: ["+kindHeader+"]}}\n")
	out := filepath.Join(dir, "compare")
	var stdout, stderr bytes.Buffer
	_ = run(context.Background(), compareArgs(out, "--baseline", srv.URL, "--candidate", srv.URL,
		"--baseline-http-config-file", baseHTTP, "--candidate-http-config-file", candHTTP,
		"--rates", "10", "--num-prompts", "12", "--max-error-rate", "1", "--log.level", "debug", "--tracing.endpoint", otlp), &stdout, &stderr)
	surfaces["compare stdout"], surfaces["compare log"] = stdout.String(), stderr.String()
	if srv.seenTimes(kindCmpCredV2) == 0 {
		t.Errorf("the compare never sent the rotated credential (v1 seen %d times); log:\n%s", srv.seenTimes(kindCmpCredV1), stderr.String())
	}
	if files := treeFiles(t, out); !strings.Contains(files, "result.json") || !strings.Contains(files, "records.jsonl") {
		t.Errorf("the compare directory lacks result.json or a round's records: %s", files)
	}
	return out
}

// kindSecrets returns every secret of TestEverySecretKindNeverLeaves with
// its base64, the derived forms the wire carries (user:password and its
// base64) and every OAuth2 token the server handed out, after checking
// that the server saw each kind (else the test could not fail).
func kindSecrets(t *testing.T, srv *secretServer) []string {
	t.Helper()
	basic := kindBasicUser + ":" + kindBasicPass
	proxyPair := kindProxyUser + ":" + kindProxyPass
	sweepProxyPair := kindProxyUser + ":" + kindSweepProxy
	tunnelPair := kindProxyUser + ":" + kindTunnelPass
	b64 := base64.StdEncoding.EncodeToString
	for _, s := range []string{secretKey, kindCredV1, kindCredV2, kindHeader, b64([]byte(basic)), basic, kindBasicPass,
		b64([]byte(proxyPair)), proxyPair, kindProxyPass, kindCmpCredV1, kindCmpCredV2, kindSweepCred, sweepProxyPair,
		tunnelPair, b64([]byte(tunnelPair)), kindTunnelHdr, kindTunnelCred} {
		if srv.seenTimes(s) == 0 {
			t.Errorf("the server never received %q: the check of that kind proves nothing", s)
		}
	}
	tokens := srv.handedOut()
	if len(tokens) < 3 {
		t.Errorf("%d OAuth2 tokens handed out, want a fresh one per fetch over the run", len(tokens))
	}
	for _, tok := range tokens[:min(len(tokens), 1)] {
		if srv.seenTimes(tok) == 0 {
			t.Errorf("the OAuth2 token %q was never sent", tok)
		}
	}
	out := append([]string{secretKey, kindCredV1, kindCredV2, kindHeader, basic, kindBasicPass, proxyPair, kindProxyPass,
		kindOAuthSec, kindCmpCredV1, kindCmpCredV2, kindSweepCred, kindSweepProxy, sweepProxyPair,
		tunnelPair, kindTunnelPass, kindTunnelHdr, kindTunnelCred}, tokens...)
	for _, s := range out[:len(out):len(out)] {
		out = append(out, b64([]byte(s)))
	}
	return out
}

// sweepThroughAPI runs a short daemon sweep of target through the sweep
// API and keeps every answer (the POST, the status, every file) in
// surfaces.
func sweepThroughAPI(t *testing.T, web, target string, surfaces map[string]string) {
	t.Helper()
	resp, err := http.Post(web+"/api/v1/sweeps", "application/json", strings.NewReader(fmt.Sprintf(
		`{"target": %q, "rates": [8], "num_prompts": 9, "warmups": 1, "input_len": 16, "output_len": 2, "max_send_lag": "10s", "max_sched_latency": "10s"}`, target)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	surfaces["POST /api/v1/sweeps "+target] = string(body)
	var created struct{ ID string }
	_ = json.Unmarshal(body, &created)
	if resp.StatusCode != http.StatusCreated || created.ID == "" {
		t.Fatalf("POST %s: %d %s", target, resp.StatusCode, body)
	}
	var st sweepd.Status
	var status string
	ltestutil.EventuallyWithin(t, 2*time.Minute, "the "+target+" sweep to end", func() bool {
		_, status = get(t, web+"/api/v1/sweeps/"+created.ID)
		st = sweepd.Status{}
		_ = json.Unmarshal([]byte(status), &st)
		return st.Status != "" && st.Status != sweepd.StatusRunning
	})
	surfaces["GET /api/v1/sweeps/ "+target] = status
	if st.RunDir == "" || len(st.Files) == 0 {
		t.Fatalf("the %s sweep left no run directory: %s", target, status)
	}
	for _, f := range st.Files {
		name := fileName(f)
		_, b := get(t, web+"/api/v1/sweeps/"+created.ID+"/files/"+name)
		surfaces["GET files/"+name+" "+target] = b
	}
}

// fileName is the name of one entry of sweepd.Status.Files.
func fileName(f any) string {
	b, _ := json.Marshal(f)
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	var o struct{ Name string }
	_ = json.Unmarshal(b, &o)
	return o.Name
}

// treeFiles lists the files under dir, one path a line.
func treeFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b.WriteString(p + "\n")
		}
		return err
	})
	return b.String()
}

// otlpBodies is an OTLP/HTTP receiver on loopback that keeps every export
// body as received (decompressed when gzip): the raw protobuf, whose
// strings are grepped for secrets.
type otlpBodies struct {
	*httptest.Server
	mu     sync.Mutex
	bodies bytes.Buffer
}

func newOTLPBodies(t *testing.T) *otlpBodies {
	t.Helper()
	o := &otlpBodies{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(io.LimitReader(body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.bodies.Write(b)
		o.bodies.WriteByte('\n')
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(o.Close)
	return o
}

// all returns every body received so far.
func (o *otlpBodies) all() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bodies.String()
}
