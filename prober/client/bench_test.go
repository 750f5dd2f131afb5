package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/sse"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// benchStream is a realistic vLLM /v1/completions stream of n tokens (as
// vLLM serializes chunks), a usage chunk and [DONE], one event per element;
// with logprobs, every token chunk carries vLLM's completions logprobs
// object (CompletionLogProbs, top 5 alternatives).
func benchStream(n int, logprobs bool) [][]byte {
	var evs [][]byte
	for i := range n {
		finish := "null"
		if i == n-1 {
			finish = `"length"`
		}
		lp := "null"
		if logprobs {
			lp = fmt.Sprintf(`{"text_offset":[%d],"token_logprobs":[-0.1234567],"tokens":[" token%d"],`+
				`"top_logprobs":[{" token%d":-0.1234567," alt1":-1.2345678," alt2":-2.3456789," alt3":-3.4567891," alt4":-4.5678912}]}`, 7*i, i, i)
		}
		evs = append(evs, fmt.Appendf(nil, "data: {\"id\":\"cmpl-5f3c0b1e8a2d4c6f9e7b1a3d5c7e9f0b\",\"object\":\"text_completion\","+
			"\"created\":1718000000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,"+
			"\"text\":\" token%d\",\"logprobs\":%s,\"finish_reason\":%s,\"stop_reason\":null}],\"usage\":null}\n\n", i, lp, finish))
	}
	evs = append(evs, fmt.Appendf(nil, "data: {\"id\":\"cmpl-5f3c0b1e8a2d4c6f9e7b1a3d5c7e9f0b\",\"object\":\"text_completion\","+
		"\"created\":1718000000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[],"+
		"\"usage\":{\"prompt_tokens\":128,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n", 128+n, n))
	evs = append(evs, []byte("data: [DONE]\n\n"))
	return evs
}

// eventReader hands out one event per Read, as a socket does when the
// server flushes per token.
type eventReader struct {
	evs [][]byte
	i   int
}

func (r *eventReader) Read(p []byte) (int, error) {
	if r.i == len(r.evs) {
		return 0, io.EOF
	}
	n := copy(p, r.evs[r.i])
	if n < len(r.evs[r.i]) {
		r.evs[r.i] = r.evs[r.i][n:]
	} else {
		r.i++
	}
	return n, nil
}

// measureBench is the loop the Measure benchmarks share: b.N runs of a
// measurer for api (maxTokens tokens) over the reader next returns.
type measureBench struct {
	api    *API
	tokens int
	next   func() io.Reader
	// unit names what the per-unit figures count ("event", "token") and
	// perRun how many of them one run has.
	unit   string
	perRun int
	// extraAllocs are the allocations next makes a run beyond the
	// reader (a copy of the events), left out of allocs/unit.
	extraAllocs uint64
	// phases derives the streaming HTTP phases after each run, as an
	// attempt with Options.Trace does.
	phases bool
}

// run runs the loop and reports ns, CPU ns and allocations per unit
// (per-request allocations amortised over the run); it returns the last
// run's Record.
func (mb measureBench) run(b *testing.B) prober.Record {
	p := sse.NewParser(nil, sse.Options{MaxBodyBytes: DefaultMaxBodyBytes})
	var rec prober.Record
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	b.ResetTimer()
	cpu := testutil.ProcessCPU()
	for range b.N {
		p.Reset(mb.next())
		rec = prober.Record{}
		m := measurer{rec: &rec, api: mb.api, t0: time.Now(), maxTokens: mb.tokens}
		class, msg, _ := m.run(p)
		if class != prober.ClassNone {
			b.Fatalf("%s: %s", class, msg)
		}
		if mb.phases {
			m.setStreamPhases(m.t0, class)
		}
	}
	b.StopTimer()
	cpuUsed := testutil.ProcessCPU() - cpu
	runtime.ReadMemStats(&ms)
	n := float64(b.N) * float64(mb.perRun)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/"+mb.unit)
	b.ReportMetric(float64(cpuUsed.Nanoseconds())/n, "cpu-ns/"+mb.unit)
	b.ReportMetric(float64(ms.Mallocs-mallocs-mb.extraAllocs*uint64(b.N))/n, "allocs/"+mb.unit)
	return rec
}

// BenchmarkMeasure is the per-event client hot path end to end: SSE parse,
// timestamp, JSON decode and Record update, over a 256-token stream. It
// reports ns/event and allocs/event (per-request allocations, such as the
// ITL slice, amortised over the stream's 258 events).
func BenchmarkMeasure(b *testing.B) {
	const tokens = 256
	evs := benchStream(tokens, false)
	whole := bytes.Join(evs, nil)
	for _, tc := range []struct {
		name   string
		reader func() io.Reader
	}{
		{name: "bytes.Reader", reader: func() io.Reader { return bytes.NewReader(whole) }},
		{name: "event_per_read", reader: func() io.Reader { return &eventReader{evs: evs} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rec := measureBench{api: &apis[0], tokens: tokens, next: tc.reader, unit: "event", perRun: len(evs)}.run(b)
			if rec.Events != tokens || rec.CompletionTokens != tokens || rec.FinishReason != "length" {
				b.Fatalf("record %+v", rec)
			}
		})
	}
}

// BenchmarkMeasureLogprobs is BenchmarkMeasure's event_per_read case over a
// stream whose token chunks carry logprobs (skipped by the decoder, only
// their presence recorded): ns/event and allocs/event must stay those of
// the plain stream, plus the bytes skipped.
func BenchmarkMeasureLogprobs(b *testing.B) {
	const tokens = 256
	evs := benchStream(tokens, true)
	rec := measureBench{api: &apis[0], tokens: tokens, next: func() io.Reader { return &eventReader{evs: evs} }, unit: "event", perRun: len(evs)}.run(b)
	if rec.Events != tokens || !rec.Logprobs || rec.FinishReason != "length" {
		b.Fatalf("record %+v", rec)
	}
}

// jsonChunk is what an encoding/json decoder would need to decode.
type jsonChunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content *string `json:"content"`
			Role    *string `json:"role"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     *int `json:"prompt_tokens"`
		CompletionTokens *int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// BenchmarkDecodeChunk compares the allocation-free decoder with
// encoding/json into the smallest struct that holds the same fields, on one
// vLLM token chunk (the reason the client has its own decoder).
func BenchmarkDecodeChunk(b *testing.B) {
	data := bytes.TrimSuffix(bytes.TrimPrefix(benchStream(2, false)[0], []byte("data: ")), []byte("\n\n"))
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var c chunk
		cpu := testutil.ProcessCPU()
		for range b.N {
			if err := decodeChunk(data, &c); err != nil || c.choices != 1 {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var c jsonChunk
			if err := json.Unmarshal(data, &c); err != nil || len(c.Choices) != 1 {
				b.Fatal(err)
			}
		}
	})
}

// memTransport answers every request with the same in-memory stream, one
// event per Read, without a network.
type memTransport struct{ evs [][]byte }

func (t memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
		Body:   io.NopCloser(&eventReader{evs: t.evs}), Request: req}, nil
}

// BenchmarkDo is one whole request through Client.Do against an in-memory
// stream of 64 tokens (vLLM's chunks, one event per read): payload, request,
// timers, parse, decode and Record, without the network. It reports CPU
// time, bytes and allocations per request.
func BenchmarkDo(b *testing.B) {
	const tokens = 64
	evs := benchStream(tokens, false)
	for _, tc := range []struct {
		name    string
		o       Options
		metrics bool
	}{
		{name: "plain", o: Options{}},
		{name: "timeouts+trace", o: Options{Timeout: time.Minute, TTFTTimeout: time.Minute, StallTimeout: time.Minute, Trace: true}},
		// --tracing.metrics: the OTLP GenAI histograms (exported every
		// 60 s, so not within the loop).
		{name: "otlp-metrics", o: Options{}, metrics: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := tc.o
			if tc.metrics {
				rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
				b.Cleanup(rcv.Close)
				m, err := tracing.NewMetrics(context.Background(), tracing.Options{Endpoint: rcv.URL, Insecure: true})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = m.Shutdown(context.Background()) })
				o.Metrics = m
			}
			o.BaseURL = "http://127.0.0.1:1"
			o.Model = "m"
			o.HTTPClient = &http.Client{Transport: memTransport{evs: evs}}
			c, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			req := Request{ID: "bench-0123456789", Prompt: "a prompt of a few words", MaxTokens: tokens, IgnoreEOS: true}
			var rec prober.Record
			ctx := context.Background()
			b.ReportAllocs()
			cpu := testutil.ProcessCPU()
			for b.Loop() {
				rec = prober.Record{Scheduled: time.Now()}
				c.Do(ctx, req, &rec)
				if !rec.OK() || rec.Events != tokens {
					b.Fatalf("%s: %s", rec.Error, rec.ErrorMessage)
				}
			}
			b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
