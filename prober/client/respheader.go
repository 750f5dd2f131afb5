package client

import "strings"

// MaxResponseHeaderBytes bounds the header block of a response read by
// NewTransport's clients (net/http's default is 10 MB): an inference
// server's headers are a few hundred bytes. A larger block fails the
// request as invalid_response (badResponseHeader).
const MaxResponseHeaderBytes = 1 << 20

// badResponseHeader reports whether err, from an HTTP client's Do, is the
// transport refusing the response's header block (larger than its
// MaxResponseHeaderBytes, or not HTTP): the server answered, so the
// request is an invalid_response, not a connect failure. net/http has no
// error type for these; its messages are stable ("net/http: server
// response headers exceeded N bytes; aborted", "malformed HTTP response").
func badResponseHeader(err error) bool {
	s := err.Error()
	return strings.Contains(s, "server response headers exceeded") || strings.Contains(s, "malformed HTTP ")
}
