package simulator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

const stall = 150 * time.Millisecond

// timedEvent is one SSE line as the client received it.
type timedEvent struct {
	at   time.Time
	data string
}

// streamTimed posts a streaming completion and records when the headers and
// each data line arrived; err is the read error that ended the stream (nil
// at a clean EOF). headers are name, value pairs.
func streamTimed(t *testing.T, ctx context.Context, url, body string, headers ...string) (status int, headersAt time.Time, events []timedEvent, err error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, time.Time{}, nil, err
	}
	defer resp.Body.Close()
	headersAt = time.Now()
	r := bufio.NewReader(resp.Body)
	for {
		line, rerr := r.ReadString('\n')
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok && strings.HasSuffix(line, "\n") {
			events = append(events, timedEvent{time.Now(), d})
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				rerr = nil
			}
			return resp.StatusCode, headersAt, events, rerr
		}
	}
}

func faults(mut func(*simulator.Faults)) simulator.Faults {
	f := simulator.DefaultFaults()
	f.StallDuration = stall
	mut(&f)
	return f
}

const streamBody = `{"prompt":"a b c","max_tokens":8,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`

func TestErrorFaults(t *testing.T) {
	base, sim := simtest.Start(t, fastConfig())
	tests := []struct {
		name       string
		faults     simulator.Faults
		status     int
		errType    string
		retryAfter string
	}{
		{"http-429", faults(func(f *simulator.Faults) { f.HTTP429 = 1 }), 429, "RateLimitError", "1"},
		{"http-500", faults(func(f *simulator.Faults) { f.HTTP500 = 1 }), 500, "InternalServerError", ""},
		{"http-503", faults(func(f *simulator.Faults) { f.HTTP503 = 1 }), 503, "ServiceUnavailableError", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim.SetFaults(tt.faults)
			defer sim.SetFaults(simulator.DefaultFaults())
			for _, body := range []string{streamBody, `{"prompt":"a","max_tokens":2}`} {
				var out struct {
					Error struct {
						Type string `json:"type"`
						Code int    `json:"code"`
					} `json:"error"`
				}
				h := postJSON(t, base+"/v1/completions", body, tt.status, &out)
				if out.Error.Type != tt.errType || out.Error.Code != tt.status || h.Get("Retry-After") != tt.retryAfter {
					t.Errorf("error %+v, Retry-After %q", out.Error, h.Get("Retry-After"))
				}
			}
		})
	}
	// Back to normal once the faults are cleared.
	postJSON(t, base+"/v1/completions", `{"prompt":"a","max_tokens":2}`, 200, nil)
}

func TestStreamFaults(t *testing.T) {
	base, sim := simtest.Start(t, fastConfig())
	url := base + "/v1/completions"
	tests := []struct {
		name   string
		faults simulator.Faults
		body   string // default streamBody
		check  func(t *testing.T, start, headers time.Time, ev []timedEvent, err error)
	}{
		{
			name:   "stall before first token",
			faults: faults(func(f *simulator.Faults) { f.StallBeforeFirstToken = 1 }),
			check: func(t *testing.T, start, headers time.Time, ev []timedEvent, err error) {
				if err != nil || len(ev) == 0 || ev[len(ev)-1].data != "[DONE]" {
					t.Fatalf("stream not complete: %v, %d events", err, len(ev))
				}
				if headers.Sub(start) >= stall {
					t.Errorf("headers took %v: they must come before the stall", headers.Sub(start))
				}
				if d := ev[0].at.Sub(start); d < stall {
					t.Errorf("first token after %v, want >= %v", d, stall)
				}
			},
		},
		{
			name:   "stall mid-stream",
			faults: faults(func(f *simulator.Faults) { f.StallMidStream = 1 }),
			check: func(t *testing.T, start, headers time.Time, ev []timedEvent, err error) {
				if err != nil || len(ev) < 3 || ev[len(ev)-1].data != "[DONE]" {
					t.Fatalf("stream not complete: %v, %d events", err, len(ev))
				}
				if d := ev[0].at.Sub(start); d >= stall {
					t.Errorf("first token after %v: the stall must come mid-stream", d)
				}
				maxGap := time.Duration(0)
				for i := 1; i < len(ev); i++ {
					maxGap = max(maxGap, ev[i].at.Sub(ev[i-1].at))
				}
				// The stream cannot end before the stall has passed; the
				// stall shows as one gap, shortened only by how late this
				// (possibly starved) reader took the event before it.
				if total := ev[len(ev)-1].at.Sub(start); total < stall {
					t.Errorf("stream ended after %v, before the %v stall", total, stall)
				}
				if maxGap < stall*3/4 {
					t.Errorf("largest gap %v, want about %v", maxGap, stall)
				}
			},
		},
		{
			name:   "cut stream",
			faults: faults(func(f *simulator.Faults) { f.CutStream = 1 }),
			check: func(t *testing.T, start, headers time.Time, ev []timedEvent, err error) {
				if len(ev) == 0 {
					t.Fatalf("no events before the cut: %v", err)
				}
				tokens := 0
				for _, e := range ev {
					if e.data == "[DONE]" {
						t.Fatal("[DONE] after a cut")
					}
					var c streamChunk
					if json.Unmarshal([]byte(e.data), &c) != nil || len(c.Choices) == 0 {
						t.Fatalf("unexpected event after a cut: %q", e.data)
					}
					tokens += len(strings.Fields(c.Choices[0].Text))
				}
				// Exactly half, even when the engine ran ahead of the client.
				if tokens != 4 {
					t.Errorf("%d tokens before the cut, want 4 of 8", tokens)
				}
			},
		},
		{
			name:   "malformed event",
			faults: faults(func(f *simulator.Faults) { f.MalformedEvent = 1 }),
			check: func(t *testing.T, start, headers time.Time, ev []timedEvent, err error) {
				if err != nil || len(ev) == 0 || ev[len(ev)-1].data != "[DONE]" {
					t.Fatalf("stream not complete: %v, %d events", err, len(ev))
				}
				bad := 0
				for _, e := range ev[:len(ev)-1] {
					if !json.Valid([]byte(e.data)) {
						bad++
					}
				}
				if bad != 1 {
					t.Errorf("%d malformed events, want 1", bad)
				}
			},
		},
		{
			name: "slow drip",
			faults: faults(func(f *simulator.Faults) {
				f.SlowDrip = 1
				f.SlowDripInterval = 100 * time.Microsecond
			}),
			body: `{"prompt":"a","max_tokens":1,"stream":true}`,
			check: func(t *testing.T, start, headers time.Time, ev []timedEvent, err error) {
				if err != nil || len(ev) == 0 || ev[len(ev)-1].data != "[DONE]" {
					t.Fatalf("stream not complete: %v, %d events", err, len(ev))
				}
				size := 0
				for _, e := range ev {
					size += len("data: ") + len(e.data) + 2
				}
				// Every byte but the last of each write waits the interval.
				if d, lower := ev[len(ev)-1].at.Sub(headers), time.Duration(size-2*len(ev))*100*time.Microsecond; d < lower {
					t.Errorf("%d bytes dripped in %v, want >= %v", size, d, lower)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim.SetFaults(tt.faults)
			defer sim.SetFaults(simulator.DefaultFaults())
			body := streamBody
			if tt.body != "" {
				body = tt.body
			}
			start := time.Now()
			status, headers, ev, err := streamTimed(t, context.Background(), url, body)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			tt.check(t, start, headers, ev, err)
		})
	}
}

func TestNonStreamingFaults(t *testing.T) {
	base, sim := simtest.Start(t, fastConfig())
	body := `{"prompt":"a b c","max_tokens":3,"ignore_eos":true}`
	tests := []struct {
		name    string
		faults  simulator.Faults
		minTime time.Duration
		wantErr bool // reading the body fails
		valid   bool // the body is valid JSON
	}{
		{"stall before first token", faults(func(f *simulator.Faults) { f.StallBeforeFirstToken = 1 }), stall, false, true},
		{"stall mid-stream", faults(func(f *simulator.Faults) { f.StallMidStream = 1 }), stall, false, true},
		{"cut", faults(func(f *simulator.Faults) { f.CutStream = 1 }), 0, true, false},
		{"malformed", faults(func(f *simulator.Faults) { f.MalformedEvent = 1 }), 0, false, false},
		{"slow drip", faults(func(f *simulator.Faults) { f.SlowDrip = 1; f.SlowDripInterval = 100 * time.Microsecond }), 10 * time.Millisecond, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim.SetFaults(tt.faults)
			defer sim.SetFaults(simulator.DefaultFaults())
			start := time.Now()
			resp := post(t, base+"/v1/completions", body)
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if d := time.Since(start); d < tt.minTime {
				t.Errorf("answered in %v, want >= %v", d, tt.minTime)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("read error %v, want error: %v", err, tt.wantErr)
			}
			if json.Valid(raw) != tt.valid {
				t.Errorf("body %q: valid JSON %v, want %v", raw, json.Valid(raw), tt.valid)
			}
		})
	}
}

func TestConnectionReset(t *testing.T) {
	base, sim := simtest.Start(t, fastConfig())
	sim.SetFaults(faults(func(f *simulator.Faults) { f.ConnectionReset = 1 }))
	for _, body := range []string{streamBody, `{"prompt":"a","max_tokens":2}`} {
		resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got status %d, want a reset connection", resp.StatusCode)
		}
	}
	sim.SetFaults(simulator.DefaultFaults())
	postJSON(t, base+"/v1/completions", `{"prompt":"a","max_tokens":2}`, 200, nil)
}

func TestHang(t *testing.T) {
	base, sim := simtest.Start(t, fastConfig())
	sim.SetFaults(faults(func(f *simulator.Faults) { f.Hang = 1 }))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	status, _, ev, err := streamTimed(t, ctx, base+"/v1/completions", streamBody)
	if status != 200 || len(ev) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung stream: status %d, %d events, err %v; want 200, none, deadline exceeded", status, len(ev), err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	req, _ := http.NewRequestWithContext(ctx2, http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("non-streaming hang answered %d", resp.StatusCode)
	}
	getJSON(t, base+"/health", nil) // during a hang
	var models struct{ Data []any }
	getJSON(t, base+"/v1/models", &models)
	if len(models.Data) != 1 {
		t.Error("/v1/models during a hang")
	}
}

// TestFaultDrawsDeterministic checks that fault draws depend on the seed and
// the request order only, and hit about the configured share.
func TestFaultDrawsDeterministic(t *testing.T) {
	pattern := func(seed int64) string {
		cfg := fastConfig()
		cfg.Seed = seed
		cfg.Faults.HTTP500 = 0.5
		base, _ := simtest.Start(t, cfg)
		var b strings.Builder
		for range 40 {
			resp := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":1}`)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			b.WriteByte("xo"[min(1, resp.StatusCode/500)])
		}
		return b.String()
	}
	a, b, c := pattern(1), pattern(1), pattern(2)
	if a != b {
		t.Errorf("same seed, different draws:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("different seeds, same draws: %s", a)
	}
	if n := strings.Count(a, "o"); n < 8 || n > 32 {
		t.Errorf("%d of 40 requests failed at probability 0.5: %s", n, a)
	}
}
