package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// closedLoop runs workers goroutines that each send per requests one after
// the other (a closed loop) and returns every Record.
func closedLoop(t *testing.T, c *Client, workers, per int) []prober.Record {
	t.Helper()
	recs := make([]prober.Record, workers*per)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for j := range per {
				rec := &recs[w*per+j]
				rec.Scheduled = time.Now()
				c.Do(context.Background(), Request{ID: fmt.Sprintf("w%d-%d", w, j), Prompt: "hello there, simulator",
					MaxTokens: 4, IgnoreEOS: true}, rec)
			}
		})
	}
	wg.Wait()
	return recs
}

// loopCounts counts the failed and the resent records.
func loopCounts(recs []prober.Record) (failed, retried int, firstErr string) {
	for _, r := range recs {
		if !r.OK() {
			failed++
			if firstErr == "" {
				firstErr = string(r.Error) + ": " + r.ErrorMessage
			}
		}
		if r.Retry != prober.RetryNone {
			retried++
		}
	}
	return failed, retried, firstErr
}

// sendTimes is a RoundTripper that notes when each request id was handed to
// it, through which client (0 the main one, 1 the resend one).
type sendTimes struct {
	rt     http.RoundTripper
	client int
	mu     *sync.Mutex
	at     map[string][]sendTime
}

type sendTime struct {
	client int
	at     time.Time
}

func (s sendTimes) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	id := r.Header.Get("X-Request-Id")
	s.at[id] = append(s.at[id], sendTime{s.client, time.Now()})
	s.mu.Unlock()
	return s.rt.RoundTrip(r)
}

// TestResendOnStaleConnection is issue 22 V8: a server that closes the
// connection after each streamed response while announcing keep-alive
// (llama.cpp's llama-server; the simulator's on-reuse mode makes every
// reuse fail) must not fail closed loops of concurrency 4, 8 and 32: each
// request put on such a connection is resent once on a new one, and says
// so. The same loops with resending off fail, which is what the test
// guards against; and the resend is measured from its own send.
func TestResendOnStaleConnection(t *testing.T) {
	cfg := simtest.Fast()
	cfg.CloseAfterStream = simulator.CloseOnReuse
	base, _ := simtest.Start(t, cfg)
	for _, n := range []int{4, 8, 32} {
		t.Run(fmt.Sprint("concurrency ", n), func(t *testing.T) {
			var mu sync.Mutex
			at := map[string][]sendTime{}
			c := newClient(t, Options{BaseURL: base,
				HTTPClient:       &http.Client{Transport: sendTimes{NewTransport(), 0, &mu, at}, CheckRedirect: NoRedirects},
				ResendHTTPClient: &http.Client{Transport: sendTimes{NewTransport(), 1, &mu, at}, CheckRedirect: NoRedirects}})
			recs := closedLoop(t, c, n, 6)
			failed, retried, first := loopCounts(recs)
			if failed != 0 || retried == 0 {
				t.Fatalf("%d of %d requests failed (first: %s), %d resent; want none failed and some resent",
					failed, len(recs), first, retried)
			}
			for _, r := range recs {
				sends := at[r.RequestID]
				switch {
				case r.Retry == prober.RetryNone && len(sends) != 1,
					r.Retry != prober.RetryNone && (len(sends) != 2 || sends[0].client != 0 || sends[1].client != 1):
					t.Fatalf("%s (retry %q) was handed to the clients %v", r.RequestID, r.Retry, sends)
				case r.Retry != prober.RetryNone && !slices.Contains(prober.RetryReasons, r.Retry):
					t.Fatalf("%s: retry reason %q", r.RequestID, r.Retry)
				case r.Retry != prober.RetryNone && !r.Sent.After(sends[0].at):
					// The record is the resend's: its t0 comes after the
					// first attempt was handed over (and failed).
					t.Fatalf("%s: sent %v, not after the first attempt at %v", r.RequestID, r.Sent, sends[0].at)
				case r.TTFT <= 0 || r.E2E < r.TTFT || r.SendLag < 0:
					t.Fatalf("%s: TTFT %v E2E %v send lag %v", r.RequestID, r.TTFT, r.E2E, r.SendLag)
				}
			}
			t.Logf("concurrency %d: %d requests, %d resent", n, len(recs), retried)

			off := newClient(t, Options{BaseURL: base})
			off.noResend = true
			recs = closedLoop(t, off, n, 6)
			if failed, retried, _ := loopCounts(recs); failed == 0 || retried != 0 {
				t.Fatalf("without resending: %d of %d failed, %d resent; want failures (the defect) and no resend",
					failed, len(recs), retried)
			}
		})
	}
}

// TestResendImmediateClose runs the closed loop against the close that
// llama-server makes (right after the stream, keep-alive announced): which
// requests meet a closed connection is a race, but none may fail.
func TestResendImmediateClose(t *testing.T) {
	cfg := simtest.Fast()
	cfg.CloseAfterStream = simulator.CloseImmediate
	base, _ := simtest.Start(t, cfg)
	c := newClient(t, Options{BaseURL: base})
	recs := closedLoop(t, c, 8, 8)
	failed, retried, first := loopCounts(recs)
	if failed != 0 {
		t.Fatalf("%d of %d requests failed (first: %s)", failed, len(recs), first)
	}
	off := newClient(t, Options{BaseURL: base})
	off.noResend = true
	offFailed, _, offFirst := loopCounts(closedLoop(t, off, 8, 8))
	t.Logf("%d requests, %d resent; without resending %d failed (%s)", len(recs), retried, offFailed, offFirst)
}

// TestConnectionCloseHonoured: a server that answers Connection: close
// gets a new connection for every request, and nothing is resent.
func TestConnectionCloseHonoured(t *testing.T) {
	cfg := simtest.Fast()
	cfg.CloseAfterStream = simulator.CloseAnnounced
	base, _ := simtest.Start(t, cfg)
	var dials atomic.Int64
	tr := NewTransport()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	c := newClient(t, Options{BaseURL: base, HTTPClient: &http.Client{Transport: tr, CheckRedirect: NoRedirects}})
	recs := closedLoop(t, c, 4, 5)
	failed, retried, first := loopCounts(recs)
	if failed != 0 || retried != 0 || dials.Load() != int64(len(recs)) {
		t.Fatalf("%d of %d failed (first: %s), %d resent, %d connections; want 0, 0, one per request",
			failed, len(recs), first, retried, dials.Load())
	}
}
