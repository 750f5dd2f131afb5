// Package bounded is the HTTP half of llmprobe's one bounded reader (the
// file half is prober/capfile): every response body llmprobe reads (a
// target's reply, /v1/models, /version, /tokenize, /metrics, an http_sd
// answer, an OTLP collector's answer) is refused on its Content-Length
// before a byte of it is read, read into a buffer sized from that length,
// and capped while it is read (ReadBody, Read, Transport); and every
// http.Client llmprobe builds answers a redirect as it is, never following
// one with the credentials or secret headers of the request (NoRedirects,
// NewClient; Transport refuses a redirected request as well, for the
// clients a library builds). Errors name the input and the bound. It
// imports nothing of llmprobe. docs/security.md, "Input surfaces".
package bounded

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// TooLargeError is the error for an input over its bound: refused on its
// announced size (Announced > Limit) before it was read, or once more than
// Limit bytes were read (Announced < 0 or within the bound).
type TooLargeError struct {
	// Input names what was read ("response body", "http_sd answer of
	// http://sd.example/targets").
	Input string
	// Limit is the bound in bytes.
	Limit int64
	// Announced is the size the input announced (a Content-Length), -1
	// when none was.
	Announced int64
}

// Error names the input and the bound.
func (e *TooLargeError) Error() string {
	if e.Announced > e.Limit {
		return fmt.Sprintf("%s announced %d bytes (Content-Length), more than the %d allowed; not read",
			e.Input, e.Announced, e.Limit)
	}
	return fmt.Sprintf("%s larger than %d bytes", e.Input, e.Limit)
}

// ReadBody reads resp.Body to its end, at most limit bytes: a
// Content-Length over limit is a *TooLargeError before anything is read,
// as is a body that turns out longer. It does not close the body. input
// names the body in the error ("" is "response body").
func ReadBody(resp *http.Response, input string, limit int64) ([]byte, error) {
	return Read(resp.Body, resp.ContentLength, input, limit)
}

// Read reads r to its end, at most limit bytes, r having announced size
// bytes (-1: unknown): an announced size over limit is a *TooLargeError
// before anything is read; the buffer is sized from it (never more than
// limit+1) so a honest input is read without regrowing.
func Read(r io.Reader, size int64, input string, limit int64) ([]byte, error) {
	if input == "" {
		input = "response body"
	}
	if size > limit {
		return nil, &TooLargeError{Input: input, Limit: limit, Announced: size}
	}
	n := int64(512)
	if size >= 0 {
		n = size + 1 // +1: the read that sees the end
	}
	buf := make([]byte, 0, n)
	lr := io.LimitReader(r, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(buf)) > limit {
		return nil, &TooLargeError{Input: input, Limit: limit, Announced: size}
	}
	return buf, nil
}

// NoRedirects is the CheckRedirect of every http.Client llmprobe builds:
// a redirect is answered as it is (the 3xx response, its Location for the
// error text), never followed, so that no Authorization header, API key,
// cookie or secret header goes to the address a Location names. There is
// no setting to follow one: follow_redirects: true is refused at load.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// NewClient returns an http.Client over rt (nil: http.DefaultTransport)
// with the timeout (0: none) and NoRedirects.
func NewClient(rt http.RoundTripper, timeout time.Duration) *http.Client {
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: NoRedirects}
}

// ErrRedirect is the error of Transport for a request that follows a
// redirect.
var ErrRedirect = errors.New("redirects are not followed (credentials would go along): fix the URL")

// Transport is a RoundTripper that bounds what Next answers: a response
// whose Content-Length is over Limit is refused (its body closed, a
// *TooLargeError naming Input and the URL), and every body reads at most
// Limit bytes (the read past it fails with a *TooLargeError). A request
// made to follow a redirect (Request.Response set) is refused with
// ErrRedirect before it is sent: the clients of libraries (Prometheus'
// discoverers) keep their own CheckRedirect. Safe for concurrent use when
// Next is.
type Transport struct {
	// Next sends the requests (nil: http.DefaultTransport).
	Next http.RoundTripper
	// Limit bounds every response body in bytes.
	Limit int64
	// Input names what the bodies are ("http_sd answer").
	Input string
}

// RoundTrip sends req through Next and bounds its response.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Response != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%s: %w", Redacted(req.Response.Request.URL), ErrRedirect)
	}
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	input := t.Input + " of " + Redacted(req.URL)
	if resp.ContentLength > t.Limit {
		resp.Body.Close()
		return nil, &TooLargeError{Input: input, Limit: t.Limit, Announced: resp.ContentLength}
	}
	resp.Body = &body{rc: resp.Body, left: t.Limit, err: &TooLargeError{Input: input, Limit: t.Limit, Announced: -1}}
	return resp, nil
}

// body is a response body that fails once more than its bound is read.
type body struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *body) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), b.err // the byte past the bound is not handed on
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// Redacted is u without its userinfo and query (where credentials travel),
// for error texts.
func Redacted(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		c.RawQuery = "<redacted>"
	}
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}
