package scrape

import (
	"bytes"
)

// yieldEvery is the most a yieldReader hands out per read.
const yieldEvery = 1 << 10

// yieldReader hands the text parser a /metrics page a KiB at a time and
// calls yield (runtime.Gosched) before every read but the first, so that
// parsing a page (1–3 ms of CPU for a vLLM one) does not hold the only P of
// a prober pinned to one core: Go does not time-slice a running goroutine
// before 10 ms, and a sweep's sends and stream reads would wait behind the
// whole parse (docs/performance.md). The parse and its result are the same.
type yieldReader struct {
	r     *bytes.Reader
	yield func()
	reads int
}

func (y *yieldReader) Read(p []byte) (int, error) {
	if y.reads > 0 {
		y.yield()
	}
	y.reads++
	return y.r.Read(p[:min(len(p), yieldEvery)])
}
