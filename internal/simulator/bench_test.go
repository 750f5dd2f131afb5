package simulator_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// BenchmarkStreamingCompletion measures the simulator's own overhead: one op
// is a streaming completion of 32 tokens read to [DONE], with a 10µs step
// (so the HTTP/SSE path, not the engine model, dominates).
func BenchmarkStreamingCompletion(b *testing.B) {
	cfg := fastConfig()
	cfg.StepBase = 10 * time.Microsecond
	cfg.StepPerSeq, cfg.StepPerPrefillToken = 0, 0
	base, _ := simtest.Start(b, cfg)
	body := `{"prompt":"a b c d","max_tokens":32,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	client := &http.Client{}
	defer client.CloseIdleConnections()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.HasSuffix(string(data), "data: [DONE]\n\n") {
				b.Errorf("stream did not end with [DONE]")
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)*32/b.Elapsed().Seconds(), "tokens/s")
}
