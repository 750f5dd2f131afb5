package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// hostileMaxRSS is the bound on the daemon's resident memory over the whole
// replay: generous (the daemon idles at some tens of MiB), and far below
// what the original inputs took it to (1.35 GB before it died of D1, 1.5 GB
// for D11's unread scrapes, out of memory for D4's /dev/zero).
const hostileMaxRSS = 1 << 30

// hostileConns is how many connections D11's case opens with a GET /metrics
// whose answer is never read: more than --web.max-requests' default (512),
// so some take the place of idle ones or are closed.
const hostileConns = 1000

// hostileCase is one row of the replay: the hostile input (what the doc
// table shows), the action sending it to the one running daemon, and the
// clear answer wanted (status code, or exit code for a CLI case, and a
// substring of the reply naming the key or the file).
type hostileCase struct {
	name  string
	input string
	do    func(t *testing.T, d *hostileDaemon) reply
	code  int
	want  string
}

// reply is what a case got back.
type reply struct {
	code int
	body string
}

// TestHostileInputsReplay is issue 22's "done when" for the D cases: ONE
// `llmprobe serve` child process (a simulator target probed at 20 req/s,
// --web.enable-lifecycle, the sweep API, a --sweeps.dir holding run files
// that are symlinks to /dev/zero) is sent the hostile inputs one
// after the other through the API, the config file and reload, and files.
// After each one the answer must be the clear error of the table and the
// daemon alive: /-/healthy 200, /metrics and / answering, and its probe
// still counting requests. At the end its peak RSS is below hostileMaxRSS.
// The table is docs/reliability.md's "Hostile inputs replayed".
func TestHostileInputsReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon child process")
	}
	d := startHostileDaemon(t)
	for _, c := range hostileCases() {
		r := c.do(t, d)
		if os.Getenv("HOSTILE_DEBUG") != "" {
			t.Logf("%s: %d %.300q", c.name, r.code, r.body)
		}
		if r.code != c.code || !strings.Contains(r.body, c.want) {
			t.Errorf("%s (%s): got %d %.300q, want %d containing %q", c.name, c.input, r.code, r.body, c.code, c.want)
		}
		d.alive(t, c.name)
		t.Logf("%-32s %d, daemon RSS %.1f MiB (peak %.1f)", c.name, r.code, float64(d.lastRSS)/(1<<20), float64(d.maxRSS)/(1<<20))
	}
	t.Logf("peak daemon RSS over %d cases: %.1f MiB", len(hostileCases()), float64(d.maxRSS)/(1<<20))
	if d.maxRSS > hostileMaxRSS {
		t.Errorf("daemon RSS reached %d bytes, more than %d", d.maxRSS, hostileMaxRSS)
	}
}

// hostileCases is the replayed matrix, in order (some rows use what an
// earlier row left: the sweep run directory of "API sweep still runs").
func hostileCases() []hostileCase {
	return append([]hostileCase{
		{"D4 endless files at start", "--sweeps.dir run dirs: manifest.json, result.json → /dev/zero", startLog, 200, "result.json: not a regular file"},
		{"D1 API concurrency 1e8", `POST {"concurrency":[100000000]}`, post(`{"target":"sim","concurrency":[100000000]}`), 400, "concurrency: must be at most 10000 requests in flight"},
		{"D1 API concurrency 5e7", `POST {"concurrency":[5e7]}`, post(`{"target":"sim","concurrency":[5e7]}`), 400, "concurrency: must be at most 10000 requests in flight"},
		{"D1 config concurrency 1e9", "sweeps[].concurrency: [1000000000] + reload", reload(sweepEntry("concurrency: [1000000000]")), 500, "targets[0].sweeps[0].concurrency: must be at most 10000"},
		{"D2 API schema $ref", `POST json_schema {"$ref":"#"}`, post(`{"target":"sim","rates":[1],"workload":{"input_tokens":{"dist":"fixed","value":8},"output_tokens":{"dist":"fixed","value":4},"request":{"features":[{"kind":"json_schema","share":1,"schema":{"$ref":"#"}}]}}}`), 400, "leads back to the root on the same value"},
		{"D2 config schema $ref", `probe json_schema {$ref: "#"} + reload`, reload(probeEntry(`workload: {request: {features: [{kind: json_schema, share: 1, schema: {$ref: "#"}}]}}`)), 500, "leads back to the root on the same value"},
		{"N1 API schema $id root", `POST json_schema {"$id":"https://e.com/root","$defs":{"a":{"$id":"a","$ref":"root"}},"$ref":"a"}`, postSchema(`{"$id":"https://e.com/root","$defs":{"a":{"$id":"a","$ref":"root"}},"$ref":"a"}`), 400, `$ref "root" at /$defs/a leads back to the root on the same value`},
		{"N1 API schema $id r", `POST json_schema {"$id":"https://e.com/r","$ref":"r"}`, postSchema(`{"$id":"https://e.com/r","$ref":"r"}`), 400, `$ref "r" at the root leads back to the root`},
		{"N1 API schema $id x#", `POST json_schema {"$id":"https://e.com/x#","$ref":"x"}`, postSchema(`{"$id":"https://e.com/x#","$ref":"x"}`), 400, `$ref "x" at the root leads back to the root`},
		{"N1 API schema $id ./x", `POST json_schema {"$id":"https://e.com/d/x","$ref":"./x"}`, postSchema(`{"$id":"https://e.com/d/x","$ref":"./x"}`), 400, `$ref "./x" at the root leads back to the root`},
		{"N1 API schema $id ../d/r", `POST json_schema {"$id":"https://e.com/d/r","$ref":"../d/r"}`, postSchema(`{"$id":"https://e.com/d/r","$ref":"../d/r"}`), 400, `$ref "../d/r" at the root leads back to the root`},
		{"N1 API schema #/$defs/a to root", `POST json_schema {"$id":"https://e.com/r","$defs":{"a":{"$id":"sub/a","$ref":"../r"}},"$ref":"#/$defs/a"}`, postSchema(`{"$id":"https://e.com/r","$defs":{"a":{"$id":"sub/a","$ref":"../r"}},"$ref":"#/$defs/a"}`), 400, `$ref "../r" at /$defs/a leads back to the root`},
		{"N1 API tools parameters $id", `POST tools [{"name":"f","parameters":{"$id":"https://e.com/r","$ref":"r"}}]`, post(`{"target":"sim","rates":[1],"workload":{"input_tokens":{"dist":"fixed","value":8},"output_tokens":{"dist":"fixed","value":4},"request":{"features":[{"kind":"tools","share":1,"tools":[{"name":"f","parameters":{"$id":"https://e.com/r","$ref":"r"}}]}]}}}`), 400, `tools[0].parameters: invalid schema: $ref "r" at the root leads back to the root`},
		{"N1 config schema $id", `probe json_schema {$id: "https://e.com/r", $ref: r} + reload`, reload(probeEntry(`workload: {request: {features: [{kind: json_schema, share: 1, schema: {$id: "https://e.com/r", $ref: r}}]}}`)), 500, `$ref "r" at the root leads back to the root`},
		{"N1 answer check json_schema $id", `probe answer_checks set with json_schema {"$id":"https://e.com/r","$ref":"r"} + reload`, reloadWithFile("n1.jsonl", `{"id":"n1","prompt":"p","json_schema":{"$id":"https://e.com/r","$ref":"r"}}`+"\n", "      - name: hostile\n        answer_checks: {set: n1.jsonl}\n"), 500, `n1.jsonl:1: json_schema: invalid schema: $ref "r" at the root leads back to the root`},
		{"N1 check-config schema $id", "llmprobe check-config, probe json_schema {$id: https://e.com/r, $ref: r}", checkConfigWith(probeEntry(`workload: {request: {features: [{kind: json_schema, share: 1, schema: {$id: "https://e.com/r", $ref: r}}]}}`)), 1, `$ref "r" at the root leads back to the root`},
		{"N1 CLI sweep --workload schema $id", "llmprobe sweep --workload FILE, json_schema {$id: https://e.com/r, $ref: r}", cliWithFile("n1-workload.yml", "input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nrequest: {features: [{kind: json_schema, share: 1, schema: {$id: \"https://e.com/d/r\", $ref: ../d/r}}]}\n",
			"sweep", "--workload", "{file}", "--rates", "1", "--num-prompts", "1", "--target", "{sim}"), 2, `$ref "../d/r" at the root leads back to the root`},
		{"extra_body n 1000 API", `POST workload.request.extra_body {"n":1000}`, post(`{"target":"sim","rates":[1],"workload":{"input_tokens":{"dist":"fixed","value":8},"output_tokens":{"dist":"fixed","value":4},"request":{"extra_body":{"n":1000}}}}`), 400, "request.extra_body.n: may not be set in extra_body: it makes the server generate several sequences per request"},
		{"extra_body best_of config", "probe workload.request.extra_body {best_of: 8} + reload", reload(probeEntry(`workload: {request: {extra_body: {best_of: 8}}}`)), 500, "targets[0].probes[1].workload.request.extra_body.best_of: may not be set in extra_body"},
		{"extra_body max_new_tokens CLI", `llmprobe sweep --extra-body {"max_new_tokens":100000}`, cli("sweep", "--extra-body", `{"max_new_tokens":100000}`, "--rates", "1", "--num-prompts", "1", "--target", "{sim}"), 2, "extra_body.max_new_tokens: may not be set in extra_body: it bounds the output under another server's name"},
		{"duplicate key in a check set", `answer_checks set line {"id":"a","prompt":"p","exact":"x","exact":"y"} + reload`, reloadWithFile("dup.jsonl", `{"id":"a","prompt":"p","exact":"x","exact":"y"}`+"\n", "      - name: hostile\n        answer_checks: {set: dup.jsonl}\n"), 500, `dup.jsonl:1: exact: given twice`},
		{"endless tool calls target", "a chat target streaming tool calls without end, probed with a tools feature + reload", hostileTarget("hostile-tools", "chat", `workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 4}, request: {features: [{kind: tools, share: 1, tools: [{name: f}]}]}}`), 200, `outcome="invalid_response"`},
		{"20 MB response headers target", "a target answering with 20 MB of headers + reload", hostileTarget("hostile-headers", "completions", `workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 4}}`), 200, `outcome="invalid_response"`},
		{"D3 API rate 1e-300", `POST {"rates":[1e-300]}`, post(`{"target":"sim","rates":[1e-300]}`), 400, "rates: rate must be >= 0.01, got 1e-300"},
		{"D3 API rate 1e-6", `POST {"rates":[1e-6]}`, post(`{"target":"sim","rates":[1e-6]}`), 400, "rates: rate must be >= 0.01"},
		{"D3 config sweep rate 1e-300", "sweeps[].rates: [1e-300] + reload", reload(sweepEntry("rates: [1e-300]")), 500, "rate must be >= 0.01, got 1e-300"},
		{"D3 config probe rate 1e-300", "probes[].rate: 1e-300 + reload", reloadEdit(func(c string) string { return strings.Replace(c, "rate: 20", "rate: 1e-300", 1) }), 500, "targets[0].probes[0].rate: must be >= 0.001"},
		{"D6 FIFO dataset", "probe workload.dataset a FIFO + reload", reload(probeEntry("workload: {dataset: {path: fifo.jsonl}}")), 500, "fifo.jsonl: not a regular file (a FIFO)"},
		{"D6 FIFO trace", "sweeps[].workload.trace a FIFO + reload", reload("    sweeps:\n      - name: replay\n        every: 24h\n        workload: {trace: {path: fifo.jsonl}}\n"), 500, "fifo.jsonl: not a regular file (a FIFO)"},
		{"D6 next reload answers", "the good config + reload", reload(""), 200, ""},
		{"D8 API step budget", `POST {"rates":[1,100],"duration":"24h"}`, post(`{"target":"sim","rates":[1,100],"duration":"24h"}`), 400, "duration: duration 24h0m0s at rates 100 req/s makes 8640000 requests per step, more than 2000000"},
		{"D8 config step budget", "sweeps[]: rates [100], duration 24h + reload", reload("    sweeps:\n      - {name: long, every: 24h, rates: [100], duration: 24h}\n"), 500, "targets[0].sweeps[0].duration: duration 24h0m0s at rates 100 req/s makes 8640000 requests per step, more than 2000000"},
		{"duplicate JSON key", `POST {"rates":[1],"rates":[500]}`, post(`{"target":"sim","rates":[1],"rates":[500]}`), 400, "rates: given twice"},
		{"duplicate YAML key", "probes: given twice + reload", reload("    probes: []\n"), 500, "targets[0].probes: duplicate key (first defined at line 4)"},
		{"50,000 rates", `POST {"rates":[1,2,…,50000]}`, post(`{"target":"sim","rates":[` + levels(50000) + `]}`), 400, "rates: must have at most 256 values, got 50000"},
		{"oversized body", "POST 1 MiB + 1 byte", post(strings.Repeat(" ", 1<<20+1)), 413, ""},
		{"oversized reload body", "POST /-/reload with a 1 MiB body", func(_ *testing.T, d *hostileDaemon) reply {
			return apiError(d.do("POST", "/-/reload", "", strings.NewReader(strings.Repeat("x", 1<<20))))
		}, 413, ""},
		{"API sweep still runs", `POST a 5-request sweep`, apiSweep, 200, `"status":"done"`},
		{"D1 DELETE a running closed loop", `POST {"concurrency":[50],"duration":"10m"}, then DELETE mid-step`, cancelSweep, 200, `"status":"canceled"`},
		{"D6 FIFO in run dir", "GET …/files/fifo (a FIFO)", runFile("fifo", mkfifo), 404, `file "fifo": no such regular file in the sweep's run directory`},
		{"D4 result.json → /dev/zero", "GET …/files/result.json (a symlink to /dev/zero)", runFile(artifacts.ResultFile, toDevZero), 404, `file "result.json": no such regular file`},
		{"D4 manifest.json → /dev/zero", "GET …/files/manifest.json (a symlink to /dev/zero)", runFile(artifacts.ManifestFile, toDevZero), 404, `file "manifest.json": no such regular file`},
		{"hard link in run dir", "GET …/files/link.yml (a hard link to the daemon's config)", runFile("link.yml", func(d *hostileDaemon, p string) error { return os.Link(d.cfg, p) }), 404, `file "link.yml": no such regular file`},
		{"D11 unread scrapes", fmt.Sprintf("%d connections sending GET /metrics, never read", hostileConns), unreadScrapes, 200, ""},
		{"N9 1,000 idle connections", "300 connections sending nothing and 700 idle keep-alive ones, then GET /metrics", idleConnections, 200, "/metrics answered in"},
		{"N5 /probe dot segment", "GET /probe?target=SIM/s/../x", probeTarget("/s/../x"), 400, `the path has a ".." segment`},
		{"N5 /probe encoded dots", "GET /probe?target=SIM/s/%2e%2e/x", probeTarget("/s/%2e%2e/x"), 400, `the path has a "%2e%2e" segment`},
		{"N5 /probe encoded slash", "GET /probe?target=SIM/s%2F..%2Fx", probeTarget("/s%2F..%2Fx"), 400, "the path has an encoded / (%2F)"},
		{"N2 N10 discovered targets", "file_sd: 127.0.0.1:, :, a 5 KiB __path_prefix__, a 16 MiB label + reload", hostileSD, 200, "targets started: 0"},
		{"discovery budget", "two discovery entries, max_targets 1000 and 100 + reload", reloadEdit(func(c string) string {
			return c + "discovery:\n  - name: runaway\n    static_configs: [{targets: [h:1]}]\n    max_targets: 1000\n  - name: other\n    static_configs: [{targets: [h:1]}]\n"
		}), 500, "the entries' max_targets add up to 1100 (runaway 1000, other 100)"},
		{"N10 next reload answers", "the good config + reload", reload(""), 200, ""},
		{"D1 check-config", "llmprobe check-config, sweeps[].concurrency: [1000000000]", checkConfigChild, 1, "concurrency: must be at most 10000"},
		{"D6 web config FIFO", "llmprobe serve --web.config.file FIFO", webConfigFIFO, 1, "not a regular file (a FIFO)"},
		{"D1 CLI concurrency 1e8", "llmprobe sweep --concurrency 100000000", cli("sweep", "--concurrency", "100000000", "--num-prompts", "1", "--target", "{sim}"), 2, "--concurrency: must be at most 10000 requests in flight"},
		{"D3 CLI rate 1e-300", "llmprobe sweep --rates 1e-300", cli("sweep", "--rates", "1e-300", "--num-prompts", "1", "--target", "{sim}"), 2, "--rates: rate must be >= 0.01, got 1e-300"},
		{"D4 verify manifest → /dev/zero", "llmprobe verify DIR, manifest.json a symlink to /dev/zero", cli("verify", "{zero-manifest}"), 2, "manifest.json: not a regular file (a character device)"},
		{"D4 verify result → /dev/zero", "llmprobe verify DIR, result.json a symlink to /dev/zero", cli("verify", "{zero-result}"), 1, "invalid: result.json (not a regular file)"},
		{"D4 analyze result → /dev/zero", "llmprobe analyze DIR, result.json a symlink to /dev/zero", cli("analyze", "{zero-result}"), 2, "result.json: not a regular file (a character device)"},
		{"D4 merge manifest → /dev/zero", "llmprobe merge of both DIRs", cli("merge", "--out", "{dir}/merged", "{zero-manifest}", "{zero-result}"), 2, "manifest.json: not a regular file (a character device)"},
		{"D6 workload stats FIFO", "llmprobe workload stats FIFO", cli("workload", "stats", "{dir}/fifo.jsonl"), 2, "fifo.jsonl: not a regular file (a FIFO)"},
		{"D6 sweep --dataset FIFO", "llmprobe sweep --dataset FIFO", cli("sweep", "--dataset", "{dir}/fifo.jsonl", "--rates", "1", "--num-prompts", "1", "--target", "{sim}"), 2, "fifo.jsonl: not a regular file (a FIFO)"},
		{"D7 synth rate 1e-300", "llmprobe workload synth, rate_per_s: 1e-300", synthChild(`"rate_per_s":1e-300,"gap_cv2":1`), 2, "rate_per_s: must be between 0.001 and 1e+06"},
		{"D7 synth gap_cv2 -1", "llmprobe workload synth, gap_cv2: -1", synthChild(`"rate_per_s":10,"gap_cv2":-1`), 2, "gap_cv2: must be between 0 and 100, got -1"},
	}, hostileSDCases()...) // hostile_sd_test.go: issue 34
}

// hostileConfig is the daemon's good configuration; %s is the simulator's
// URL. The canary probe's requests are what "probes still counting" counts.
const hostileConfig = `targets:
  - name: sim
    base_url: %s
    probes:
      - name: canary
        rate: 20
        workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}
`

// hostileDaemon is the one daemon of the replay.
type hostileDaemon struct {
	base, dir, cfg, sim, sweeps string
	pid                         int
	logs                        *testutil.SyncBuffer
	exited                      chan struct{}
	exit                        string // how it ended, once exited is closed
	client                      *http.Client
	probes                      float64 // the canary's requests at the last alive check
	maxRSS, lastRSS             int64
	runID, runDir               string    // the sweep of "API sweep still runs"
	hostileURL                  string    // startHostileTarget's, once started
	zero                        [2]string // run dirs: manifest.json, result.json → /dev/zero
}

// startHostileDaemon prepares the config and --sweeps.dir (two run
// directories of target sim whose manifest.json and result.json are
// symlinks to /dev/zero: issue 22 D4 crashed the daemon at start) and
// starts `llmprobe serve` as a child process (the test binary as main).
func startHostileDaemon(t *testing.T) *hostileDaemon {
	t.Helper()
	sim, _ := simtest.Start(t, simulator.DefaultConfig())
	dir := t.TempDir()
	d := &hostileDaemon{dir: dir, cfg: filepath.Join(dir, "llmprobe.yml"), sim: sim, sweeps: filepath.Join(dir, "sweeps"),
		logs: &testutil.SyncBuffer{}, exited: make(chan struct{}), client: &http.Client{Timeout: 20 * time.Second}}
	d.writeRaw(t, fmt.Sprintf(hostileConfig, sim))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.jsonl"), 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	d.zero = endlessRunDirs(t, filepath.Join(d.sweeps, "sim"))
	addr := testutil.FreeAddr(t)
	d.base = "http://" + addr
	cmd := exec.Command(os.Args[0], "serve", "--web.listen-address", addr, "--config.file", d.cfg,
		"--web.enable-lifecycle", "--web.enable-sweeps", "--sweeps.dir", d.sweeps)
	cmd.Env = append(os.Environ(), asMainEnv)
	cmd.Stdout, cmd.Stderr = io.Discard, d.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.pid = cmd.Process.Pid
	go func() { d.exit = fmt.Sprint(cmd.Wait()); close(d.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-d.exited
			t.Errorf("the daemon did not stop on SIGTERM within 20 s; log:\n%s", d.logs.String())
		}
	})
	testutil.EventuallyWithin(t, 30*time.Second, "the daemon's /-/healthy", func() bool {
		select {
		case <-d.exited:
			t.Fatalf("the daemon exited at start (%s); log:\n%s", d.exit, d.logs.String())
		default:
		}
		code, _ := d.get("/-/healthy")
		return code == 200
	})
	return d
}

// endlessRunDirs makes two finished-looking run directories under tdir: one
// whose manifest.json is a symlink to /dev/zero, one with a real manifest
// and result.json such a symlink, and returns them in that order.
func endlessRunDirs(t *testing.T, tdir string) (dirs [2]string) {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join("..", "..", "internal", "report", "testdata", "runs", "20261201T090954Z-closed", artifacts.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, endless := range []string{artifacts.ManifestFile, artifacts.ResultFile} {
		run := filepath.Join(tdir, time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(artifacts.StampLayout)+"-nightly")
		dirs[i] = run
		if err := os.MkdirAll(run, 0o700); err != nil {
			t.Fatal(err)
		}
		if endless == artifacts.ResultFile {
			if err := os.WriteFile(filepath.Join(run, artifacts.ManifestFile), manifest, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("/dev/zero", filepath.Join(run, endless)); err != nil {
			t.Skip("no symlinks:", err)
		}
	}
	return dirs
}

func (d *hostileDaemon) writeRaw(t *testing.T, cfg string) {
	t.Helper()
	if err := os.WriteFile(d.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// do sends one request; a transport error (a daemon that hangs past the
// client's 20 s, or is gone) is code 0 with the error as the body.
func (d *hostileDaemon) do(method, path, ctype string, body io.Reader) (int, string) {
	req, err := http.NewRequest(method, d.base+path, body)
	if err != nil {
		return 0, err.Error()
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, string(b)
}

func (d *hostileDaemon) get(path string) (int, string) { return d.do("GET", path, "", nil) }

// alive fails the test unless the daemon still runs and answers, and its
// canary probe sent a request since the last check; it records the RSS.
func (d *hostileDaemon) alive(t *testing.T, after string) {
	t.Helper()
	select {
	case <-d.exited:
		t.Fatalf("after %s: the daemon died (%s); log tail:\n%s", after, d.exit, tail(d.logs.String(), 4000))
	default:
	}
	d.rss(t)
	for _, p := range []string{"/-/healthy", "/"} {
		if code, body := d.get(p); code != 200 {
			t.Fatalf("after %s: GET %s = %d %.200q", after, p, code, body)
		}
	}
	prev := d.probes
	testutil.EventuallyWithin(t, 20*time.Second, "after "+after+": the canary probe's request count to grow past "+strconv.FormatFloat(prev, 'f', 0, 64), func() bool {
		code, body := d.get("/metrics")
		if code != 200 {
			t.Fatalf("after %s: GET /metrics = %d %.200q", after, code, body)
		}
		d.probes = canaryRequests(body)
		return d.probes > prev
	})
}

// canaryRequests sums llmprobe_requests_total of the canary probe over its
// outcomes.
func canaryRequests(metrics string) float64 {
	var n float64
	sc := bufio.NewScanner(strings.NewReader(metrics))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "llmprobe_requests_total{") || !strings.Contains(line, `probe="canary"`) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			n += v
		}
	}
	return n
}

// rss records the daemon's VmRSS (Linux; elsewhere nothing is recorded).
func (d *hostileDaemon) rss(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.pid))
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			d.lastRSS = kb << 10
			d.maxRSS = max(d.maxRSS, d.lastRSS)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// startLog: the daemon came up over the endless run files and said why it
// read nothing back from the one whose result.json is /dev/zero.
func startLog(t *testing.T, d *hostileDaemon) reply {
	testutil.EventuallyWithin(t, 20*time.Second, "the read-back warning", func() bool {
		return strings.Contains(d.logs.String(), "cannot read back")
	})
	code, _ := d.get("/-/ready")
	return reply{code, d.logs.String()}
}

// post sends body to POST /api/v1/sweeps; the reply is the API's "error"
// text when it has one.
func post(body string) func(*testing.T, *hostileDaemon) reply {
	return func(_ *testing.T, d *hostileDaemon) reply {
		return apiError(d.do("POST", "/api/v1/sweeps", "application/json", strings.NewReader(body)))
	}
}

// apiError is the API answer's "error" text (the whole body when it has
// none).
func apiError(code int, body string) reply {
	var e struct{ Error string }
	if json.Unmarshal([]byte(body), &e) == nil && e.Error != "" {
		return reply{code, e.Error}
	}
	return reply{code, body}
}

// reload writes the good config with extra appended to the target (only
// the good config when extra is empty) and calls POST /-/reload.
func reload(extra string) func(*testing.T, *hostileDaemon) reply {
	return reloadEdit(func(c string) string { return c + extra })
}

// reloadEdit writes the good config as edit returns it and calls POST
// /-/reload.
func reloadEdit(edit func(string) string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		d.writeRaw(t, edit(fmt.Sprintf(hostileConfig, d.sim)))
		code, msg := d.do("POST", "/-/reload", "", nil)
		return reply{code, msg}
	}
}

// startHostileTarget starts a target that answers /v1/models, streams tool calls
// without end on /v1/chat/completions (to a request offering tools; prompt
// sizing's calibration requests get a good answer) and answers /v1/completions with 20
// MB of headers (issue 34 risks: the first read on until the timeout,
// the second was classed connect).
func startHostileTarget(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		case "/v1/chat/completions":
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			w.Header().Set("Content-Type", "text/event-stream")
			if !strings.Contains(string(body), `"tools"`) {
				// Prompt sizing's calibration (no tools): a good answer.
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"+
					"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", len(body)/4)
				return
			}
			fl := w.(http.Flusher)
			for i := 0; r.Context().Err() == nil; i++ {
				if _, err := fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n", i); err != nil {
					return
				}
				fl.Flush()
			}
		case "/v1/completions":
			big := strings.Repeat("a", 1<<20)
			for i := range 20 {
				w.Header().Set(fmt.Sprintf("X-Big-%d", i), big)
			}
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// hostileTarget reloads the good config with a second target, name, at
// hostileTarget (api, one probe at 5 req/s with workload), and waits for
// its requests to be counted: the reply is its llmprobe_requests_total
// lines.
func hostileTarget(name, api, workload string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		if d.hostileURL == "" {
			d.hostileURL = startHostileTarget(t)
		}
		r := reload(fmt.Sprintf("  - name: %s\n    base_url: %s\n    api: %s\n    probes:\n      - name: hostile\n        rate: 5\n        %s\n",
			name, d.hostileURL, api, workload))(t, d)
		if r.code != http.StatusOK {
			return r
		}
		var lines []string
		testutil.EventuallyWithin(t, time.Minute, name+"'s requests to be counted", func() bool {
			_, body := d.get("/metrics")
			lines = lines[:0]
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, "llmprobe_requests_total{") && strings.Contains(l, `target="`+name+`"`) && !strings.HasSuffix(l, " 0") {
					lines = append(lines, l)
				}
			}
			return len(lines) > 0
		})
		return reply{http.StatusOK, strings.Join(lines, "\n")}
	}
}

// levels is "1,2,…,n".
func levels(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// sweepEntry is a scheduled sweep of target sim with setting.
func sweepEntry(setting string) string {
	return "    sweeps:\n      - name: hostile\n        every: 24h\n        num_prompts: 10\n        " + setting + "\n"
}

// probeEntry is a second probe of target sim with setting.
func probeEntry(setting string) string {
	return "      - name: hostile\n        rate: 1\n        " + setting + "\n"
}

// apiSweep starts a small sweep through the API (the inputs before did not
// stop the API from working) and waits for it to end; its run directory is
// where the file cases below put their hostile files.
func apiSweep(t *testing.T, d *hostileDaemon) reply {
	code, body := d.do("POST", "/api/v1/sweeps", "application/json", strings.NewReader(
		`{"target":"sim","rates":[10],"num_prompts":5,"input_len":8,"output_len":2,"max_send_lag":"250ms","max_sched_latency":"250ms"}`))
	var created struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &created) != nil || created.ID == "" {
		return reply{code, body}
	}
	var st sweepd.Status
	testutil.EventuallyWithin(t, time.Minute, "the API sweep to end", func() bool {
		_, body = d.get("/api/v1/sweeps/" + created.ID)
		st = sweepd.Status{}
		_ = json.Unmarshal([]byte(body), &st)
		return st.Status != "" && st.Status != sweepd.StatusRunning
	})
	if st.RunDir == "" {
		t.Fatalf("the API sweep has no run directory: %s", body)
	}
	d.runID, d.runDir = created.ID, filepath.Join(d.sweeps, "sim", st.RunDir)
	code, body = d.get("/api/v1/sweeps/" + created.ID + "/files/" + artifacts.ManifestFile)
	return reply{code, fmt.Sprintf(`"status":"%s" manifest.json: %.100s`, st.Status, body)}
}

// cancelSweep starts a closed-loop sweep of 50 streams for 10 minutes and,
// once its step runs, cancels it: DELETE answers and the run ends
// canceled (issue 22 D1: a run of 5e7 streams ignored its cancellation,
// DELETE hung over 60 s).
func cancelSweep(t *testing.T, d *hostileDaemon) reply {
	code, body := d.do("POST", "/api/v1/sweeps", "application/json", strings.NewReader(
		`{"target":"sim","concurrency":[50],"duration":"10m","warmups":0,"input_len":8,"output_len":2}`))
	var created struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &created) != nil || created.ID == "" {
		return apiError(code, body)
	}
	path := "/api/v1/sweeps/" + created.ID
	var st sweepd.Status
	status := func() string {
		_, body = d.get(path)
		st = sweepd.Status{}
		_ = json.Unmarshal([]byte(body), &st)
		return st.Status
	}
	testutil.EventuallyWithin(t, time.Minute, "the closed loop's step to start", func() bool {
		return status() != sweepd.StatusRunning || st.Step != nil
	})
	if code, body := d.do("DELETE", path, "", nil); code != http.StatusOK {
		return apiError(code, body)
	}
	testutil.EventuallyWithin(t, 30*time.Second, "the canceled sweep to end", func() bool { return status() != sweepd.StatusRunning })
	return reply{http.StatusOK, fmt.Sprintf(`"status":"%s" %s`, st.Status, st.Error)}
}

// runFile puts a hostile file named name into the API sweep's run
// directory (replacing what is there) and GETs it through the file route.
func runFile(name string, make func(d *hostileDaemon, path string) error) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		if d.runDir == "" {
			t.Fatal("no run directory: the API sweep case did not run")
		}
		p := filepath.Join(d.runDir, name)
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := make(d, p); err != nil {
			t.Fatal(err)
		}
		return apiError(d.get("/api/v1/sweeps/" + d.runID + "/files/" + name))
	}
}

func mkfifo(_ *hostileDaemon, p string) error    { return syscall.Mkfifo(p, 0o600) }
func toDevZero(_ *hostileDaemon, p string) error { return os.Symlink("/dev/zero", p) }

// unreadScrapes opens hostileConns connections, each sending GET /metrics
// and never reading the answer (issue 22 D11: 10,000 of them took the
// daemon to 1.5 GB). Once the daemon answers the first few it records the
// RSS, closes them all, waits for the daemon to close its ends and asks
// /-/healthy.
func unreadScrapes(t *testing.T, d *hostileDaemon) reply {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	addr := strings.TrimPrefix(d.base, "http://")
	base := socketCount(d.pid)
	for range hostileConns {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: llmprobe\r\n\r\n"); err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
	}
	// Answered, at least the first connections: read a status line each.
	for _, c := range conns[:8] {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
			return reply{0, fmt.Sprintf("a held connection's answer: %q %v", line, err)}
		}
	}
	d.rss(t)
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	// The handlers of connections the kernel still queued run once the
	// first ones close (until then one more request is a 503 over
	// --web.max-requests, as it should be): wait for the daemon to close
	// them (its sockets, where /proc tells): 20 s were not enough once under
	// a loaded CI run, so the wait allows two minutes.
	if base >= 0 {
		testutil.EventuallyWithin(t, 2*time.Minute, "the daemon to close the held connections", func() bool {
			return socketCount(d.pid) < base+32
		})
	}
	return apiError(d.get("/-/healthy"))
}

// socketCount is how many sockets process pid has open (-1 where /proc
// does not tell).
func socketCount(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	es, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range es {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// child runs `llmprobe args...` as a child process (the test binary as
// main) with a 30 s limit, and returns its exit code and output.
func child(t *testing.T, args ...string) reply {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMainEnv)
	var stderr testutil.SyncBuffer // stdout too: verify reports there
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return reply{-1, "still running after 30 s: " + stderr.String()}
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return reply{cmd.ProcessState.ExitCode(), stderr.String()}
}

// cli runs `llmprobe args...` as a child process; {sim}, {dir},
// {zero-manifest} and {zero-result} in args are the simulator's URL, the
// test's directory and the endless run directories.
func cli(args ...string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		r := strings.NewReplacer("{sim}", d.sim, "{dir}", d.dir, "{zero-manifest}", d.zero[0], "{zero-result}", d.zero[1])
		a := make([]string, len(args))
		for i, s := range args {
			a[i] = r.Replace(s)
		}
		return child(t, a...)
	}
}

// checkConfigChild: check-config of a config whose sweep asks for 1e9
// requests in flight.
func checkConfigChild(t *testing.T, d *hostileDaemon) reply {
	return checkConfigWith(sweepEntry("concurrency: [1000000000]"))(t, d)
}

// checkConfigWith: check-config of the good config with extra appended to
// the target.
func checkConfigWith(extra string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		p := filepath.Join(d.dir, "check.yml")
		if err := os.WriteFile(p, []byte(fmt.Sprintf(hostileConfig, d.sim)+extra), 0o600); err != nil {
			t.Fatal(err)
		}
		return child(t, "check-config", p)
	}
}

// postSchema sends a sweep whose every request asks for a json_schema
// response_format with schema.
func postSchema(schema string) func(*testing.T, *hostileDaemon) reply {
	return post(`{"target":"sim","rates":[1],"workload":{"input_tokens":{"dist":"fixed","value":8},"output_tokens":{"dist":"fixed","value":4},"request":{"features":[{"kind":"json_schema","share":1,"schema":` + schema + `}]}}}`)
}

// reloadWithFile writes file name (beside the config) and reloads the good
// config with extra appended to the target.
func reloadWithFile(name, content, extra string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		if err := os.WriteFile(filepath.Join(d.dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return reload(extra)(t, d)
	}
}

// cliWithFile writes file name in the test's directory and runs the CLI
// with {file} in args replaced by its path.
func cliWithFile(name, content string, args ...string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		p := filepath.Join(d.dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		a := make([]string, len(args))
		for i, s := range args {
			a[i] = strings.ReplaceAll(s, "{file}", p)
		}
		return cli(a...)(t, d)
	}
}

// webConfigFIFO: a second serve whose --web.config.file is a FIFO (it hung
// at start) exits at once naming it.
func webConfigFIFO(t *testing.T, d *hostileDaemon) reply {
	return child(t, "serve", "--web.listen-address", testutil.FreeAddr(t), "--config.file", d.cfg,
		"--web.config.file", filepath.Join(d.dir, "fifo.jsonl"))
}

// synthChild: workload synth from a stats file with the timing fields
// given.
func synthChild(timing string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		dist := `{"n":10,"mean":3,"min":1,"p10":2,"p50":3,"p90":4,"p99":5,"max":6}`
		p := filepath.Join(d.dir, "stats.json")
		stats := `{"count":10,"input_tokens":` + dist + `,"output_tokens":` + dist + `,"timed":true,` + timing + `}`
		if err := os.WriteFile(p, []byte(stats), 0o600); err != nil {
			t.Fatal(err)
		}
		return child(t, "workload", "synth", "--from", p, "--count", "5", "--out", filepath.Join(d.dir, "synth.jsonl"))
	}
}

// TestHostileCasesDocumented holds docs/reliability.md's "Hostile inputs
// replayed" table to hostileCases(): the same rows in the same order (the
// first column, backquotes left out).
func TestHostileCasesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reliability.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Hostile inputs replayed")
	if i < 0 {
		t.Fatal(`docs/reliability.md has no "## Hostile inputs replayed" section`)
	}
	doc = doc[i:]
	if j := strings.Index(doc[1:], "\n## "); j >= 0 {
		doc = doc[:j+1]
	}
	var rows []string
	for _, line := range strings.Split(doc, "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 3 && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| case ") {
			rows = append(rows, strings.ReplaceAll(strings.TrimSpace(cells[1]), "`", ""))
		}
	}
	var names []string
	for _, c := range hostileCases() {
		names = append(names, c.name)
	}
	if strings.Join(rows, "\n") != strings.Join(names, "\n") {
		t.Errorf("the doc's rows:\n%s\n\nhostileCases():\n%s", strings.Join(rows, "\n"), strings.Join(names, "\n"))
	}
}
