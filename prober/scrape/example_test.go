package scrape_test

import (
	"fmt"
	"time"

	"github.com/llmprobe/llmprobe/prober/scrape"
)

// A counter served as OpenMetrics (as vLLM's Rust frontend does: TYPE by
// its base name, a _total and a _created sample) is found under the name
// the text format gives it, and the delta between two snapshots sees a
// restart by its created timestamp.
func ExampleNewSnapshot() {
	before, err := scrape.NewSnapshot(time.Unix(0, 0), []byte(`# TYPE vllm:request_success counter
vllm:request_success_total{finished_reason="stop"} 150 # {trace_id="4bf92f"} 1
vllm:request_success_created{finished_reason="stop"} 1752300000.1
# EOF
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	after, err := scrape.NewSnapshot(time.Unix(60, 0), []byte(`# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop"} 170
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	d, ok := scrape.CounterDelta(before, after, "vllm:request_success_total", nil)
	fmt.Println(before.Format, after.Format, d, ok)

	restarted, _ := scrape.NewSnapshot(time.Unix(60, 0), []byte(`# TYPE vllm:request_success counter
vllm:request_success_total{finished_reason="stop"} 170
vllm:request_success_created{finished_reason="stop"} 1752300050.3
# EOF
`))
	d, ok = scrape.CounterDelta(before, restarted, "vllm:request_success", nil)
	fmt.Println(d, ok)

	_, err = scrape.NewSnapshot(time.Unix(0, 0), []byte("# TYPE a counter\na_total 1\na_total 2\n# EOF\n"))
	fmt.Println(err)
	// Output:
	// OpenMetrics text 20 true
	// 170 true
	// parse OpenMetrics exposition: line 3: duplicate sample {__name__="a_total"}
}
