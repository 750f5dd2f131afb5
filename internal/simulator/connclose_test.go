package simulator

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCloseAfterStreamFlag: --close-after-stream takes the modes, "off" is
// the default (the empty Config value), anything else names the flag.
func TestCloseAfterStreamFlag(t *testing.T) {
	for _, mode := range CloseModes {
		cfg, err := parseFlags("--close-after-stream=" + mode)
		want := mode
		if mode == CloseOff {
			want = ""
		}
		if err != nil || cfg.CloseAfterStream != want {
			t.Errorf("%s: %q, %v", mode, cfg.CloseAfterStream, err)
		}
	}
	if _, err := parseFlags("--close-after-stream=sometimes"); err == nil || !strings.Contains(err.Error(), "--close-after-stream") {
		t.Errorf("bad mode: %v", err)
	}
	c := DefaultConfig()
	c.CloseAfterStream = "sometimes"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--close-after-stream") {
		t.Errorf("Validate: %v", err)
	}
}

// rawConn serves cfg with Serve and opens one raw TCP connection to it.
func rawConn(t *testing.T, mode string) (net.Conn, *bufio.Reader) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.StepBase, cfg.StepPerPrefillToken, cfg.StepPerSeq = time.Millisecond, 0, 0
	cfg.CloseAfterStream = mode
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		s.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// streamOnce writes one streamed completions request on conn and reads its
// whole response.
func streamOnce(t *testing.T, conn net.Conn, br *bufio.Reader) *http.Response {
	t.Helper()
	writeStreamRequest(t, conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(body), "data: [DONE]") {
		t.Fatalf("body %q, %v", body, err)
	}
	return resp
}

func writeStreamRequest(t *testing.T, conn net.Conn) {
	t.Helper()
	body := `{"prompt":"hello","max_tokens":3,"stream":true}`
	req := "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
}

// TestCloseAfterStreamModes pins each mode on the wire: immediate closes
// after the stream although the response announced keep-alive; on-reuse
// keeps the connection until the next request and closes it unanswered;
// announced says Connection: close; off answers a second request.
func TestCloseAfterStreamModes(t *testing.T) {
	t.Run("immediate", func(t *testing.T) {
		conn, br := rawConn(t, CloseImmediate)
		resp := streamOnce(t, conn, br)
		if resp.Close || resp.Header.Get("Connection") != "" {
			t.Errorf("the response announced the close: %v", resp.Header)
		}
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("after the stream: %v, want EOF (closed)", err)
		}
	})
	t.Run("on-reuse", func(t *testing.T) {
		conn, br := rawConn(t, CloseOnReuse)
		resp := streamOnce(t, conn, br)
		if resp.Close {
			t.Errorf("the response announced the close: %v", resp.Header)
		}
		writeStreamRequest(t, conn)
		if b, err := br.ReadByte(); err == nil {
			t.Errorf("the reuse got a response byte %q", b)
		}
	})
	t.Run("announced", func(t *testing.T) {
		conn, br := rawConn(t, CloseAnnounced)
		if resp := streamOnce(t, conn, br); !resp.Close {
			t.Errorf("no Connection: close: %v", resp.Header)
		}
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("after the response: %v, want EOF", err)
		}
	})
	t.Run("off", func(t *testing.T) {
		conn, br := rawConn(t, "")
		streamOnce(t, conn, br)
		if resp := streamOnce(t, conn, br); resp.Close {
			t.Errorf("closed: %v", resp.Header)
		}
	})
}
