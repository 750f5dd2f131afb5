package web

import (
	"fmt"
	"net/http"
	"strconv"
)

// DefaultMaxRequests is the default of `serve --web.max-requests`: as
// Prometheus' --web.max-connections, 512.
const DefaultMaxRequests = 512

// LimitRequests serves at most max requests of h at once (0 or less: no
// limit); a request over the limit is answered at once with 503 Service
// Unavailable and Retry-After, never queued, so a flood of requests whose
// responses are never read (10,000 concurrent GET /metrics took a daemon
// from 70 MB to 1.5 GB) holds at most max handlers and their buffers.
// refused, when not nil, is called for each refused request.
//
// GET /-/healthy and /-/ready are never refused: they write a few bytes
// and hold nothing, and a liveness probe answered 503 during a scrape
// storm would have the orchestrator restart a daemon that is only busy
// (the replay of issue 22's D11 saw it right after the flood).
func LimitRequests(h http.Handler, max int, refused func()) http.Handler {
	if max <= 0 {
		return h
	}
	slots := make(chan struct{}, max)
	msg := "too many concurrent requests (--web.max-requests " + strconv.Itoa(max) + "): try again\n"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/-/healthy" || r.URL.Path == "/-/ready" {
			h.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			if refused != nil {
				refused()
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		defer func() { <-slots }()
		h.ServeHTTP(w, r)
	})
}

// The per-route limits of the API (issue 22 Deliver 4), inside the global
// --web.max-requests: how many requests of one route are served at once,
// and how many body bytes one may send. A sweep start validates a spec (a
// JSON schema included) and a file download streams a run directory's
// file, so neither may take every slot of --web.max-requests.
const (
	// MaxSweepStarts is how many POST /api/v1/sweeps are handled at once.
	MaxSweepStarts = 4
	// MaxSweepReads is how many GET and DELETE /api/v1/sweeps[/{id}]
	// are handled at once.
	MaxSweepReads = 16
	// MaxSweepFileReads is how many GET /api/v1/sweeps/{id}/files/{name}
	// are served at once.
	MaxSweepFileReads = 4
	// MaxReloads is how many POST /-/reload are handled at once (the
	// daemon runs one reload at a time: one more waits for it, more are
	// refused rather than queued).
	MaxReloads = 2
	// MaxNoBodyBytes is the body a route that reads none accepts (GET,
	// DELETE, /-/reload): a larger one is answered 413 unread.
	MaxNoBodyBytes = 4 << 10
	// MaxListSweeps is the most runs GET /api/v1/sweeps lists (its
	// ?limit=, default this).
	MaxListSweeps = 100
)

// routeLimit is one per-route limit: at most inFlight requests of the
// handlers it wraps are served at once; one more is answered at once with
// 429 Too Many Requests and Retry-After: 1, naming the route and its limit
// (as JSON when the route answers JSON). A body declared larger than
// maxBody is answered 413 before the handler runs, and the body a handler
// reads is cut at maxBody (http.MaxBytesReader: it sees a
// *http.MaxBytesError).
type routeLimit struct {
	slots       chan struct{}
	maxBody     int64
	jsonAnswers bool
	busy, large string
}

func newRouteLimit(route string, inFlight int, maxBody int64, jsonAnswers bool) *routeLimit {
	return &routeLimit{
		slots: make(chan struct{}, inFlight), maxBody: maxBody, jsonAnswers: jsonAnswers,
		busy:  fmt.Sprintf("too many concurrent requests to %s (at most %d at once): try again", route, inFlight),
		large: fmt.Sprintf("the body is larger than %d bytes", maxBody),
	}
}

func (l *routeLimit) refuse(w http.ResponseWriter, code int, msg string) {
	if l.jsonAnswers {
		jsonError(w, code, msg, nil)
		return
	}
	http.Error(w, msg, code)
}

// wrap returns h behind the limit.
func (l *routeLimit) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > l.maxBody {
			l.refuse(w, http.StatusRequestEntityTooLarge, l.large)
			return
		}
		select {
		case l.slots <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			l.refuse(w, http.StatusTooManyRequests, l.busy)
			return
		}
		defer func() { <-l.slots }()
		r.Body = http.MaxBytesReader(w, r.Body, l.maxBody)
		h(w, r)
	}
}
