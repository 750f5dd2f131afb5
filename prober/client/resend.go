package client

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"

	"github.com/llmprobe/llmprobe/prober"
)

// Resending on a stale connection (docs/measurement.md).
//
// A server may close a kept-alive connection while the client's pool still
// holds it — llama.cpp's llama-server closes the connection after each
// streamed response although the response said keep-alive. A request that
// the pool then puts on that connection is written into a dead socket and
// fails with EOF, "server closed idle connection" or a reset, before any
// byte of a response. Go's transport resends such a request by itself only
// when it is idempotent, and a POST is not, so the client does it: a request
// whose first attempt failed on a reused connection (httptrace GotConn
// Reused) before its first response byte (GotFirstResponseByte) is resent
// once, through the resend client on a new connection that is closed after
// it (its pool never holds a connection a server could close under it).
// The server cannot have answered the first attempt, so the resend cannot
// double a generation the client would count; it may double work the
// server had started (the request was written), which is why it is done
// once and counted (Record.Retry, llmprobe_request_retries_total). A
// failure on a new connection, after a response byte, or because a timer or
// the caller ended the attempt is never resent.

// resendReason returns why the attempt that failed with err on the
// connection tr saw is to be resent, or RetryNone when it is not: the
// connection was new, or a response byte had arrived.
func resendReason(tr *phaseTrace, err error) prober.RetryReason {
	if !tr.reused.Load() || tr.firstByte.Load() {
		return prober.RetryNone
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(err.Error(), "server closed idle connection"):
		return prober.RetryConnClosed
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return prober.RetryConnReset
	}
	return prober.RetryConnError
}

// resendClient returns the HTTP client resends go through: Options.
// ResendHTTPClient, the client's own when it built its transport, else
// Options.HTTPClient (whose pool may then hand the resend another stale
// connection).
func (c *Client) resendClient() *http.Client {
	if c.resend != nil {
		return c.resend
	}
	return c.hc
}
