package sweep

import (
	"context"
	"time"

	"github.com/llmprobe/llmprobe/collector/scrape"
	"github.com/llmprobe/llmprobe/internal/fingerprint"
)

// fingerprintStart fills the fingerprint's fixed parts.
func (r *runner) fingerprintStart(ctx context.Context, start time.Time) {
	c := r.cfg
	fp := fingerprint.New(r.opts.Args, start)
	f := fingerprint.Fetcher{Client: r.http, BaseURL: c.Target, Header: r.authHeader()}
	mi := r.modelInfo
	fp.Target.URL = fingerprint.RedactText(c.Target)
	fp.Target.API = c.API
	fp.Target.Model = r.model
	fp.Target.ServedModel, fp.Target.Root, fp.Target.MaxModelLen = mi.ID, mi.Root, mi.MaxModelLen
	fp.Target.ServerVersion = f.ServerVersion(ctx)
	if r.metricsOK {
		fp.Target.MetricsURL = fingerprint.RedactText(r.metricsURL)
		if snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...); err == nil {
			fp.Target.EngineConfig = fingerprint.EngineConfig(snap.Raw)
		}
	}
	if w, err := fingerprint.HashWorkload(c.Workload, c.WorkloadSource); err == nil {
		fp.Workload = w
	}
	fp.Workload.SavePrompts = c.SavePrompts
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
		fp.Metadata = fingerprint.RedactMetadata(c.Metadata)
	}
	r.fp = fp
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
		MaxSendLagMS: ms(v.MaxSendLag),
		MaxClientCPU: v.MaxClientCPU,
		CPUChecked:   r.validityOptions().withDefaults().MaxClientCPU > 0,
		MaxErrorRate: v.MaxErrorRate,
		GoodputRatio: DefaultGoodputRatio,
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
