package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

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

	// The default URL is what the image's HEALTHCHECK reaches without
	// flags: serve's default listen address, on loopback.
	_, port := listenPort(t, "serve", parseInvocation(t, "default", []string{"serve"}))
	if want := "http://127.0.0.1:" + strconv.Itoa(port) + "/-/healthy"; defaultHealthURL != want {
		t.Errorf("healthcheck's default URL %q, want %q (serve's default port)", defaultHealthURL, want)
	}
}
