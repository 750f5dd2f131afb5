package sweep

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// fingerprintStart fills the fingerprint's fixed parts.
func (r *runner) fingerprintStart(ctx context.Context, start time.Time) {
	c := r.cfg
	fp := fingerprint.New(r.opts.Args, start)
	info := r.info
	fp.Target.URL = redact.Text(c.Target)
	fp.Target.API = c.API
	fp.Target.CostPerHour = c.CostPerHour
	fp.Target.HTTPConfig = fingerprint.SummarizeHTTP(c.Target, c.HTTPConfig, c.APIKey != "")
	fp.Target.GPU = r.energy.fingerprint() // energy.go
	fp.Target.Model = r.model
	fp.Target.ServedModel, fp.Target.Root, fp.Target.MaxModelLen = fingerprint.NotRecorded, fingerprint.NotRecorded, fingerprint.Int{}
	if info.Listed {
		fp.Target.ServedModel = info.Model
		fp.Target.Root = fingerprint.OrNotRecorded(info.Root)
	}
	if n, src := r.maxModelLen(); n > 0 {
		fp.Target.MaxModelLen, fp.Target.MaxModelLenSource = fingerprint.Known(int64(n)), src
	}
	fp.Target.ServerVersion = fingerprint.OrNotRecorded(info.ServerVersion)
	if r.eng != nil && r.eng.Name() != engine.Unknown {
		fp.Target.Engine = string(r.eng.Name())
		fp.Target.EngineSource = fingerprint.OrNotRecorded(info.EngineSource)
	}
	if len(info.EngineConfig) > 0 {
		// Read from the engine's own endpoints (Ollama's /api/show,
		// llama.cpp's /props, ...), with or without a /metrics.
		fp.Target.EngineConfig = fingerprint.Labels(info.EngineConfig)
	}
	if r.metricsOK {
		fp.Target.MetricsURL = redact.Text(r.metricsURL)
		if fp.Target.EngineConfig == nil {
			if snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...); err == nil {
				fp.Target.EngineConfig = fingerprint.EngineConfig(snap.Raw)
			}
		}
	}
	fp.Target.NotRecorded = r.engineNotRecorded(fp.Target)
	if w, err := fingerprint.HashWorkload(c.Workload, c.WorkloadSource); err == nil {
		fp.Workload = w
	}
	fp.Workload.SavePrompts = c.SavePrompts
	fp.Workload.Dataset = r.datasetFingerprint()
	r.traceFingerprint(&fp)
	fp.Load = fingerprint.Load{
		Mode:           c.Mode(),
		Arrival:        c.Arrival,
		Burstiness:     c.Burstiness,
		Unscaled:       c.Unscaled,
		Concurrency:    c.Concurrency,
		MaxConcurrency: c.MaxConcurrency,
		NumPrompts:     c.NumPrompts,
		Warmups:        c.Warmups,
		Rounds:         c.Rounds,
		Seed:           c.Seed,
		Goodput:        sloMillis(c),
		FreshPrefix:    c.FreshPrefix,
		Validity:       r.validityFingerprint(),
	}
	if c.NumPrompts == 0 {
		fp.Load.MinPrompts = c.MinPrompts
	}
	if c.Sharded() {
		fp.Load.Shard = &fingerprint.Shard{Index: c.ShardIndex, Count: c.ShardCount, Seed: c.shardSeed()}
	}
	if !c.StartAt.IsZero() {
		fp.Load.StartAt = c.StartAt.UTC().Format(time.RFC3339Nano)
		if c.StepInterval > 0 {
			fp.Load.StepInterval = c.StepInterval.String()
		}
	}
	if c.Auto {
		so := c.Search.withDefaults()
		start := "probe"
		if c.Search.Start > 0 {
			start = fmtLevel(c.Search.Start)
		}
		fp.Load.Search = &fingerprint.Search{Start: start, MaxSteps: so.MaxSteps, Tolerance: so.Tolerance, Retries: so.Retries}
	}
	if c.Mode() == ModeClosed {
		fp.Load.Arrival, fp.Load.Burstiness = "", 0
	}
	if c.Duration > 0 {
		fp.Load.Duration = c.Duration.String()
	}
	switch {
	case c.Auto:
		fp.Load.Rates = []string{"auto"}
	default:
		for _, x := range c.Rates {
			fp.Load.Rates = append(fp.Load.Rates, fmtLevel(x))
		}
	}
	if len(c.Metadata) > 0 {
		fp.Metadata = redact.Metadata(c.Metadata)
	}
	r.fp = fp
}

// maxModelLenFromModels is endpoint.Info.MaxModelLenSource for a
// max_model_len that /v1/models gave.
const maxModelLenFromModels = "/v1/models max_model_len"

// maxModelLenFromTokenize is the source of a max_model_len read from the
// answer of the server's POST /tokenize (vLLM, SGLang).
const maxModelLenFromTokenize = "POST /tokenize max_model_len"

// maxModelLen returns the model's context length and where it was read:
// discovery's (/v1/models max_model_len, else the engine's own field such as
// llama.cpp's /props n_ctx), else the tokenizer's answer; 0 and "" when
// none said.
func (r *runner) maxModelLen() (int, string) {
	if n, src := r.info.MaxModelLen, r.info.MaxModelLenSource; n > 0 {
		if src == "" {
			src = maxModelLenFromModels
		}
		return n, src
	}
	if r.sizing != nil {
		if n := r.sizing.MaxModelLen(); n > 0 {
			return n, maxModelLenFromTokenize
		}
	}
	return 0, ""
}

// validityOptions returns the thresholds Judge uses for every step.
func (r *runner) validityOptions() ValidityOptions {
	v := r.cfg.Validity
	if r.cfg.Embedded {
		v.MaxClientCPU = -1
	}
	return v
}

func (r *runner) validityFingerprint() *fingerprint.Validity {
	v := r.cfg.Validity.withDefaults()
	return &fingerprint.Validity{
		MaxSendLagMS:      ms(v.MaxSendLag),
		MaxClientCPU:      v.MaxClientCPU,
		CPUChecked:        r.validityOptions().withDefaults().MaxClientCPU > 0,
		MaxSchedLatencyMS: ms(v.MaxSchedLatency),
		MaxErrorRate:      v.MaxErrorRate,
		GoodputRatio:      DefaultGoodputRatio,
	}
}

func sloMillis(c Config) map[string]float64 {
	m := map[string]float64{}
	for _, t := range c.SLO.Thresholds() {
		m[t.Name] = float64(t.Value) / 1e6
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// engineNotRecorded says why the fingerprint's server_version and
// engine_config are NotRecorded when discovery left reasons
// (endpoint.Info.EngineNotes: the engine endpoint calls that told nothing,
// classified), or, for an engine whose configuration is a /metrics info
// family, that its /metrics has none (vLLM's Rust frontend registers no
// vllm:cache_config_info); nil when both were recorded or no reason is
// known.
func (r *runner) engineNotRecorded(t fingerprint.Target) map[string]string {
	notes := r.info.EngineNotes
	var noConfig string
	if t.EngineConfig == nil && r.metricsOK && engine.Get(r.info.Engine).HasConfigLabels() {
		noConfig = scrape.MetricCacheConfigInfo + " not on /metrics"
	}
	if len(notes) == 0 && noConfig == "" {
		return nil
	}
	why := strings.Join(notes, "; ")
	m := map[string]string{}
	if t.ServerVersion == fingerprint.NotRecorded && why != "" {
		m["server_version"] = why
	}
	if t.EngineConfig == nil {
		m["engine_config"] = strings.Join(slices.DeleteFunc([]string{noConfig, why}, func(s string) bool { return s == "" }), "; ")
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
