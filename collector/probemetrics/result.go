package probemetrics

import (
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Result metric family names: a one-shot sweep's summary, labelled by run
// name (and step), as `llmprobe sweep --push.url` pushes it.
const (
	NameRunKnee          = "llmprobe_run_knee_requests_per_second"
	NameRunKneeBracketed = "llmprobe_run_knee_bracketed"
	NameRunMaxGoodput    = "llmprobe_run_max_goodput_requests_per_second"
	NameRunComplete      = "llmprobe_run_complete"
	NameRunEnd           = "llmprobe_run_end_timestamp_seconds"
	NameRunStepGoodput   = "llmprobe_run_step_goodput_requests_per_second"
	NameRunStepRate      = "llmprobe_run_step_throughput_requests_per_second"
	NameRunStepTTFTP99   = "llmprobe_run_step_ttft_p99_seconds"
	NameRunStepTPOTP99   = "llmprobe_run_step_tpot_p99_seconds"
	NameRunStepE2EP99    = "llmprobe_run_step_e2e_p99_seconds"
	NameRunStepValid     = "llmprobe_run_step_valid"
)

// ResultNames returns the result metric family names in a stable order.
func ResultNames() []string {
	return []string{NameRunKnee, NameRunKneeBracketed, NameRunMaxGoodput, NameRunComplete, NameRunEnd,
		NameRunStepGoodput, NameRunStepRate, NameRunStepTTFTP99, NameRunStepTPOTP99, NameRunStepE2EP99, NameRunStepValid}
}

// ResultCollector exports a finished sweep's summary as gauges labelled
// run=<run> (the run name) and, per step, step=<label>: the knee (for a rate
// sweep) and whether it is bracketed, the max goodput, whether the run
// completed and when it ended, and each step's goodput, throughput, TTFT,
// TPOT and E2E p99 and validity. Register it in a registry of its own and
// push that (cmd/llmprobe's --push.url).
type ResultCollector struct {
	run string
	res *sweep.Result
}

// NewResultCollector returns the collector of res under run.
func NewResultCollector(run string, res *sweep.Result) *ResultCollector {
	return &ResultCollector{run: run, res: res}
}

var (
	runLabels  = []string{"run"}
	stepLabels = []string{"run", "step"}
	runDescs   = map[string]*prometheus.Desc{
		NameRunKnee: prometheus.NewDesc(NameRunKnee, "Capacity knee of the run (a lower bound when "+NameRunKneeBracketed+
			" is 0); absent for a closed-loop run.", runLabels, nil),
		NameRunKneeBracketed: prometheus.NewDesc(NameRunKneeBracketed, "1 when a higher level failed: the knee is bracketed.", runLabels, nil),
		NameRunMaxGoodput:    prometheus.NewDesc(NameRunMaxGoodput, "Highest goodput of a valid step, in requests per second.", runLabels, nil),
		NameRunComplete:      prometheus.NewDesc(NameRunComplete, "1 when the run completed, 0 when it was interrupted.", runLabels, nil),
		NameRunEnd:           prometheus.NewDesc(NameRunEnd, "Unix time the run ended.", runLabels, nil),
		NameRunStepGoodput:   prometheus.NewDesc(NameRunStepGoodput, "Goodput of the step (vLLM's request_goodput), req/s.", stepLabels, nil),
		NameRunStepRate:      prometheus.NewDesc(NameRunStepRate, "Request throughput of the step, req/s.", stepLabels, nil),
		NameRunStepTTFTP99:   prometheus.NewDesc(NameRunStepTTFTP99, "TTFT p99 of the step's successful requests, seconds.", stepLabels, nil),
		NameRunStepTPOTP99:   prometheus.NewDesc(NameRunStepTPOTP99, "TPOT p99 of the step's successful requests, seconds.", stepLabels, nil),
		NameRunStepE2EP99:    prometheus.NewDesc(NameRunStepE2EP99, "E2E latency p99 of the step's successful requests, seconds.", stepLabels, nil),
		NameRunStepValid:     prometheus.NewDesc(NameRunStepValid, "1 when the step was valid (no validity flag).", stepLabels, nil),
	}
)

// Describe implements prometheus.Collector.
func (c *ResultCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, n := range ResultNames() {
		ch <- runDescs[n]
	}
}

// Collect implements prometheus.Collector.
func (c *ResultCollector) Collect(ch chan<- prometheus.Metric) {
	res := c.res
	put := func(name string, v float64, labels ...string) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		ch <- prometheus.MustNewConstMetric(runDescs[name], prometheus.GaugeValue, v, labels...)
	}
	b := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	// A shard where no level passed has no knee to publish: 0 would read as
	// a knee of 0 (issue 22 V5); the merged run's is the sweep's.
	shardNoKnee := res.Fingerprint.Load.Shard != nil && res.Knee.Estimate() == 0
	if res.Mode != sweep.ModeClosed && !shardNoKnee {
		put(NameRunKnee, res.Knee.Estimate(), c.run)
	}
	put(NameRunKneeBracketed, b(res.Knee.Found), c.run)
	put(NameRunMaxGoodput, res.Knee.MaxGoodput, c.run)
	put(NameRunComplete, b(res.Complete), c.run)
	if end := res.Fingerprint.End; !end.IsZero() {
		put(NameRunEnd, float64(end.UnixNano())/1e9, c.run)
	}
	for _, st := range res.Steps {
		step := st.Label
		if st.Attempt > 1 {
			step += "/attempt=" + strconv.Itoa(st.Attempt) // the search reran an invalid level
		}
		put(NameRunStepGoodput, st.Stats.RequestGoodput, c.run, step)
		put(NameRunStepRate, st.Stats.RequestThroughput, c.run, step)
		if st.Stats.Completed > 0 {
			put(NameRunStepTTFTP99, st.Stats.TTFT.P99/1e3, c.run, step)
			put(NameRunStepTPOTP99, st.Stats.TPOT.P99/1e3, c.run, step)
			put(NameRunStepE2EP99, st.Stats.E2EL.P99/1e3, c.run, step)
		}
		put(NameRunStepValid, b(st.Validity.Valid), c.run, step)
	}
}
