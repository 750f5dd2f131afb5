package web

import (
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
func LimitRequests(h http.Handler, max int, refused func()) http.Handler {
	if max <= 0 {
		return h
	}
	slots := make(chan struct{}, max)
	msg := "too many concurrent requests (--web.max-requests " + strconv.Itoa(max) + "): try again\n"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
