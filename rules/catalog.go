package rules

import (
	dto "github.com/prometheus/client_model/go"
)

// VLLMMetrics lists the vLLM V1 server metrics that rules and dashboards may
// read, by family name and type, as documented by vLLM: the metric reference
// https://docs.vllm.ai/en/latest/usage/metrics.html, defined in
// https://github.com/vllm-project/vllm/blob/main/vllm/v1/metrics/loggers.py
// (summarised in the project's vllm-reference.md, section 2). Counters are
// listed with the _total suffix they are exposed with; histograms by their
// base name. Names vLLM renamed (vllm:gpu_cache_usage_perc,
// vllm:time_per_output_token_seconds, vllm:gpu_prefix_cache_*) are not here
// but in VLLMRenamed: a query may read them only as the fallback of their
// current name. The map is shared: do not modify it.
var VLLMMetrics = map[string]dto.MetricType{
	// Gauges.
	"vllm:num_requests_running":           dto.MetricType_GAUGE,
	"vllm:num_requests_waiting":           dto.MetricType_GAUGE,
	"vllm:num_requests_waiting_by_reason": dto.MetricType_GAUGE,
	"vllm:kv_cache_usage_perc":            dto.MetricType_GAUGE,
	"vllm:engine_sleep_state":             dto.MetricType_GAUGE,
	"vllm:cache_config_info":              dto.MetricType_GAUGE,
	"vllm:lora_requests_info":             dto.MetricType_GAUGE,
	"vllm:engine_healthy":                 dto.MetricType_GAUGE,

	// Counters.
	"vllm:num_preemptions_total":                         dto.MetricType_COUNTER,
	"vllm:prompt_tokens_total":                           dto.MetricType_COUNTER,
	"vllm:generation_tokens_total":                       dto.MetricType_COUNTER,
	"vllm:request_success_total":                         dto.MetricType_COUNTER,
	"vllm:prefix_cache_queries_total":                    dto.MetricType_COUNTER,
	"vllm:prefix_cache_hits_total":                       dto.MetricType_COUNTER,
	"vllm:external_prefix_cache_queries_total":           dto.MetricType_COUNTER,
	"vllm:external_prefix_cache_hits_total":              dto.MetricType_COUNTER,
	"vllm:mm_cache_queries_total":                        dto.MetricType_COUNTER,
	"vllm:mm_cache_hits_total":                           dto.MetricType_COUNTER,
	"vllm:prompt_tokens_by_source_total":                 dto.MetricType_COUNTER,
	"vllm:prompt_tokens_cached_total":                    dto.MetricType_COUNTER,
	"vllm:prompt_tokens_recomputed_total":                dto.MetricType_COUNTER,
	"vllm:spec_decode_num_drafts_total":                  dto.MetricType_COUNTER,
	"vllm:spec_decode_num_draft_tokens_total":            dto.MetricType_COUNTER,
	"vllm:spec_decode_num_accepted_tokens_total":         dto.MetricType_COUNTER,
	"vllm:spec_decode_num_accepted_tokens_per_pos_total": dto.MetricType_COUNTER,

	// Histograms (vllm:iteration_tokens_total is a histogram despite its name).
	"vllm:time_to_first_token_seconds":           dto.MetricType_HISTOGRAM,
	"vllm:inter_token_latency_seconds":           dto.MetricType_HISTOGRAM,
	"vllm:request_time_per_output_token_seconds": dto.MetricType_HISTOGRAM,
	"vllm:e2e_request_latency_seconds":           dto.MetricType_HISTOGRAM,
	"vllm:request_queue_time_seconds":            dto.MetricType_HISTOGRAM,
	"vllm:request_inference_time_seconds":        dto.MetricType_HISTOGRAM,
	"vllm:request_prefill_time_seconds":          dto.MetricType_HISTOGRAM,
	"vllm:request_decode_time_seconds":           dto.MetricType_HISTOGRAM,
	"vllm:iteration_tokens_total":                dto.MetricType_HISTOGRAM,
	"vllm:request_params_n":                      dto.MetricType_HISTOGRAM,
	"vllm:request_num_preemptions":               dto.MetricType_HISTOGRAM,
	"vllm:request_prompt_tokens":                 dto.MetricType_HISTOGRAM,
	"vllm:request_generation_tokens":             dto.MetricType_HISTOGRAM,
	"vllm:request_max_num_generation_tokens":     dto.MetricType_HISTOGRAM,
	"vllm:request_params_max_tokens":             dto.MetricType_HISTOGRAM,
	"vllm:request_prefill_kv_computed_tokens":    dto.MetricType_HISTOGRAM,
}

// VLLMRenamed maps each older vLLM metric name that rules and dashboards may
// read to the current name that replaced it, as vLLM's
// vllm/v1/metrics/loggers.py deprecated, hid and removed them
// (docs/engines.md, "vLLM's metric names by version"; prober/engine reads
// the same pairs, current first). A query reads an older name only on the
// right of an `or` whose left reads its current name (`new or old`, as
// vLLM's own dashboards moved), so a server of either version fills the
// panel and the current name wins where both exist;
// rulestest.OldNameOutsideFallback holds queries to it. Counters are listed
// with _total, histograms by their base name; each has its current name's
// type. The map is shared: do not modify it.
var VLLMRenamed = map[string]string{
	"vllm:gpu_cache_usage_perc":           "vllm:kv_cache_usage_perc",         // deprecated 0.9.2, hidden 0.11, removed 0.12
	"vllm:gpu_prefix_cache_queries_total": "vllm:prefix_cache_queries_total",  // same
	"vllm:gpu_prefix_cache_hits_total":    "vllm:prefix_cache_hits_total",     // same
	"vllm:time_per_output_token_seconds":  "vllm:inter_token_latency_seconds", // deprecated 0.11, hidden 0.12, removed 0.13
}

// EngineMetrics lists, per engine other than vLLM, the server metrics that
// rules and dashboards may read, by family name and type: the names
// docs/engines.md cites from each engine's own source (SGLang:
// python/sglang/srt/metrics/collector.py; TGI: docs/source/reference/metrics.md
// of text-generation-inference; llama.cpp: the /metrics handler of
// tools/server/server.cpp), the ones prober/engine reads. Counters are
// listed as exposed (SGLang's and llama.cpp's with _total, TGI's without);
// histograms by their base name. llama.cpp exports only counters and
// gauges, without labels; TGI's series carry no model label; SGLang's carry
// model_name. The map is shared: do not modify it.
var EngineMetrics = map[string]map[string]dto.MetricType{
	"sglang": {
		"sglang:num_running_reqs":              dto.MetricType_GAUGE,
		"sglang:num_queue_reqs":                dto.MetricType_GAUGE,
		"sglang:token_usage":                   dto.MetricType_GAUGE,
		"sglang:prompt_tokens_total":           dto.MetricType_COUNTER,
		"sglang:generation_tokens_total":       dto.MetricType_COUNTER,
		"sglang:cached_tokens_total":           dto.MetricType_COUNTER,
		"sglang:num_requests_total":            dto.MetricType_COUNTER,
		"sglang:time_to_first_token_seconds":   dto.MetricType_HISTOGRAM,
		"sglang:inter_token_latency_seconds":   dto.MetricType_HISTOGRAM,
		"sglang:e2e_request_latency_seconds":   dto.MetricType_HISTOGRAM,
		"sglang:queue_time_seconds":            dto.MetricType_HISTOGRAM,
		"sglang:time_per_output_token_seconds": dto.MetricType_HISTOGRAM, // older name of the ITL histogram
	},
	"tgi": {
		"tgi_batch_current_size":                   dto.MetricType_GAUGE,
		"tgi_queue_size":                           dto.MetricType_GAUGE,
		"tgi_request_success":                      dto.MetricType_COUNTER,
		"tgi_request_input_length":                 dto.MetricType_HISTOGRAM,
		"tgi_request_generated_tokens":             dto.MetricType_HISTOGRAM,
		"tgi_request_mean_time_per_token_duration": dto.MetricType_HISTOGRAM,
		"tgi_request_duration":                     dto.MetricType_HISTOGRAM,
		"tgi_request_queue_duration":               dto.MetricType_HISTOGRAM,
		"tgi_batch_forward_duration":               dto.MetricType_HISTOGRAM,
	},
	"llamacpp": {
		"llamacpp:requests_processing":            dto.MetricType_GAUGE,
		"llamacpp:requests_deferred":              dto.MetricType_GAUGE,
		"llamacpp:kv_cache_usage_ratio":           dto.MetricType_GAUGE,
		"llamacpp:kv_cache_tokens":                dto.MetricType_GAUGE,
		"llamacpp:prompt_tokens_seconds":          dto.MetricType_GAUGE,
		"llamacpp:predicted_tokens_seconds":       dto.MetricType_GAUGE,
		"llamacpp:prompt_tokens_total":            dto.MetricType_COUNTER,
		"llamacpp:prompt_tokens_cached_total":     dto.MetricType_COUNTER,
		"llamacpp:prompt_seconds_total":           dto.MetricType_COUNTER,
		"llamacpp:tokens_predicted_total":         dto.MetricType_COUNTER,
		"llamacpp:tokens_predicted_seconds_total": dto.MetricType_COUNTER,
		"llamacpp:n_decode_total":                 dto.MetricType_COUNTER,
		// In the counter group of the handler although a mean and a maximum.
		"llamacpp:n_busy_slots_per_decode": dto.MetricType_COUNTER,
		"llamacpp:n_tokens_max":            dto.MetricType_COUNTER,
		// Releases after the late-2025 split (server-task.cpp; testdata/
		// engines/llamacpp/2025-12/README.md, "Later revisions").
		"llamacpp:spec_decode_num_draft_tokens_total":            dto.MetricType_COUNTER,
		"llamacpp:spec_decode_num_accepted_tokens_total":         dto.MetricType_COUNTER,
		"llamacpp:spec_decode_num_drafts_total":                  dto.MetricType_COUNTER,
		"llamacpp:spec_decode_num_accepted_tokens_per_pos_total": dto.MetricType_COUNTER,
	},
}

// DCGMMetrics lists the NVIDIA DCGM exporter's GPU metrics that rules and
// dashboards may read (the energy rules, llmprobe.energy.yml), with the types
// of dcgm-exporter's etc/default-counters.csv (DCGM_FI_DEV_POWER_MGMT_LIMIT:
// a DCGM field the default CSV leaves out; docs/measurement.md "Energy").
var DCGMMetrics = map[string]dto.MetricType{
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": dto.MetricType_COUNTER,
	"DCGM_FI_DEV_POWER_USAGE":              dto.MetricType_GAUGE,
	"DCGM_FI_DEV_POWER_MGMT_LIMIT":         dto.MetricType_GAUGE,
}

// Sources of names in a Catalog.
const (
	SourceDCGM       = "NVIDIA DCGM exporter (etc/default-counters.csv)"
	SourceVLLM       = "vLLM (documented)"
	SourceVLLMOld    = "vLLM (older name, only as the or-fallback of its current name)"
	SourceEngine     = "serving engine (documented, docs/engines.md)"
	SourceRecording  = "recording rule"
	SourcePrometheus = "Prometheus (scrape and rule manager)"
)

// Catalog is the set of metric names that rules and dashboards may read,
// each with where it comes from. The zero value is empty; fill it with the
// Add methods. A Catalog is not safe for concurrent mutation.
type Catalog struct {
	src map[string]string
}

// Add adds one metric family of type typ from source. A histogram or summary
// family adds its series names too (<name>_bucket for histograms, <name>_sum,
// <name>_count) beside <name> itself, which is how PromQL reads a native
// histogram.
func (c *Catalog) Add(source, name string, typ dto.MetricType) {
	if c.src == nil {
		c.src = map[string]string{}
	}
	c.src[name] = source
	switch typ {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		c.src[name+"_bucket"] = source
		fallthrough
	case dto.MetricType_SUMMARY:
		c.src[name+"_sum"] = source
		c.src[name+"_count"] = source
	}
}

// AddFamilies adds the families a registry gathered (their real exposed
// names and types).
func (c *Catalog) AddFamilies(source string, mfs []*dto.MetricFamily) {
	for _, mf := range mfs {
		c.Add(source, mf.GetName(), mf.GetType())
	}
}

// AddVLLM adds VLLMMetrics and the older names of VLLMRenamed (source
// SourceVLLMOld, the type of the current name).
func (c *Catalog) AddVLLM() {
	for n, t := range VLLMMetrics {
		c.Add(SourceVLLM, n, t)
	}
	for old, cur := range VLLMRenamed {
		c.Add(SourceVLLMOld, old, VLLMMetrics[cur])
	}
}

// AddEngines adds EngineMetrics.
func (c *Catalog) AddEngines() {
	for _, names := range EngineMetrics {
		for n, t := range names {
			c.Add(SourceEngine, n, t)
		}
	}
}

// AddDCGM adds DCGMMetrics.
func (c *Catalog) AddDCGM() {
	for n, t := range DCGMMetrics {
		c.Add(SourceDCGM, n, t)
	}
}

// AddPrometheus adds the series Prometheus itself writes: up (one per scrape
// target) and ALERTS (one per pending or firing alert).
func (c *Catalog) AddPrometheus() {
	c.Add(SourcePrometheus, "up", dto.MetricType_GAUGE)
	c.Add(SourcePrometheus, "ALERTS", dto.MetricType_GAUGE)
}

// AddRecorded adds the outputs of the recording rules of files.
func (c *Catalog) AddRecorded(files []File) {
	for _, n := range RecordedNames(files) {
		c.Add(SourceRecording, n, dto.MetricType_UNTYPED)
	}
}

// Source returns where name comes from and whether the catalog knows it.
func (c *Catalog) Source(name string) (string, bool) {
	s, ok := c.src[name]
	return s, ok
}
