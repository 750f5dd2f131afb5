package sse

import (
	"fmt"
	"io"
	"testing"
)

// vllmCompletionStream is a realistic vLLM /v1/completions stream: token
// chunks as vLLM serializes them, a final usage chunk and [DONE].
func vllmCompletionStream(tokens int) [][]byte {
	var evs [][]byte
	for i := range tokens {
		finish := "null"
		if i == tokens-1 {
			finish = `"length"`
		}
		evs = append(evs, fmt.Appendf(nil, "data: {\"id\":\"cmpl-5f3c0b1e8a2d4c6f9e7b1a3d5c7e9f0b\",\"object\":\"text_completion\","+
			"\"created\":1718000000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,"+
			"\"text\":\" token%d\",\"logprobs\":null,\"finish_reason\":%s,\"stop_reason\":null}],\"usage\":null}\n\n", i, finish))
	}
	evs = append(evs, []byte("data: {\"id\":\"cmpl-5f3c0b1e8a2d4c6f9e7b1a3d5c7e9f0b\",\"object\":\"text_completion\","+
		"\"created\":1718000000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[],"+
		"\"usage\":{\"prompt_tokens\":128,\"total_tokens\":384,\"completion_tokens\":256}}\n\n"))
	evs = append(evs, []byte("data: [DONE]\n\n"))
	return evs
}

// cycleReader returns one group of per events per Read, cycling forever,
// as a socket delivering events as the server flushes them.
type cycleReader struct {
	evs [][]byte
	per int
	i   int
}

func (r *cycleReader) Read(p []byte) (int, error) {
	n := 0
	for range r.per {
		ev := r.evs[r.i%len(r.evs)]
		if n+len(ev) > len(p) {
			break
		}
		n += copy(p[n:], ev)
		r.i++
	}
	if n == 0 {
		return 0, io.ErrShortBuffer
	}
	return n, nil
}

// BenchmarkParseEvent measures the parser per event (one op = one event):
// one event per read (typical of a streaming server flushing per token) and
// eight per read (a client that falls behind, or coalescing proxies).
func BenchmarkParseEvent(b *testing.B) {
	evs := vllmCompletionStream(256)
	for _, per := range []int{1, 8} {
		b.Run(fmt.Sprintf("events_per_read=%d", per), func(b *testing.B) {
			p := NewParser(&cycleReader{evs: evs, per: per}, Options{})
			var bytes int
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ev, err := p.Next()
				if err != nil {
					b.Fatal(err)
				}
				bytes += len(ev.Data)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
			b.SetBytes(int64(bytes / max(b.N, 1)))
		})
	}
}
