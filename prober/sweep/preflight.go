package sweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// preflight checks the target before anything is created, through the one
// request path (prober/endpoint): discovery (/v1/models must answer and
// list the model; the engine's own info endpoints give the version and the
// context length), prompt sizing (the server's tokenizer, else a
// calibration from usage.prompt_tokens — the daemon's policy), the
// workload's longest request against max_model_len, and one read of
// /metrics.
func (r *runner) preflight(ctx context.Context) error {
	c := r.cfg
	var calib atomic.Uint64
	eng, err := engine.Parse(c.Engine)
	if err != nil {
		return fieldErr("Engine", "%w", err)
	}
	ep, err := endpoint.New(endpoint.Options{
		BaseURL:      c.Target,
		API:          c.API,
		RerankPath:   c.rerankPath(),
		Model:        c.Model,
		APIKey:       c.APIKey,
		Timeout:      c.Timeout,
		TTFTTimeout:  c.TTFTTimeout,
		StallTimeout: c.StallTimeout,
		HTTPClient:   r.loadClient,
		HTTPConfig:   c.HTTPConfig,
		Redactor:     r.red,
		Logger:       r.logger,
		MetricsURL:   c.MetricsURL,
		Engine:       eng,
		ServerTiming: c.ServerTiming != ServerTimingOff,
		Tracer:       c.tracer(),
		NewRequestID: func() string { return fmt.Sprintf("llmprobe-%s-calibrate-%d", r.runID, calib.Add(1)) },
		// Which backend answered (docs/discovery.md).
		AttributionHeaders: c.AttributionHeaders,
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	r.ep = ep
	target := redact.Text(c.Target)
	info, err := ep.Discover(ctx)
	switch {
	case errors.Is(err, endpoint.ErrNoModel):
		return fmt.Errorf("target %s lists no model in /v1/models; give --model", target)
	case errors.Is(err, endpoint.ErrModelNotListed):
		return fmt.Errorf("model %q is not served by %s (it serves: %s)", c.Model, target, strings.Join(info.Models, ", "))
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, target, err)
	}
	r.info, r.model = info, info.Model
	for _, note := range info.EngineNotes {
		level.Warn(r.logger).Log("msg", "an engine endpoint told nothing: what it serves will be not-recorded", "engine", info.Engine, "reason", note)
	}
	if err := r.prepareFeatures(); err != nil {
		return err
	}
	r.eng = ep.Engine()
	if r.client, err = ep.Client(r.model); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if r.sizing, err = ep.PromptSizing(ctx, r.model); err != nil {
		return fmt.Errorf("workload: sizing prompts: %w", err)
	}
	if err := r.checkContext(); err != nil {
		return err
	}
	if err := r.measureDataset(ctx); err != nil {
		return err
	}
	r.metricsURL = c.MetricsURL
	if r.metricsURL == "" {
		r.metricsURL = ep.BaseURL() + "/metrics"
	}
	if reason := r.eng.NoMetricsReason(); reason != "" && c.MetricsURL == "" {
		r.metricsReason = reason
		level.Info(r.logger).Log("msg", "the server has no /metrics: snapshots, idle proofs and server-side figures will be not-recorded", "engine", r.eng.Name(), "reason", reason)
		return r.checkBackground(nil)
	}
	snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
	switch {
	case err != nil:
		r.metricsReason = r.redact(err.Error())
		level.Warn(r.logger).Log("msg", "server /metrics not readable: snapshots, idle proofs and server-side figures will be not-recorded", "engine", r.eng.Name(), "err", r.metricsReason)
	default:
		r.metricsOK = true
		if _, known := r.eng.Idle(snap); known {
			r.idleKnown = true
		} else {
			r.idleReason = r.noIdleGauges()
			level.Warn(r.logger).Log("msg", r.idleReason+": idle proofs will be not-recorded", "engine", r.eng.Name())
		}
	}
	return r.checkBackground(snap)
}

// noIdleGauges says why the server's /metrics gives no idle proof, naming
// the engine and the gauges its adapter reads.
func (r *runner) noIdleGauges() string {
	if r.eng.Name() == engine.Unknown {
		return "the server's engine was not recognised (no vllm:, sglang:, tgi_ or llamacpp: names on /metrics, " +
			"no known /v1/models owned_by or info endpoint; --engine names it), so its running and waiting requests are not read"
	}
	return fmt.Sprintf("the server's /metrics has no %s running/waiting gauges (%s and %s)", r.eng,
		strings.Join(r.eng.Source(engine.Running), " or "), strings.Join(r.eng.Source(engine.Waiting), " or "))
}

// checkContext refuses a workload whose longest request (prefix + input +
// output tokens) does not fit the model's max_model_len (from discovery,
// else from the tokenizer's answer), before any run directory exists. An
// unknown max_model_len is not checked.
func (r *runner) checkContext() error {
	maxLen, source := r.maxModelLen()
	switch source {
	case "", maxModelLenFromModels:
		source = "GET /v1/models"
	case maxModelLenFromTokenize:
		source = "POST /tokenize"
	}
	if maxLen <= 0 {
		return nil
	}
	if err := checkFits(r.cfg, int64(maxLen), source); err != nil {
		return err
	}
	return checkTraceFits(r.cfg, int64(maxLen), source)
}

// checkFits returns a *FieldError naming the length fields when the longest
// request of c's workload needs more than maxLen tokens.
func checkFits(c Config, maxLen int64, source string) error {
	w := c.Workload
	if w.Dataset != nil {
		return nil // measureDataset checks the dataset's longest request
	}
	in, err := workload.NewLengthSampler(w.InputTokens)
	if err != nil {
		return nil // Validate reports it
	}
	out, err := workload.NewLengthSampler(w.OutputTokens)
	if err != nil {
		return nil
	}
	_, inHi := in.Range()
	_, outHi := out.Range()
	need := int64(w.PrefixTokens) + int64(inHi) + int64(outHi)
	if need <= maxLen {
		return nil
	}
	if c.WorkloadSource != "" && c.WorkloadSource != "flags" {
		return fieldErr("Workload", "the longest request of %s needs %d tokens (prefix %d + input up to %d + output up to %d), "+
			"more than the model's max_model_len %d (from %s)", c.WorkloadSource, need, w.PrefixTokens, inHi, outHi, maxLen, source)
	}
	parts := fmt.Sprintf("{Workload.InputTokens} %d + {Workload.OutputTokens} %d", inHi, outHi)
	if w.PrefixTokens > 0 {
		parts = fmt.Sprintf("{Workload.PrefixTokens} %d + ", w.PrefixTokens) + parts
	}
	if w.InputTokens.Dist == workload.DistUniform {
		parts += " at {Workload.InputTokens.RangeRatio}'s upper end"
	}
	return fieldErr("Workload.InputTokens", "%s = %d tokens per request, more than the model's max_model_len %d (from %s): lower them",
		parts, need, maxLen, source)
}

// scrapeOpts attach the API key to /metrics reads of the target itself (a
// separate --metrics-url gets no credentials).
func (r *runner) scrapeOpts() []scrape.Option {
	if r.cfg.APIKey != "" && r.cfg.MetricsURL == "" {
		return []scrape.Option{scrape.WithBearerToken(r.cfg.APIKey)}
	}
	return nil
}
