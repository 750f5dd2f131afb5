package simtest

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

// Certs writes a new self-signed CA and a server certificate for
// 127.0.0.1, ::1 and localhost into t.TempDir() (simulator.GenerateCerts).
// Serve TLS with them by setting Config.TLSCertFile and TLSKeyFile; a
// client trusts CAFile. Each call makes a new CA, so the CA of another call
// is a wrong CA.
func Certs(t testing.TB) simulator.Certs {
	t.Helper()
	c, err := simulator.GenerateCerts(t.TempDir())
	if err != nil {
		t.Fatalf("simtest: generate certificates: %v", err)
	}
	return c
}

// Elsewhere is a listener on another port of 127.0.0.1 that counts what
// reaches it: where a redirect points. Requests get 200 with an empty JSON
// object. It is safe for concurrent use.
type Elsewhere struct {
	// URL is its base URL (http://127.0.0.1:PORT).
	URL string

	mu      sync.Mutex
	paths   []string
	headers http.Header // every header value received, all requests together
}

// Requests returns the paths of the requests that reached it, in order.
func (e *Elsewhere) Requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.paths)
}

// Header returns the values of the header name received, all requests
// together.
func (e *Elsewhere) Header(name string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.headers.Values(name))
}

// RedirectFront starts, on 127.0.0.1, a front server for upstream (a base
// URL, e.g. a simulator's) that answers every request whose path is in
// redirect with 307 to the same path on an Elsewhere listener (another
// port of the same host: the case in which Go's client would forward the
// Authorization header), and proxies every other request to upstream. It
// returns the front's base URL and the Elsewhere. Both stop with
// t.Cleanup.
func RedirectFront(t testing.TB, upstream string, redirect ...string) (string, *Elsewhere) {
	t.Helper()
	e := &Elsewhere{headers: http.Header{}}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.paths = append(e.paths, r.URL.Path)
		for k, vs := range r.Header {
			e.headers[k] = append(e.headers[k], vs...)
		}
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(other.Close)
	e.URL = other.URL
	up, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("simtest: upstream %q: %v", upstream, err)
	}
	proxy := Proxy(up)
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(redirect, r.URL.Path) {
			http.Redirect(w, r, e.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("simtest: listen: %v", err)
	}
	front.Listener.Close()
	front.Listener = l
	front.Start()
	t.Cleanup(front.Close)
	return front.URL, e
}

// Proxy returns a reverse proxy to upstream (httputil's single-host one)
// that reads each request body whole before proxying it. Without that, the
// transport reads the body once more after Content-Length bytes (to see its
// end) and may do so after the response's headers went back, when the
// server has closed the inbound body; the failed read closes the upstream
// connection mid-answer (seen as a request ending in "unexpected EOF" and
// "ReverseProxy read error during body copy: use of closed network
// connection", golang/go#40747). Every test gateway in front of a simulator
// proxies through one of these.
func Proxy(upstream *url.URL) http.Handler {
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	})
}
