package client

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// MaxAttributionHeaders bounds the attribution headers of a target (its
// attribution_headers).
const MaxAttributionHeaders = 8

// Attribution records which backend answered a request: the response
// headers a target names (x-served-by, x-gateway-destination-endpoint...)
// into Record.Attribution and Record.Backend, every value bounded in
// length (prober.MaxHeaderValueLen) and in count of distinct values
// (prober.MaxAttributionValues per header, and for the backend; later new
// values are recorded as prober.AttributionOther). One Attribution belongs
// to one target: its distinct values are the target's. It is safe for
// concurrent use; a nil *Attribution records nothing.
type Attribution struct {
	headers []string // canonical header names, in configured order
	names   []string // the same, lower case (Record.Attribution's keys)
	limit   int

	mu      sync.Mutex
	seen    []map[string]struct{} // per header
	backend map[string]struct{}
}

// NewAttribution returns the Attribution of the named response headers
// (case-insensitive, at most MaxAttributionHeaders, no duplicates); nil
// and no error when names is empty.
func NewAttribution(names []string) (*Attribution, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > MaxAttributionHeaders {
		return nil, fmt.Errorf("at most %d attribution headers, got %d", MaxAttributionHeaders, len(names))
	}
	a := &Attribution{limit: prober.MaxAttributionValues, backend: map[string]struct{}{}}
	for _, n := range names {
		if err := ValidHeaderName(n); err != nil {
			return nil, err
		}
		l := strings.ToLower(n)
		for _, have := range a.names {
			if have == l {
				return nil, fmt.Errorf("attribution header %q is named twice", n)
			}
		}
		a.headers = append(a.headers, http.CanonicalHeaderKey(n))
		a.names = append(a.names, l)
		a.seen = append(a.seen, map[string]struct{}{})
	}
	return a, nil
}

// ValidHeaderName reports whether name is an HTTP header field name (an
// RFC 9110 token), at most 64 bytes.
func ValidHeaderName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("header name %q: want 1 to 64 characters", trimTo(name, 64))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return fmt.Errorf("header name %q: character %q is not allowed in a header name", name, c)
	}
	return nil
}

// Headers returns the header names in configured order, lower case.
func (a *Attribution) Headers() []string {
	if a == nil {
		return nil
	}
	return append([]string(nil), a.names...)
}

// record fills rec.Attribution and rec.Backend from the response headers
// h; red (may be nil) and secrets are removed from the values.
func (a *Attribution) record(h http.Header, rec *prober.Record, red *redact.Redactor, secrets []string) {
	if a == nil {
		return
	}
	rec.Backend = prober.BackendNone
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, name := range a.headers {
		vs := h[name]
		if len(vs) == 0 {
			continue
		}
		v := HeaderValue(strings.Join(vs, ","), red, secrets...)
		if rec.Attribution == nil {
			rec.Attribution = make(map[string]string, len(a.headers))
		}
		rec.Attribution[a.names[i]] = fold(a.seen[i], v, a.limit)
		if rec.Backend == prober.BackendNone {
			rec.Backend = fold(a.backend, v, a.limit)
		}
	}
}

// fold returns v when it is among seen or seen has room for it (adding
// it), else prober.AttributionOther.
func fold(seen map[string]struct{}, v string, limit int) string {
	if _, ok := seen[v]; ok {
		return v
	}
	if len(seen) >= limit {
		return prober.AttributionOther
	}
	seen[v] = struct{}{}
	return v
}

// HeaderValue returns a response header value as llmprobe records it:
// secrets the redactor knows, the given secrets and credential-shaped text
// removed, control
// characters and invalid UTF-8 replaced by "?", cut to
// prober.MaxHeaderValueLen bytes at a UTF-8 boundary.
func HeaderValue(v string, red *redact.Redactor, secrets ...string) string {
	v = red.Redact(redact.Secrets(v, secrets...)) // a nil red removes credential shapes only
	v = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, strings.TrimSpace(v))
	if len(v) <= prober.MaxHeaderValueLen {
		return v
	}
	cut := prober.MaxHeaderValueLen
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}

// recordEcho keeps the response's x-request-id in rec.RequestIDEcho.
func (c *Client) recordEcho(h http.Header, rec *prober.Record) {
	if vs := h["X-Request-Id"]; len(vs) > 0 {
		if vs[0] == rec.RequestID && len(vs[0]) <= prober.MaxHeaderValueLen {
			rec.RequestIDEcho = vs[0] // the id llmprobe sent, echoed: nothing to clean
		} else {
			rec.RequestIDEcho = HeaderValue(vs[0], c.red, c.secrets...)
		}
	}
	c.o.Attribution.record(h, rec, c.red, c.secrets)
}
