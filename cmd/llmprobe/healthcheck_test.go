package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// runHealthcheck runs `llmprobe healthcheck args...` and returns its exit
// code, stdout and stderr.
func runHealthcheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"healthcheck"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestHealthcheck runs the image's HEALTHCHECK command against a real serve:
// 0 for /-/healthy, 1 for a non-2xx answer and for a port nobody listens on
// (a stopped daemon), 2 for bad flags; the default URL is serve's default
// port on loopback.
func TestHealthcheck(t *testing.T) {
	base, logs, stop := startServe(t)

	if code, out, errOut := runHealthcheck(t, "--url", base+"/-/healthy"); code != 0 || !strings.Contains(out, "200 OK") {
		t.Errorf("healthcheck of a running serve: exit %d, stdout %q, stderr %q; log:\n%s", code, out, errOut, logs)
	}
	if code, _, errOut := runHealthcheck(t, "--url", base+"/no-such-page"); code != 1 || !strings.Contains(errOut, "404") {
		t.Errorf("healthcheck of a 404: exit %d, stderr %q; want 1 naming the status", code, errOut)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d; log:\n%s", code, logs)
	}
	// A port where no daemon listens (the stopped one's could be taken by
	// another test's server meanwhile).
	refused := testutil.RefusedAddr(t)
	if code, _, errOut := runHealthcheck(t, "--url", "http://"+refused+"/-/healthy", "--timeout", "2s"); code != 1 || !strings.Contains(errOut, refused) {
		t.Errorf("healthcheck of a refusing port: exit %d, stderr %q; want 1 naming the address", code, errOut)
	}

	for _, bad := range [][]string{
		{"--url", "127.0.0.1:9741/-/healthy"},
		{"--url", "ftp://127.0.0.1/-/healthy"},
		{"--timeout", "0s"},
		{"--timeout", "2m"},
	} {
		if code, _, errOut := runHealthcheck(t, bad...); code != 2 || !strings.Contains(errOut, bad[0]) {
			t.Errorf("healthcheck %q: exit %d, stderr %q; want 2 naming %s", bad, code, errOut, bad[0])
		}
	}

	// Without flags the check asks serve's default listen address on
	// loopback: what the image's HEALTHCHECK reaches.
	_, port := listenPort(t, "serve", parseInvocation(t, "default", []string{"serve"}))
	urls, err := healthURLs(parseInvocation(t, "default", []string{"healthcheck"}).flags["web.listen-address"][0])
	if want := "http://127.0.0.1:" + strconv.Itoa(port) + "/-/healthy"; err != nil || urls[0] != want {
		t.Errorf("healthcheck's default URLs %q (%v), want %q first (serve's default port)", urls, err, want)
	}
	if code, _, errOut := runHealthcheck(t, "--web.listen-address", "127.0.0.1:"); code != 2 || !strings.Contains(errOut, "web.listen-address") {
		t.Errorf("healthcheck --web.listen-address 127.0.0.1: exit %d, stderr %q; want 2 naming the flag", code, errOut)
	}
}

// TestHealthcheckFollowsListenAddress is the image's HEALTHCHECK (no
// flags) beside a serve and a simulate moved to other ports by
// LLMPROBE_WEB_LISTEN_ADDRESS alone: serve answers on /-/healthy, the
// simulator on /health; both healthy, and unhealthy once stopped.
func TestHealthcheckFollowsListenAddress(t *testing.T) {
	for _, cmd := range []string{"serve", "simulate"} {
		t.Run(cmd, func(t *testing.T) {
			addr := testutil.FreeAddr(t)
			t.Setenv(webListenEnv, addr)
			ctx, cancel := context.WithCancel(context.Background())
			logs := &testutil.SyncBuffer{}
			done := make(chan int, 1)
			go func() { done <- run(ctx, []string{cmd}, io.Discard, logs) }()
			stopped := false
			stop := func() {
				if !stopped {
					stopped = true
					cancel()
					<-done
				}
			}
			t.Cleanup(stop)
			// Healthy once it listens: wait on the check itself.
			deadline := time.Now().Add(30 * time.Second)
			for {
				code, out, errOut := runHealthcheck(t, "--timeout", "2s")
				if code == 0 {
					if !strings.Contains(out, addr) {
						t.Errorf("healthcheck answered from %q, want %s", out, addr)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s on %s (from %s): healthcheck still exit %d: %s; log:\n%s", cmd, addr, webListenEnv, code, errOut, logs)
				}
				time.Sleep(50 * time.Millisecond)
			}
			stop()
			if code, _, _ := runHealthcheck(t, "--timeout", "2s"); code != 1 {
				t.Errorf("healthcheck of a stopped %s: exit %d, want 1", cmd, code)
			}
		})
	}
}
