package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/knob"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// Validate checks the global section: timeouts, SLO, goodput objective and
// max_rate. Every problem is returned (several joined with errors.Join).
func (g GlobalConfig) Validate() error {
	var l problems
	l.add("", validateTimeouts(g.Timeout, g.TTFTTimeout, g.StallTimeout))
	l.add("", validateSLO(g.SLO, g.Timeout, ""))
	l.add("", validateObjective(g.GoodputObjective))
	l.add("max_rate", validateMaxRate(g.MaxRate))
	return l.err()
}

// validateMaxRate checks global.max_rate: > 0 and at most what the arrival
// generator yields (arrival.MaxRate).
func validateMaxRate(v float64) error {
	if err := validatePositive(v); err != nil {
		return err
	}
	if v > arrival.MaxRate {
		return fmt.Errorf("must be <= %v (the most arrivals per second a probe's arrival process yields), got %v", float64(arrival.MaxRate), v)
	}
	return nil
}

// validateRates checks the rate of every probe against global.max_rate
// (maxRate, valid); a rate that is invalid on its own is left to
// ProbeConfig.Validate.
// api is the row of the target's API (the zero row when it names none).
func (t TargetConfig) api() client.API {
	a, _ := client.Lookup(t.API)
	return a
}

func (t TargetConfig) validateRates(maxRate float64) error {
	var l problems
	for i, p := range t.Probes {
		if validatePositive(p.Rate) == nil && p.Rate > maxRate {
			l.add(fmt.Sprintf("probes[%d].rate", i), fmt.Errorf("must be <= global.max_rate (%v), got %v", maxRate, p.Rate))
		}
	}
	return l.err()
}

// Validate checks every field of a resolved target and its probes, and the
// rules between them: one API key source, timeouts and SLO within timeout,
// unique probe names. It does not read the API key. Every problem is
// returned (several joined with errors.Join), at most one per field.
func (t TargetConfig) Validate() error {
	var l problems
	l.add("name", validateName(t.Name))
	switch {
	case t.BaseURL == "":
		l.add("base_url", errors.New("required"))
	case l.add("base_url", validateURL(t.BaseURL, false)):
	default:
		if u, _ := url.Parse(t.BaseURL); strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
			l.add("base_url", errors.New("must be the server root, without /v1 (llmprobe adds /v1/completions or /v1/chat/completions)"))
		}
	}
	api, err := client.ParseAPI(t.API)
	l.add("api", err)
	switch {
	case t.BatchSize < 0 || t.BatchSize > client.MaxInputs:
		l.add("batch_size", fmt.Errorf("must be in [0, %d], got %d", client.MaxInputs, t.BatchSize))
	case t.BatchSize > 1 && !api.Pooling:
		l.add("batch_size", fmt.Errorf("is for api %s only, this target's api is %s", client.NamesWith(client.WithPooling, "and"), t.API))
	}
	if t.RerankPath != "" {
		if !client.WithPathChoice(api) {
			l.add("rerank_path", fmt.Errorf("is for api %s only, this target's api is %s", client.NamesWith(client.WithPathChoice, "and"), t.API))
		} else if _, err := api.Path(t.RerankPath); err != nil {
			l.add("rerank_path", err)
		}
	}
	if _, err := engine.Parse(t.Engine); err != nil {
		names := []string{"auto"}
		for _, n := range engine.Names {
			names = append(names, string(n))
		}
		l.add("engine", fmt.Errorf("must be one of %s, got %q", strings.Join(names, ", "), t.Engine))
	}
	if t.APIKeyFile != "" && t.APIKeyEnv != "" {
		l.add("api_key_file", errors.New("set either api_key_file or api_key_env, not both"))
	} else if t.APIKeyEnv != "" && !envRE.MatchString(t.APIKeyEnv) {
		// Never echo the value: it may be a key pasted in the wrong place.
		l.add("api_key_env", fmt.Errorf("must be the name of an environment variable (%s), not the key itself", envPattern))
	}
	if t.RawMetricsURL != "" && t.RawMetricsURL != MetricsURLNone {
		l.add("metrics_url", validateURL(t.RawMetricsURL, true))
	}
	l.add("", t.validateHTTPConfig())
	l.add("attribution_headers", validateAttributionHeaders(t.AttributionHeaders))
	l.add("", validateTimeouts(t.Timeout, t.TTFTTimeout, t.StallTimeout))
	note := ""
	if !t.set.has("slo", true) {
		note = " (inherited from global.slo)"
	}
	l.add("", validateSLO(t.SLO, t.Timeout, note))
	l.add("", validateObjective(t.GoodputObjective))
	switch {
	case t.MaxBodyBytes <= 0:
		l.add("max_body_bytes", fmt.Errorf("must be > 0, got %d", int64(t.MaxBodyBytes)))
	case t.MaxBodyBytes > MaxResponseBodyBytes:
		l.add("max_body_bytes", fmt.Errorf("must be <= %v (each request in flight may hold that much), got %v", ByteSize(MaxResponseBodyBytes), t.MaxBodyBytes))
	}
	switch {
	case len(t.Probes) == 0:
		l.add("probes", errors.New("at least one probe is required (leave probes out for the default probe)"))
	case len(t.Probes) > MaxProbesPerTarget:
		l.add("probes", fmt.Errorf("at most %d probes a target (each runs its own arrivals and requests), got %d", MaxProbesPerTarget, len(t.Probes)))
	}
	l.add("", t.validateSweeps())
	validateLabels(&l, t.Labels)
	l.add("cost_per_hour", validateCostPerHour(t.CostPerHour))
	l.add("", ValidateGPUSource(t.GPUMetricsURL, t.GPUSelector)) // energy.go
	if r := t.TraceSampleRatio; r < 0 || r > 1 || math.IsNaN(r) {
		l.add("trace_sample_ratio", fmt.Errorf("must be in (0, 1] (0 or left out: the daemon's --tracing.sample-ratio), got %v", r))
	}
	l.add("", t.validateMultiTurn())
	seen := make(map[string]int, len(t.Probes))
	for i, p := range t.Probes {
		path := fmt.Sprintf("probes[%d]", i)
		l.add(path, p.Validate())
		if i := p.Workload.Request.ImagesFeature(); i >= 0 && !api.Images {
			l.add(fmt.Sprintf("%s.workload.request.features[%d].kind", path, i),
				fmt.Errorf("images are sent with api %s only (image content parts), this target's api is %s", client.NamesWith(client.WithImages, "and"), t.API))
		}
		if validateName(p.Name) != nil {
			continue
		}
		if j, dup := seen[p.Name]; dup {
			l.add(path+".name", fmt.Errorf("duplicate probe name %q (also probes[%d])", p.Name, j))
		} else {
			seen[p.Name] = i
		}
	}
	return l.err()
}

// Validate checks every field of a resolved probe, and that burstiness other
// than 1 comes with gamma arrivals. Every problem is returned (several joined
// with errors.Join), at most one per field; the default max_concurrency of
// an invalid rate is not reported.
func (p ProbeConfig) Validate() error {
	if p.AnswerChecks != nil {
		return p.validateAnswerProbe() // answerchecks.go
	}
	var l problems
	l.add("name", validateName(p.Name))
	rateBad := l.add("rate", validateProbeRate(p.Rate))
	// The rule of a sweep's arrival and burstiness too (prober/knob): a
	// kind of arrival.Kinds, a shape within arrival's bounds (below the
	// minimum nearly every gap is 0: runs of millions of arrivals at
	// once), and a shape other than 1 only with gamma arrivals.
	arrivalBad := l.add("", knobProblem(knob.Arrival(p.Arrival, p.Burstiness)))
	if !rateBad && !arrivalBad {
		// Whatever else the arrival process refuses, refused here, at load,
		// and never when the probe starts.
		l.add("arrival", arrival.Validate(p.Arrival, p.Rate, p.Burstiness))
	}
	if p.MaxConcurrency < 1 && (!rateBad || p.set.has("max_concurrency", p.MaxConcurrency != 0)) {
		l.add("max_concurrency", fmt.Errorf("must be >= 1, got %d", p.MaxConcurrency))
	}
	l.add("", knobProblem(knob.InFlight("MaxConcurrency", p.MaxConcurrency)))
	if p.PromptNonce > MaxPromptNonce {
		l.add("prompt_nonce", fmt.Errorf("must be <= %d (0: a fresh nonce each start), got %d", uint64(MaxPromptNonce), p.PromptNonce))
	}
	if p.Workload.Trace != nil {
		l.add("workload.trace", errProbeTrace)
		return l.err()
	}
	if p.Workload.Dataset != nil {
		l.add("", validateDatasetWorkload(p.Workload))
		return l.err()
	}
	workloadBad := l.add("workload.input_tokens", p.Workload.InputTokens.Validate())
	workloadBad = l.add("workload.output_tokens", p.Workload.OutputTokens.Validate()) || workloadBad
	if p.Workload.PrefixTokens < 0 {
		workloadBad = l.add("workload.prefix_tokens", fmt.Errorf("must be >= 0, got %d", p.Workload.PrefixTokens))
	}
	workloadBad = validateMultiTurn(&l, p.Workload.MultiTurn) || workloadBad
	if !workloadBad {
		// Anything else workload.Spec checks.
		l.add("workload", workloadProblem(p.Workload.Validate()))
	}
	return l.err()
}

// knobProblem is a rule's problem as a *fieldError at the knob's key (a
// probe's keys are a sweep's: knob.Key), nil for nil.
func knobProblem(p *knob.Problem) error {
	if p == nil {
		return nil
	}
	return &fieldError{Key: knob.Key(p.Knob), Err: errors.New(p.Text(knob.Key))}
}

func validateName(s string) error {
	if s == "" {
		return errors.New("required")
	}
	if !nameRE.MatchString(s) {
		return fmt.Errorf("must match %s, got %q", namePattern, s)
	}
	return nil
}

// validateProbeRate checks a probe's rate: > 0, finite, and at least
// MinProbeRate.
func validateProbeRate(v float64) error {
	if err := validatePositive(v); err != nil {
		return err
	}
	if v < MinProbeRate {
		return fmt.Errorf("must be >= %v (one request per %v s; a lower rate never fires), got %v", MinProbeRate, 1/MinProbeRate, v)
	}
	return nil
}

func validatePositive(v float64) error {
	if math.IsInf(v, 0) {
		return fmt.Errorf("must be finite, got %v", v)
	}
	if !(v > 0) {
		return fmt.Errorf("must be > 0, got %v", v)
	}
	return nil
}

// validateURL checks an http(s) URL without ever echoing it (it may hold
// credentials).
func validateURL(s string, allowQuery bool) error {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("invalid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.User != nil {
		return errors.New("must not contain credentials (user:password@); use api_key_file or api_key_env")
	}
	if u.Host == "" {
		return errors.New("host is missing")
	}
	if !allowQuery && (u.RawQuery != "" || u.ForceQuery) {
		return errors.New("must not contain a query (?...)")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("must not contain a fragment (#...)")
	}
	return nil
}

// validateTimeouts checks timeout, and ttft and stall against it when it is
// valid; every problem is returned.
func validateTimeouts(timeout, ttft, stall time.Duration) error {
	var l problems
	if timeout <= 0 {
		l.add("timeout", fmt.Errorf("must be > 0, got %v", timeout))
	} else if timeout > MaxTimeout {
		l.add("timeout", fmt.Errorf("%s, got %v", knob.TimeoutText, timeout)) // a sweep's --timeout's too
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"ttft_timeout", ttft}, {"stall_timeout", stall}} {
		if f.v < 0 {
			l.add(f.name, fmt.Errorf("must be >= 0 (0 disables it), got %v", f.v))
		} else if timeout > 0 && f.v > timeout {
			l.add(f.name, fmt.Errorf("must be <= timeout (%v), got %v", timeout, f.v))
		}
	}
	return l.err()
}

// validateSLO checks an SLO, and its thresholds against timeout when that is
// valid; every problem is returned.
func validateSLO(s slo.SLO, timeout time.Duration, note string) error {
	if err := s.Validate(); err != nil {
		return under("slo", err)
	}
	if timeout <= 0 {
		return nil // reported as a timeout problem
	}
	var l problems
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"e2el", s.E2EL}, {"ttfa", s.TTFA}} {
		if f.v > timeout {
			l.add("slo."+f.name, fmt.Errorf("must be <= timeout (%v), got %v%s", timeout, f.v, note))
		}
	}
	return l.err()
}

// validateObjective checks a goodput objective: a share strictly between 0
// and 1 (1 would leave no error budget to burn).
func validateObjective(v float64) error {
	if !(v > 0 && v < 1) {
		return errf("goodput_objective", "must be > 0 and < 1 (e.g. 0.99 for 99 %%), got %v", v)
	}
	return nil
}
