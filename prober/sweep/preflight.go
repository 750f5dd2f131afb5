package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log/level"
	"github.com/llmprobe/llmprobe/collector/scrape"
	"github.com/llmprobe/llmprobe/internal/fingerprint"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// preflight checks the target before anything is created: /v1/models must
// answer (and list the model), /metrics is probed once.
func (r *runner) preflight(ctx context.Context) error {
	c := r.cfg
	models, err := r.listModels(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, fingerprint.RedactText(c.Target), err)
	}
	switch {
	case c.Model == "" && len(models) == 0:
		return fmt.Errorf("target %s lists no model in /v1/models; give --model", fingerprint.RedactText(c.Target))
	case c.Model == "":
		r.model = models[0]
	case len(models) > 0 && !slices.Contains(models, c.Model):
		return fmt.Errorf("model %q is not served by %s (it serves: %s)", c.Model, fingerprint.RedactText(c.Target), strings.Join(models, ", "))
	default:
		r.model = c.Model
	}
	if err := r.checkContext(ctx); err != nil {
		return err
	}
	r.metricsURL = c.MetricsURL
	if r.metricsURL == "" {
		r.metricsURL = strings.TrimSuffix(strings.TrimRight(c.Target, "/"), "/v1") + "/metrics"
	}
	snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
	switch {
	case err != nil:
		r.metricsReason = r.redact(err.Error())
		level.Warn(r.logger).Log("msg", "server /metrics not readable: snapshots, idle proofs and server-side figures will be not-recorded", "err", r.metricsReason)
	default:
		r.metricsOK = true
		if _, known := scrape.Idle(snap); known {
			r.idleKnown = true
		} else {
			level.Warn(r.logger).Log("msg", "server /metrics has no vllm:num_requests_running/waiting: idle proofs will be not-recorded")
		}
	}
	cl, err := client.New(client.Options{
		BaseURL:      c.Target,
		API:          c.API,
		Model:        r.model,
		APIKey:       c.APIKey,
		Timeout:      c.Timeout,
		TTFTTimeout:  c.TTFTTimeout,
		StallTimeout: c.StallTimeout,
		HTTPClient:   &http.Client{Transport: r.loadTransport},
		Trace:        true,
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	r.client = cl
	return nil
}

// checkContext reads the model's max_model_len (GET /v1/models, else the
// max_model_len of a POST /tokenize answer) and refuses a workload whose
// longest request (prefix + input + output tokens) does not fit, before any
// run directory exists. An unknown max_model_len is not checked.
func (r *runner) checkContext(ctx context.Context) error {
	c := r.cfg
	f := fingerprint.Fetcher{Client: r.http, BaseURL: c.Target, Header: r.authHeader()}
	r.modelInfo = f.Model(ctx, r.model)
	maxLen, source := r.modelInfo.MaxModelLen.Value, "GET /v1/models"
	if !r.modelInfo.MaxModelLen.Recorded {
		maxLen, source = 0, "POST /tokenize"
		st, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{
			BaseURL: c.Target, Model: r.model, Chat: c.API == "chat",
			Client: &http.Client{Timeout: 10 * time.Second, Transport: r.http.Transport}, Header: r.authHeader(),
		})
		if err == nil {
			if _, err := st.Count(ctx, "the"); err == nil {
				maxLen = int64(st.MaxModelLen())
			}
		}
	}
	if maxLen <= 0 {
		return nil
	}
	return checkFits(c, maxLen, source)
}

// checkFits returns a *FieldError naming the length fields when the longest
// request of c's workload needs more than maxLen tokens.
func checkFits(c Config, maxLen int64, source string) error {
	w := c.Workload
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
	parts := fmt.Sprintf("--input-len %d + --output-len %d", inHi, outHi)
	if w.PrefixTokens > 0 {
		parts = fmt.Sprintf("--prefix-len %d + ", w.PrefixTokens) + parts
	}
	if w.InputTokens.Dist == workload.DistUniform {
		parts += " at --range-ratio's upper end"
	}
	return fieldErr("Workload.InputTokens", "%s = %d tokens per request, more than the model's max_model_len %d (from %s): lower them",
		parts, need, maxLen, source)
}

func (r *runner) scrapeOpts() []scrape.Option {
	if r.cfg.APIKey != "" && r.cfg.MetricsURL == "" {
		return []scrape.Option{scrape.WithBearerToken(r.cfg.APIKey)}
	}
	return nil
}

func (r *runner) authHeader() http.Header {
	h := http.Header{}
	if r.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+string(r.cfg.APIKey))
	}
	return h
}

// listModels returns the ids GET /v1/models lists.
func (r *runner) listModels(ctx context.Context) ([]string, error) {
	u := strings.TrimSuffix(strings.TrimRight(r.cfg.Target, "/"), "/v1") + "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range r.authHeader() {
		req.Header[k] = v
	}
	resp, err := r.http.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("GET /v1/models: %w", ue.Unwrap())
		}
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/models: status %s", resp.Status)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET /v1/models: not an OpenAI model list: %w", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}
