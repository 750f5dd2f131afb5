package daemon

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// The web server's timeouts (docs/security.md, "Web server"): each well
// under Prometheus' shortest usual scrape interval (15 s) and its default
// scrape timeout (10 s), so a connection that sends nothing, or nothing
// more, is closed before the next scrape needs its slot.
const (
	// webReadHeaderTimeout bounds reading a request's headers.
	webReadHeaderTimeout = 5 * time.Second
	// webReadTimeout bounds reading a whole request, headers and body
	// (POST /api/v1/sweeps reads at most 1 MiB), authenticated or not.
	// The handler's own run is not bounded by it: net/http clears the
	// read deadline once the request is read (its background read), so
	// /probe runs as long as its scrape timeout (TestLongHandlerOutlivesReadTimeout).
	webReadTimeout = 10 * time.Second
	// webIdleTimeout closes a keep-alive connection that sent no new
	// request for this long.
	webIdleTimeout = 5 * time.Second
)

// connLimiter caps the connections a listener holds at once. Unlike
// netutil.LimitListener, it never stops accepting: at the cap, a new
// connection closes the longest-waiting connection that is not serving a
// request (one that has sent nothing yet, http.StateNew, or a keep-alive
// one between requests, http.StateIdle), and is itself closed only when
// every connection held is serving a request. So idle connections, which
// anyone who reaches the port can open before any authentication, cannot
// keep a scrape of /metrics or /-/ready out: each new connection takes
// the place of an idle one. Its ConnState must be the server's
// ConnState (every listener of one server may share one connLimiter).
type connLimiter struct {
	max int

	mu      sync.Mutex
	conns   map[*limitedConn]struct{}
	evicted int // connections closed to make room (for tests)
	refused int // new connections closed: every held one busy
}

// newConnLimiter returns a connLimiter for at most max connections.
func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, conns: map[*limitedConn]struct{}{}}
}

// limitedConn is a connection a connLimiter holds.
type limitedConn struct {
	net.Conn
	l *connLimiter

	// Under l.mu.
	busy  bool      // serving a request (http.StateActive, or hijacked)
	since time.Time // when it last became not busy
	gone  bool
}

// Close closes the connection and gives its slot back.
func (c *limitedConn) Close() error {
	c.l.drop(c)
	return c.Conn.Close()
}

func (l *connLimiter) drop(c *limitedConn) {
	l.mu.Lock()
	if !c.gone {
		c.gone = true
		delete(l.conns, c)
	}
	l.mu.Unlock()
}

// admit takes c into the set, closing the longest-idle connection when
// the set is full; it returns false (c is to be closed) when every held
// connection is busy.
func (l *connLimiter) admit(c net.Conn) (*limitedConn, bool) {
	lc := &limitedConn{Conn: c, l: l, since: time.Now()}
	l.mu.Lock()
	var victim *limitedConn
	if len(l.conns) >= l.max {
		for o := range l.conns {
			if !o.busy && (victim == nil || o.since.Before(victim.since)) {
				victim = o
			}
		}
		if victim == nil {
			l.refused++
			l.mu.Unlock()
			return nil, false
		}
		victim.gone = true
		delete(l.conns, victim)
		l.evicted++
	}
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close()
	}
	return lc, true
}

// ConnState tracks whether each connection is serving a request; chain
// it into http.Server.ConnState.
func (l *connLimiter) ConnState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	switch s {
	case http.StateActive, http.StateHijacked:
		lc.busy = true
	case http.StateIdle:
		lc.busy, lc.since = false, time.Now()
	}
	l.mu.Unlock()
}

// counts returns the connections held, evicted and refused so far.
func (l *connLimiter) counts() (held, evicted, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns), l.evicted, l.refused
}

// limitListener is a listener whose connections a connLimiter caps.
type limitListener struct {
	net.Listener
	l *connLimiter
}

// Accept returns the next connection admitted; one refused (every held
// connection busy) is closed at once and the next is waited for.
func (ll limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc, ok := ll.l.admit(c); ok {
			return lc, nil
		}
		_ = c.Close()
	}
}

// newWebServer returns the daemon's web server for h, with the timeouts
// above.
func newWebServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: webReadHeaderTimeout,
		ReadTimeout:       webReadTimeout,
		IdleTimeout:       webIdleTimeout,
	}
}
