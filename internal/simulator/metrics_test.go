package simulator_test

import (
	"math"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// scrape fetches and parses base/metrics in the text format.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeFamilies(t, base+"/metrics")
}

// value returns the value of the family's series matching labels (counter,
// gauge, or histogram sample count).
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	sum, found := 0.0, false
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, labels...) {
			continue
		}
		found = true
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			sum += m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			sum += m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if !found {
		t.Fatalf("metric %s has no series with labels %v", name, labels)
	}
	return sum
}

func hasLabels(m *dto.Metric, kv ...string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		ok := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == kv[i] && lp.GetValue() == kv[i+1] {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	iterationBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	tokenBuckets     = []float64{1, 2, 5, 10, 20, 50, 100, 200} // max-model-len 256
	paramsNBuckets   = []float64{1, 2, 5, 10, 20}
)

func TestMetricsExposition(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	mfs := scrape(t, base)
	tests := []struct {
		name    string
		typ     dto.MetricType
		buckets []float64
	}{
		{"vllm:num_requests_running", dto.MetricType_GAUGE, nil},
		{"vllm:num_requests_waiting", dto.MetricType_GAUGE, nil},
		{"vllm:kv_cache_usage_perc", dto.MetricType_GAUGE, nil},
		{"vllm:prefix_cache_queries_total", dto.MetricType_COUNTER, nil},
		{"vllm:prefix_cache_hits_total", dto.MetricType_COUNTER, nil},
		{"vllm:num_preemptions_total", dto.MetricType_COUNTER, nil},
		{"vllm:prompt_tokens_total", dto.MetricType_COUNTER, nil},
		{"vllm:generation_tokens_total", dto.MetricType_COUNTER, nil},
		{"vllm:request_success_total", dto.MetricType_COUNTER, nil},
		{"vllm:time_to_first_token_seconds", dto.MetricType_HISTOGRAM, ttftBuckets},
		{"vllm:inter_token_latency_seconds", dto.MetricType_HISTOGRAM, itlBuckets},
		{"vllm:request_time_per_output_token_seconds", dto.MetricType_HISTOGRAM, itlBuckets},
		{"vllm:e2e_request_latency_seconds", dto.MetricType_HISTOGRAM, latencyBuckets},
		{"vllm:request_queue_time_seconds", dto.MetricType_HISTOGRAM, latencyBuckets},
		{"vllm:request_inference_time_seconds", dto.MetricType_HISTOGRAM, latencyBuckets},
		{"vllm:request_prefill_time_seconds", dto.MetricType_HISTOGRAM, latencyBuckets},
		{"vllm:request_decode_time_seconds", dto.MetricType_HISTOGRAM, latencyBuckets},
		{"vllm:request_prompt_tokens", dto.MetricType_HISTOGRAM, tokenBuckets},
		{"vllm:request_generation_tokens", dto.MetricType_HISTOGRAM, tokenBuckets},
		{"vllm:request_params_max_tokens", dto.MetricType_HISTOGRAM, tokenBuckets},
		{"vllm:request_max_num_generation_tokens", dto.MetricType_HISTOGRAM, tokenBuckets},
		{"vllm:request_params_n", dto.MetricType_HISTOGRAM, paramsNBuckets},
		{"vllm:iteration_tokens_total", dto.MetricType_HISTOGRAM, iterationBuckets},
		{"vllm:cache_config_info", dto.MetricType_GAUGE, nil},
		{"vllm:num_requests_waiting_by_reason", dto.MetricType_GAUGE, nil},
		{"vllm:prompt_tokens_by_source_total", dto.MetricType_COUNTER, nil},
		{"vllm:prompt_tokens_cached_total", dto.MetricType_COUNTER, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf, ok := mfs[tt.name]
			if !ok {
				t.Fatalf("missing")
			}
			if mf.GetType() != tt.typ {
				t.Fatalf("type %v, want %v", mf.GetType(), tt.typ)
			}
			if len(mf.GetMetric()) == 0 {
				t.Fatal("no series")
			}
			for _, m := range mf.GetMetric() {
				if tt.name == "vllm:cache_config_info" {
					if !hasLabels(m, "engine", "0", "block_size", "16", "num_gpu_blocks", "256", "enable_prefix_caching", "True") ||
						m.GetGauge().GetValue() != 1 {
						t.Errorf("cache_config_info %v", m)
					}
					continue
				}
				if !hasLabels(m, "model_name", "llmprobe-sim", "engine", "0") {
					t.Errorf("series without model_name/engine labels: %v", m.GetLabel())
				}
				if tt.buckets != nil {
					var got []float64
					for _, b := range m.GetHistogram().GetBucket() {
						got = append(got, b.GetUpperBound())
					}
					if want := append(slices.Clone(tt.buckets), math.Inf(1)); !slices.Equal(got, want) {
						t.Errorf("buckets %v, want %v", got, tt.buckets)
					}
				}
			}
		})
	}
	for _, reason := range []string{"stop", "length", "abort", "error"} {
		value(t, mfs, "vllm:request_success_total", "finished_reason", reason)
	}
	for _, reason := range []string{"capacity", "deferred"} {
		value(t, mfs, "vllm:num_requests_waiting_by_reason", "reason", reason)
	}
	for _, source := range []string{"local_compute", "local_cache_hit", "external_kv_transfer"} {
		value(t, mfs, "vllm:prompt_tokens_by_source_total", "source", source)
	}
	// Names current vLLM no longer serves (docs/engines.md).
	for _, gone := range []string{"vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_queries_total",
		"vllm:gpu_prefix_cache_hits_total", "vllm:time_per_output_token_seconds"} {
		if _, ok := mfs[gone]; ok {
			t.Errorf("%s served without --legacy-metric-names", gone)
		}
	}
}

// TestLegacyMetricNames: with --legacy-metric-names the vLLM persona serves
// the names of vLLM V1 before 0.9.2 and none of the newer ones.
func TestLegacyMetricNames(t *testing.T) {
	cfg := fastConfig()
	cfg.LegacyMetricNames = true
	base, _ := simtest.Start(t, cfg)
	mfs := scrape(t, base)
	for _, name := range []string{"vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_queries_total",
		"vllm:gpu_prefix_cache_hits_total", "vllm:time_per_output_token_seconds", "vllm:num_requests_waiting",
		"vllm:time_to_first_token_seconds", "vllm:request_success_total"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("%s missing with --legacy-metric-names", name)
		}
	}
	for _, name := range []string{"vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total",
		"vllm:prefix_cache_hits_total", "vllm:inter_token_latency_seconds", "vllm:request_time_per_output_token_seconds",
		"vllm:num_requests_waiting_by_reason", "vllm:prompt_tokens_by_source_total", "vllm:prompt_tokens_cached_total"} {
		if _, ok := mfs[name]; ok {
			t.Errorf("%s served with --legacy-metric-names", name)
		}
	}
}

func TestMetricsMove(t *testing.T) {
	cfg := fastConfig()
	base, _ := simtest.Start(t, cfg)
	before := scrape(t, base)
	const n, promptLen, outLen = 3, 5, 4
	for i := range n {
		var out struct{ Usage usageJSON }
		postJSON(t, base+"/v1/completions", map[string]any{"prompt": words("m"+itoa(i), promptLen), "max_tokens": outLen, "ignore_eos": true}, 200, &out)
		if out.Usage.PromptTokens != promptLen {
			t.Fatalf("prompt tokens %d", out.Usage.PromptTokens)
		}
	}
	// The engine retires a request just after its last write: wait until
	// it is idle (the gauges at 0) before reading what moved.
	idleGauges := []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}
	after := scrape(t, base)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); after = scrape(t, base) {
		if !slices.ContainsFunc(idleGauges, func(g string) bool { return value(t, after, g) != 0 }) {
			break
		}
	}
	delta := func(name string, labels ...string) float64 {
		old := 0.0
		if mf, ok := before[name]; ok && slices.ContainsFunc(mf.GetMetric(), func(m *dto.Metric) bool { return hasLabels(m, labels...) }) {
			old = value(t, before, name, labels...)
		}
		return value(t, after, name, labels...) - old
	}
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vllm:prompt_tokens_total", nil, n * promptLen},
		{"vllm:generation_tokens_total", nil, n * outLen},
		{"vllm:request_success_total", []string{"finished_reason", "length"}, n},
		{"vllm:request_success_total", []string{"finished_reason", "stop"}, 0},
		{"vllm:time_to_first_token_seconds", nil, n},
		{"vllm:inter_token_latency_seconds", nil, n * (outLen - 1)},
		{"vllm:request_inference_time_seconds", nil, n},
		{"vllm:request_params_max_tokens", nil, n},
		{"vllm:request_max_num_generation_tokens", nil, n},
		{"vllm:request_params_n", nil, n},
		{"vllm:request_time_per_output_token_seconds", nil, n},
		{"vllm:e2e_request_latency_seconds", nil, n},
		{"vllm:request_queue_time_seconds", nil, n},
		{"vllm:request_prefill_time_seconds", nil, n},
		{"vllm:request_decode_time_seconds", nil, n},
		{"vllm:request_prompt_tokens", nil, n},
		{"vllm:request_generation_tokens", nil, n},
		{"vllm:prefix_cache_queries_total", nil, n * promptLen},
		{"vllm:prompt_tokens_cached_total", nil, delta("vllm:prefix_cache_hits_total")},
		{"vllm:prompt_tokens_by_source_total", []string{"source", "local_cache_hit"}, delta("vllm:prefix_cache_hits_total")},
		{"vllm:prompt_tokens_by_source_total", nil, n * promptLen},
		{"http_requests_total", []string{"handler", "/v1/completions", "status", "2xx"}, n},
	}
	for _, tt := range tests {
		if got := delta(tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v moved by %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if got := delta("vllm:iteration_tokens_total"); got < n*outLen/2 {
		t.Errorf("iteration_tokens_total observed %v steps", got)
	}
	sums := []struct {
		name string
		want float64
	}{
		{"vllm:request_generation_tokens", n * outLen},
		{"vllm:request_max_num_generation_tokens", n * outLen},
		{"vllm:request_params_max_tokens", n * outLen}, // max_tokens = outLen
		{"vllm:request_params_n", n},
	}
	for _, tt := range sums {
		if h := after[tt.name].GetMetric()[0].GetHistogram(); h.GetSampleSum() != tt.want {
			t.Errorf("%s sum %v, want %v", tt.name, h.GetSampleSum(), tt.want)
		}
	}
	// Inference time (last token - first scheduled) = prefill + decode time.
	sum := func(name string) float64 { return after[name].GetMetric()[0].GetHistogram().GetSampleSum() }
	if inf, pd := sum("vllm:request_inference_time_seconds"), sum("vllm:request_prefill_time_seconds")+sum("vllm:request_decode_time_seconds"); math.Abs(inf-pd) > 1e-9 {
		t.Errorf("inference time sum %v, prefill + decode %v", inf, pd)
	}
	for _, g := range idleGauges {
		if v := value(t, after, g); v != 0 {
			t.Errorf("%s = %v when idle", g, v)
		}
	}
}

// TestPromptTokensDetails: with --enable-prompt-tokens-details a
// non-streamed answer's usage reports the prompt tokens found in the prefix
// cache (a 33-token prompt sent twice: its two full 16-token blocks the
// second time; the last prompt token is always computed),
// which vllm:prompt_tokens_cached_total counts too; without it vLLM writes
// null.
func TestPromptTokensDetails(t *testing.T) {
	type details struct {
		Usage struct {
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	for _, enabled := range []bool{false, true} {
		cfg := fastConfig()
		cfg.EnablePromptTokensDetails = enabled
		base, _ := simtest.Start(t, cfg)
		var cached []int
		for range 2 {
			var out details
			postJSON(t, base+"/v1/completions", map[string]any{"prompt": words("p", 33), "max_tokens": 2, "ignore_eos": true}, 200, &out)
			switch d := out.Usage.PromptTokensDetails; {
			case !enabled && d != nil:
				t.Fatalf("prompt_tokens_details %+v without --enable-prompt-tokens-details", *d)
			case enabled && d == nil:
				t.Fatal("no prompt_tokens_details with --enable-prompt-tokens-details")
			case enabled:
				cached = append(cached, d.CachedTokens)
			}
		}
		if enabled && (cached[0] != 0 || cached[1] != 32) {
			t.Errorf("cached tokens %v, want [0 32]", cached)
		}
		if enabled {
			mfs := scrape(t, base)
			if v := value(t, mfs, "vllm:prompt_tokens_cached_total"); v != 32 {
				t.Errorf("vllm:prompt_tokens_cached_total %v, want 32", v)
			}
		}
	}
}
