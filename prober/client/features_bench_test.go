package client

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/sse"
)

// benchStreamLogprobs is benchStream with vLLM's completions logprobs
// object (CompletionLogProbs, top 5 alternatives) on every token chunk.
func benchStreamLogprobs(n int) [][]byte {
	var evs [][]byte
	for i := range n {
		finish := "null"
		if i == n-1 {
			finish = `"length"`
		}
		lp := fmt.Sprintf(`{"text_offset":[%d],"token_logprobs":[-0.1234567],"tokens":[" token%d"],`+
			`"top_logprobs":[{" token%d":-0.1234567," alt1":-1.2345678," alt2":-2.3456789," alt3":-3.4567891," alt4":-4.5678912}]}`, 7*i, i, i)
		evs = append(evs, fmt.Appendf(nil, "data: {\"id\":\"cmpl-5f3c0b1e8a2d4c6f9e7b1a3d5c7e9f0b\",\"object\":\"text_completion\","+
			"\"created\":1718000000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,"+
			"\"text\":\" token%d\",\"logprobs\":%s,\"finish_reason\":%s,\"stop_reason\":null}],\"usage\":null}\n\n", i, lp, finish))
	}
	tail := benchStream(1)
	return append(evs, tail[len(tail)-2:]...)
}

// BenchmarkMeasureLogprobs is BenchmarkMeasure's event_per_read case over a
// stream whose token chunks carry logprobs (skipped by the decoder, only
// their presence recorded): ns/event and allocs/event must stay those of
// the plain stream, plus the bytes skipped.
func BenchmarkMeasureLogprobs(b *testing.B) {
	const tokens = 256
	evs := benchStreamLogprobs(tokens)
	p := sse.NewParser(nil, sse.Options{MaxBodyBytes: DefaultMaxBodyBytes})
	var rec prober.Record
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	b.ResetTimer()
	for range b.N {
		p.Reset(&eventReader{evs: evs})
		rec = prober.Record{}
		m := measurer{rec: &rec, api: &apis[0], t0: time.Now(), maxTokens: tokens}
		if class, msg, _ := m.run(p); class != prober.ClassNone {
			b.Fatalf("%s: %s", class, msg)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	events := float64(b.N) * float64(len(evs))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64(ms.Mallocs-mallocs)/events, "allocs/event")
	if rec.Events != tokens || !rec.Logprobs || rec.FinishReason != "length" {
		b.Fatalf("record %+v", rec)
	}
}
