package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/bounded"
)

// The container image's HEALTHCHECK runs `llmprobe healthcheck`: distroless
// has no shell and no curl, so the binary asks its own serve (or simulate)
// process. It finds the port where that process finds it: the
// --web.listen-address flag, or LLMPROBE_WEB_LISTEN_ADDRESS, which serve
// and simulate read too, so `docker run -e LLMPROBE_WEB_LISTEN_ADDRESS=:8080`
// moves the server and its health check together (Docker's --health-cmd
// would run through /bin/sh, which distroless has not).
const (
	// webListenEnv sets --web.listen-address of serve, simulate and
	// healthcheck.
	webListenEnv = "LLMPROBE_WEB_LISTEN_ADDRESS"
	// defaultHealthListen is serve's default listen address.
	defaultHealthListen = ":9741"
	// maxHealthcheckTimeout bounds --timeout: a health check that waits
	// longer only delays the engine's verdict.
	maxHealthcheckTimeout = time.Minute
	// maxHealthBodyBytes is how much of the answer is read (and thrown
	// away) before the connection is closed.
	maxHealthBodyBytes = 64 << 10
)

// healthPaths are asked in order at the listen address; the first that is
// not 404 decides: serve's liveness endpoint, then the simulator's (vLLM's
// /health).
var healthPaths = []string{"/-/healthy", "/health"}

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("healthcheck", "Ask the serve or simulate process next to it whether it is healthy and exit 0 on a 2xx answer, "+
			"1 otherwise: the container image's HEALTHCHECK, which has no shell or curl. It GETs /-/healthy (serve), "+
			"or /health (simulate) where that is 404, on 127.0.0.1 at --web.listen-address's port. Prints why it failed on stderr.")
		target := cmd.Flag("url", "GET this URL instead (http or https; no proxy is used).").String()
		listen := cmd.Flag("web.listen-address", "The listen address of the process to check (its port; an empty or wildcard host "+
			"means 127.0.0.1). Set it, and serve's or simulate's, with "+webListenEnv+".").
			Default(defaultHealthListen).Envar(webListenEnv).String()
		timeout := cmd.Flag("timeout", fmt.Sprintf("Give up after this long (at most %s).", maxHealthcheckTimeout)).Default("5s").Duration()
		return cmd.FullCommand(), func(e *env) int { return healthcheck(e, *target, *listen, *timeout) }
	})
}

// healthURLs are the URLs healthcheck asks for a listen address, in order.
func healthURLs(listen string) ([]string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	out := make([]string, len(healthPaths))
	for i, p := range healthPaths {
		out[i] = "http://" + net.JoinHostPort(host, port) + p
	}
	return out, nil
}

// healthcheck GETs target (or the health paths at listen) once; 0 on a 2xx
// status, 1 on any other answer or none, 2 on bad flags.
func healthcheck(e *env, target, listen string, timeout time.Duration) int {
	var urls []string
	if target != "" {
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(e.stderr, "llmprobe: error: healthcheck --url %q: want an absolute http:// or https:// URL\n", target)
			return 2
		}
		urls = []string{u.String()}
	} else {
		var err error
		if urls, err = healthURLs(listen); err != nil {
			fmt.Fprintf(e.stderr, "llmprobe: error: healthcheck --web.listen-address %q (or %s): %v\n", listen, webListenEnv, err)
			return 2
		}
	}
	if timeout <= 0 || timeout > maxHealthcheckTimeout {
		fmt.Fprintf(e.stderr, "llmprobe: error: healthcheck --timeout %s: want more than 0 and at most %s\n", timeout, maxHealthcheckTimeout)
		return 2
	}
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	// No proxy: the check asks the process next to it, whatever
	// HTTP_PROXY the container was given for its targets. No redirect
	// either (bounded.NewClient): the answer of the process itself decides.
	client := bounded.NewClient(&http.Transport{Proxy: nil}, 0)
	for i, target := range urls {
		u, _ := url.Parse(target)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			fmt.Fprintf(e.stderr, "llmprobe: error: healthcheck: %v\n", err)
			return 2
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(e.stderr, "healthcheck: %s: %v\n", u.Redacted(), err)
			return 1
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHealthBodyBytes))
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound && i < len(urls)-1 {
			continue // not this kind of process: the next path
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			fmt.Fprintf(e.stderr, "healthcheck: %s: %s\n", u.Redacted(), resp.Status)
			return 1
		}
		fmt.Fprintf(e.stdout, "healthcheck: %s: %s\n", u.Redacted(), resp.Status)
		return 0
	}
	return 1 // not reached: the last URL always decides
}
