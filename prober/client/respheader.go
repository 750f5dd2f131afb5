package client

import "strings"

// badResponseHeader reports whether err, from an HTTP client's Do, is the
// transport refusing the response's header block (larger than its
// MaxResponseHeaderBytes, net/http's 10 MB by default, or not HTTP): the server answered, so the
// request is an invalid_response, not a connect failure. net/http has no
// error type for these; its messages are stable ("net/http: server
// response headers exceeded N bytes; aborted", "malformed HTTP response").
func badResponseHeader(err error) bool {
	s := err.Error()
	return strings.Contains(s, "server response headers exceeded") || strings.Contains(s, "malformed HTTP ")
}
