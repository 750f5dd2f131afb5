package probemetrics

// Classic bucket upper bounds. The first three are vLLM's default bucket
// families (vllm/v1/metrics/buckets.py); DecodeLatencyBuckets contains every
// bound of vLLM's inter_token_latency family, so that an SLO threshold such as
// le="0.5" means the same thing for llmprobe_time_to_first_token_seconds and
// vllm:time_to_first_token_seconds and both can be queried with identical
// PromQL. The slices are shared: do not modify them.
var (
	// TTFTBuckets is vLLM's time_to_first_token family, used for
	// llmprobe_time_to_first_token_seconds.
	TTFTBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	}
	// InterTokenLatencyBuckets is vLLM's inter_token_latency family, which
	// vLLM uses for vllm:inter_token_latency_seconds and
	// vllm:request_time_per_output_token_seconds.
	InterTokenLatencyBuckets = []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
	}
	// DecodeLatencyBuckets is used for llmprobe_inter_token_latency_seconds
	// and llmprobe_time_per_output_token_seconds: every bound of
	// InterTokenLatencyBuckets (so le-based queries read the same on the
	// client and the server histogram) plus 10 finer bounds between 2.5 ms
	// and 60 ms, where fast decode lives. vLLM's 10-25 ms bucket holds a
	// 10 ms and a 15 ms TPOT alike, so a +50 % regression left the p99
	// unchanged; here no bucket below 100 ms is wider than a factor of 1.5
	// above 5 ms (steps of 2.5 ms up to 20 ms, then 25, 30, 40, 50, 60, 75).
	// 29 bounds: 10 series more per histogram, target and probe than
	// vLLM's family (30 bucket series with +Inf, plus _sum and _count).
	DecodeLatencyBuckets = []float64{
		0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.0175, 0.02, 0.025,
		0.03, 0.04, 0.05, 0.06, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
	}
	// RequestLatencyBuckets is vLLM's request_latency family, used for
	// llmprobe_e2e_request_latency_seconds.
	RequestLatencyBuckets = []float64{
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	}
	// ReasoningTokenBuckets is llmprobe's family for
	// llmprobe_reasoning_tokens: 1-2-5 steps from 1 to 100000 tokens, as
	// vLLM's request token histograms (build_1_2_5_buckets).
	ReasoningTokenBuckets = []float64{
		1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000,
	}
	// SendLagBuckets is llmprobe's own family for
	// llmprobe_request_send_lag_seconds (vLLM has no equivalent): fine
	// 1-2.5-5 steps from 100µs, so that a sweep's default client-saturation
	// limit (10 ms) and LLMProbeProberSaturated's (100 ms) are bucket
	// boundaries, up to 10 s.
	SendLagBuckets = []float64{
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
		0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
	}
)

// Native histogram settings shared by every llmprobe histogram: about 8
// buckets per power of two, at most 160 buckets per series, and a reset to
// the configured resolution at most once an hour when the bucket limit is
// hit.
const (
	nativeBucketFactor   = 1.1
	nativeMaxBucketCount = 160
	nativeMinReset       = 3600 // seconds
)
