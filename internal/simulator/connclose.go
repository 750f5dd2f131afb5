package simulator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/alecthomas/kingpin/v2"
)

// Connection-close modes (Config.CloseAfterStream, `--close-after-stream`):
// how the simulator ends the connection of a streamed response. llama.cpp's
// llama-server closes the connection after each streamed response although
// the response announced keep-alive (no `Connection: close`); a client that
// reuses such a connection writes its next request into a dead socket and
// gets EOF or a reset before any response byte (issue 22 V8).
const (
	// CloseOff keeps connections alive as announced (the default; "" too).
	CloseOff = "off"
	// CloseImmediate closes the connection right after the last byte of
	// each streamed response, without saying so: llama-server's
	// behaviour. Whether a client then fails depends on a race: it fails
	// when it reuses the connection before it has seen the close.
	CloseImmediate = "immediate"
	// CloseOnReuse keeps the connection of each streamed response open,
	// without saying anything, and closes it when the next request arrives
	// on it, unanswered: the worst case of llama-server's race, where
	// every reuse fails. Deterministic, for tests. It needs the
	// simulator's own server (Serve: simtest.Start, `llmprobe simulate`);
	// behind another server's handler it does nothing.
	CloseOnReuse = "on-reuse"
	// CloseAnnounced answers every request with `Connection: close` and
	// closes the connection after the response, as HTTP says a server
	// that does not keep connections should.
	CloseAnnounced = "announced"
)

// CloseModes lists the values of --close-after-stream.
var CloseModes = []string{CloseOff, CloseImmediate, CloseOnReuse, CloseAnnounced}

// validateCloseAfterStream checks Config.CloseAfterStream.
func (c Config) validateCloseAfterStream() error {
	if c.CloseAfterStream != "" && !slices.Contains(CloseModes, c.CloseAfterStream) {
		return fmt.Errorf("--close-after-stream must be one of %s, got %q", strings.Join(CloseModes, ", "), c.CloseAfterStream)
	}
	return nil
}

// addCloseFlags adds --close-after-stream.
func addCloseFlags(cmd *kingpin.CmdClause, c *Config) {
	cmd.Flag("close-after-stream", "How the connection of a streamed response ends: off (kept alive), immediate "+
		"(closed after the response although it announced keep-alive, as llama.cpp's llama-server does), on-reuse "+
		"(closed, unanswered, when the next request arrives on it: every reuse fails) or announced "+
		"(every response says Connection: close and the connection is closed).").
		Default(closeFlag{&c.CloseAfterStream}.String()).SetValue(closeFlag{&c.CloseAfterStream})
}

// closeFlag is --close-after-stream: "off" is the empty Config value.
type closeFlag struct{ p *string }

func (f closeFlag) Set(s string) error {
	if !slices.Contains(CloseModes, s) {
		return fmt.Errorf("--close-after-stream must be one of %s, got %q", strings.Join(CloseModes, ", "), s)
	}
	if s == CloseOff {
		s = ""
	}
	*f.p = s
	return nil
}

func (f closeFlag) String() string {
	if *f.p == "" {
		return CloseOff
	}
	return *f.p
}

// connState is what the simulator's server keeps per connection
// (Serve's ConnContext).
type connState struct {
	// closeNext is set after a streamed response in CloseOnReuse mode:
	// the next request on the connection closes it.
	closeNext atomic.Bool
}

// connStateKey is the context key of a connection's *connState.
type connStateKey struct{}

// connContext gives each connection of Serve's server its connState.
func connContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connStateKey{}, &connState{})
}

// closeAfterStream wraps the API with the connection-close mode of the
// configuration; off, it returns next.
func (s *Simulator) closeAfterStream(next http.Handler) http.Handler {
	switch s.cfg.CloseAfterStream {
	case CloseAnnounced:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Go's server closes the connection after a response whose
			// handler set Connection: close.
			w.Header().Set("Connection", "close")
			next.ServeHTTP(w, r)
		})
	case CloseImmediate:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if streamed(w) {
				closeChunked(w)
			}
		})
	case CloseOnReuse:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st, _ := r.Context().Value(connStateKey{}).(*connState)
			if st != nil && st.closeNext.Load() {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close() // the request is read, never answered
					return
				}
			}
			next.ServeHTTP(w, r)
			if st != nil && streamed(w) {
				st.closeNext.Store(true)
			}
		})
	}
	return next
}

// streamed reports whether the response written to w was an event stream
// sent with chunked encoding (no Content-Length).
func streamed(w http.ResponseWriter) bool {
	h := w.Header()
	return strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") && h.Get("Content-Length") == ""
}

// closeChunked ends the chunked response written to w itself — the last
// chunk, the keep-alive the headers announced notwithstanding — and closes
// the connection.
func closeChunked(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	conn, buf, err := rc.Hijack()
	if err != nil {
		return // HTTP/2 or already gone: the server ends the response
	}
	defer conn.Close()
	_, _ = buf.WriteString("0\r\n\r\n")
	_ = buf.Flush()
}
