package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/bounded"
)

// The container image's HEALTHCHECK runs `llmprobe healthcheck`: distroless
// has no shell and no curl, so the binary asks its own serve process.
const (
	// defaultHealthURL is serve's liveness endpoint at its default port.
	defaultHealthURL = "http://127.0.0.1:9741/-/healthy"
	// maxHealthcheckTimeout bounds --timeout: a health check that waits
	// longer only delays the engine's verdict.
	maxHealthcheckTimeout = time.Minute
	// maxHealthBodyBytes is how much of the answer is read (and thrown
	// away) before the connection is closed.
	maxHealthBodyBytes = 64 << 10
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("healthcheck", "GET a URL (by default serve's /-/healthy on 127.0.0.1:9741) and exit 0 on a 2xx answer, 1 otherwise: "+
			"the container image's HEALTHCHECK, which has no shell or curl. Prints why it failed on stderr.")
		target := cmd.Flag("url", "The URL to GET, http or https (no proxy is used).").Default(defaultHealthURL).String()
		timeout := cmd.Flag("timeout", fmt.Sprintf("Give up after this long (at most %s).", maxHealthcheckTimeout)).Default("5s").Duration()
		return cmd.FullCommand(), func(e *env) int { return healthcheck(e, *target, *timeout) }
	})
}

// healthcheck GETs target once; 0 on a 2xx status, 1 on any other answer or
// none, 2 on bad flags.
func healthcheck(e *env, target string, timeout time.Duration) int {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(e.stderr, "llmprobe: error: healthcheck --url %q: want an absolute http:// or https:// URL\n", target)
		return 2
	}
	if timeout <= 0 || timeout > maxHealthcheckTimeout {
		fmt.Fprintf(e.stderr, "llmprobe: error: healthcheck --timeout %s: want more than 0 and at most %s\n", timeout, maxHealthcheckTimeout)
		return 2
	}
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: healthcheck: %v\n", err)
		return 2
	}
	// No proxy: the check asks the process next to it, whatever
	// HTTP_PROXY the container was given for its targets.
	client := bounded.NewClient(&http.Transport{Proxy: nil}, 0)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(e.stderr, "healthcheck: %s: %v\n", u.Redacted(), err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHealthBodyBytes))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		fmt.Fprintf(e.stderr, "healthcheck: %s: %s\n", u.Redacted(), resp.Status)
		return 1
	}
	fmt.Fprintf(e.stdout, "healthcheck: %s: %s\n", u.Redacted(), resp.Status)
	return 0
}
