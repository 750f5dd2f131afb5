package sweep

import (
	"context"
	"fmt"
	"github.com/llmprobe/llmprobe/prober/gpusel"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// Energy per good token (issue 38): a step's GPU energy from the NVIDIA DCGM
// exporter's counters, read beside the server's /metrics snapshots.

// The DCGM exporter's metric names (NVIDIA/dcgm-exporter
// etc/default-counters.csv; docs/measurement.md "Energy" says where each fact
// comes from).
const (
	// DCGMEnergy is the energy counter: millijoules since boot, per GPU.
	DCGMEnergy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	// DCGMPower is the power gauge in W, per GPU.
	DCGMPower = "DCGM_FI_DEV_POWER_USAGE"
	// DCGMPowerLimit is the power management limit in W (not in the
	// exporter's default counters; read when a custom CSV adds it).
	DCGMPowerLimit = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
)

// Energy methods (StepEnergy.Method).
const (
	// EnergyCounter: the energy counter's delta over the step.
	EnergyCounter = "counter"
	// EnergyPowerTime: the fallback, power samples integrated over the
	// step's window (trapezoids); less exact than the counter.
	EnergyPowerTime = "power-x-time"
)

// StepEnergy is a step's GPU energy (result.json: a step's "energy").
// NotRecorded says why there is none; the figures are then absent, never 0.
type StepEnergy struct {
	NotRecorded string `json:"not_recorded,omitempty"`
	// Source is the GPU metrics URL (redacted) and Selector the label
	// selector choosing the target's GPUs; GPUs counts them, GPUModel is
	// their modelName and PowerLimitW their summed power limit (0: not
	// exposed).
	Source      string  `json:"source,omitempty"`
	Selector    string  `json:"selector,omitempty"`
	GPUs        int     `json:"gpus,omitempty"`
	GPUModel    string  `json:"gpu_model,omitempty"`
	PowerLimitW float64 `json:"power_limit_w,omitempty"`
	// Method is EnergyCounter or EnergyPowerTime (the fallback).
	Method string `json:"method,omitempty"`
	// WindowS is the time between the first and the last GPU reading of
	// the step (from after the idle wait to after the settled after
	// snapshot); Joules the energy of the GPUs over it.
	WindowS float64 `json:"window_s,omitempty"`
	Joules  float64 `json:"joules,omitempty"`
	// MeanW is Joules / WindowS; PeakW the highest summed power reading
	// (0 without the power gauge).
	MeanW float64 `json:"mean_power_w,omitempty"`
	PeakW float64 `json:"peak_power_w,omitempty"`
	// JoulesPerOutputToken divides Joules by every output token of the
	// step, JoulesPerGoodOutputToken by the output tokens of the requests
	// that met every SLO, WhPer1000GoodRequests by the good requests (per
	// thousand, in watt-hours); nil when the divisor is 0.
	JoulesPerOutputToken     *float64 `json:"joules_per_output_token,omitempty"`
	JoulesPerGoodOutputToken *float64 `json:"joules_per_good_output_token,omitempty"`
	WhPer1000GoodRequests    *float64 `json:"wh_per_1000_good_requests,omitempty"`
}

// ParseGPUSelector is gpusel.Parse, the one rule for a GPU selector.
func ParseGPUSelector(s string) ([]*labels.Matcher, error) { return gpusel.Parse(s) }

// validateEnergy checks GPUMetricsURL and GPUSelector.
func (c *Config) validateEnergy() error {
	if c.GPUMetricsURL != "" {
		u, err := url.Parse(c.GPUMetricsURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fieldErr("GPUMetricsURL", "must be an http:// or https:// URL, got %q", redact.Text(c.GPUMetricsURL))
		}
	}
	if _, err := ParseGPUSelector(c.GPUSelector); err != nil {
		return fieldErr("GPUSelector", "%w", err)
	}
	if c.GPUSelector != "" && c.GPUMetricsURL == "" {
		return fieldErr("GPUSelector", "needs {GPUMetricsURL}")
	}
	return nil
}

// gpuReading is one read of the GPU metrics, summed over the selected GPUs.
type gpuReading struct {
	t        time.Time
	energyMJ map[string]float64 // per GPU (its label set); nil: no counter
	watts    float64
	hasPower bool
	gpus     int
	model    string
	limitW   float64
}

// readGPUs extracts the selected GPUs' figures from families.
func readGPUs(fams map[string]*dto.MetricFamily, sel []*labels.Matcher, t time.Time) gpuReading {
	g := gpuReading{t: t}
	match := func(m *dto.Metric) (string, bool) {
		var keys []string
		get := func(name string) string {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == name {
					return lp.GetValue()
				}
			}
			return ""
		}
		for _, s := range sel {
			if !s.Matches(get(s.Name)) {
				return "", false
			}
		}
		for _, lp := range m.GetLabel() {
			keys = append(keys, lp.GetName()+"="+lp.GetValue())
		}
		sort.Strings(keys)
		if g.model == "" {
			g.model = get("modelName")
		}
		return strings.Join(keys, ","), true
	}
	value := func(m *dto.Metric) float64 {
		if m.Counter != nil {
			return m.GetCounter().GetValue()
		}
		if m.Gauge != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetUntyped().GetValue()
	}
	if f := fams[DCGMEnergy]; f != nil {
		for _, m := range f.GetMetric() {
			if k, ok := match(m); ok {
				if g.energyMJ == nil {
					g.energyMJ = map[string]float64{}
				}
				g.energyMJ[k] = value(m)
			}
		}
		g.gpus = len(g.energyMJ)
	}
	if f := fams[DCGMPower]; f != nil {
		n := 0
		for _, m := range f.GetMetric() {
			if _, ok := match(m); ok {
				g.watts += value(m)
				g.hasPower = true
				n++
			}
		}
		g.gpus = max(g.gpus, n)
	}
	if f := fams[DCGMPowerLimit]; f != nil {
		for _, m := range f.GetMetric() {
			if _, ok := match(m); ok {
				g.limitW += value(m)
			}
		}
	}
	return g
}

// energySource reads a sweep's GPU metrics (nil-safe: without a source
// every step is not-recorded with reason).
type energySource struct {
	url, shown, selector string
	sel                  []*labels.Matcher
	http                 *http.Client
	interval             time.Duration
	reason               string     // not-recorded reason for every step ("" when readable)
	first                gpuReading // the preflight reading
}

// fingerprint is the manifest's target.gpu: nil without a readable source.
func (e *energySource) fingerprint() *fingerprint.GPU {
	if e == nil || e.reason != "" {
		return nil
	}
	g := e.first
	return &fingerprint.GPU{MetricsURL: e.shown, Selector: e.selector, Count: g.gpus,
		Model: fingerprint.OrNotRecorded(g.model), PowerLimitW: g.limitW}
}

// newEnergySource builds the source of c (reason set when there is none or
// the preflight read failed).
func newEnergySource(ctx context.Context, c *Config, logger log.Logger) *energySource {
	e := &energySource{url: c.GPUMetricsURL, selector: strings.TrimSpace(c.GPUSelector), interval: c.MetricsInterval}
	if e.url == "" {
		e.reason = "no GPU metrics source: set --gpu-metrics-url (a DCGM exporter) to record energy"
		return e
	}
	e.shown = redact.Text(e.url)
	e.sel, _ = ParseGPUSelector(e.selector) // validated
	// A client of its own: the target's credentials (--http.config.file,
	// the API key) never go to the exporter.
	e.http = bounded.NewClient(nil, scrape.DefaultTimeout) // scrape.Fetch bounds the body
	if e.interval <= 0 {
		e.interval = DefaultMetricsInterval
	}
	g, err := e.read(ctx)
	e.first = g
	switch {
	case err != nil:
		e.reason = "the GPU metrics could not be read: " + err.Error()
	case g.gpus == 0:
		e.reason = fmt.Sprintf("%s has no %s or %s series matching the GPU selector %q", e.shown, DCGMEnergy, DCGMPower, e.selector)
	}
	if e.reason != "" {
		level.Warn(logger).Log("msg", "energy will be not-recorded", "reason", e.reason)
	}
	return e
}

func (e *energySource) read(ctx context.Context) (gpuReading, error) {
	snap, err := scrape.Fetch(ctx, e.http, e.url)
	if err != nil {
		return gpuReading{}, fmt.Errorf("%s", redact.Text(err.Error()))
	}
	return readGPUs(snap.Families, e.sel, snap.Time), nil
}

// energyMeter measures one step: a first reading, power samples every
// interval while the step runs, a last reading at finish.
type energyMeter struct {
	src  *energySource
	mu   sync.Mutex
	rs   []gpuReading
	err  error
	stop chan struct{}
	done chan struct{}
}

// begin takes the step's first reading and starts sampling.
func (e *energySource) begin(ctx context.Context) *energyMeter {
	m := &energyMeter{src: e}
	if e == nil || e.reason != "" {
		return m
	}
	g, err := e.read(ctx)
	if err != nil {
		m.err = err
		return m
	}
	m.rs = append(m.rs, g)
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(e.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-m.stop:
				return
			case <-t.C:
				if g, err := e.read(ctx); err == nil {
					m.mu.Lock()
					m.rs = append(m.rs, g)
					m.mu.Unlock()
				}
			}
		}
	}()
	return m
}

// finish stops sampling, takes the last reading and computes st's energy.
func (m *energyMeter) finish(ctx context.Context, st *Step) *StepEnergy {
	e := m.src
	if e == nil {
		return &StepEnergy{NotRecorded: "no GPU metrics source"}
	}
	if e.reason != "" {
		return &StepEnergy{NotRecorded: e.reason}
	}
	out := &StepEnergy{Source: e.shown, Selector: e.selector}
	if m.stop != nil {
		close(m.stop)
		<-m.done
	}
	switch {
	case m.err != nil:
		out.NotRecorded = "the GPU metrics could not be read before the step: " + m.err.Error()
		return out
	case st.Interrupted:
		out.NotRecorded = "interrupted"
		return out
	}
	last, err := e.read(ctx)
	if err != nil {
		out.NotRecorded = "the GPU metrics could not be read after the step: " + err.Error()
		return out
	}
	rs := append(m.rs, last)
	computeEnergy(out, rs, st)
	return out
}

// computeEnergy fills out from the step's readings rs (first: before the
// load, last: after the settled after snapshot) and st's token counts.
func computeEnergy(out *StepEnergy, rs []gpuReading, st *Step) {
	first, last := rs[0], rs[len(rs)-1]
	out.GPUs, out.GPUModel, out.PowerLimitW = last.gpus, last.model, last.limitW
	out.WindowS = last.t.Sub(first.t).Seconds()
	for _, g := range rs {
		if g.hasPower {
			out.PeakW = math.Max(out.PeakW, g.watts)
		}
	}
	if j, ok := counterDelta(first, last); ok {
		out.Method, out.Joules = EnergyCounter, j
	} else if j, ok := powerTime(rs); ok {
		out.Method, out.Joules = EnergyPowerTime, j
	} else {
		out.NotRecorded = fmt.Sprintf("neither %s (the same GPUs before and after, not reset) nor two %s readings", DCGMEnergy, DCGMPower)
		out.PeakW = 0
		return
	}
	if out.WindowS > 0 {
		out.MeanW = out.Joules / out.WindowS
	}
	per := func(n int, scale float64) *float64 {
		if n <= 0 {
			return nil
		}
		v := out.Joules * scale / float64(n)
		return &v
	}
	out.JoulesPerOutputToken = per(st.Stats.TotalOutputTokens, 1)
	out.JoulesPerGoodOutputToken = per(st.Stats.GoodOutputTokens, 1)
	out.WhPer1000GoodRequests = per(st.Stats.Good, 1000.0/3600)
}

// counterDelta is the energy counter's delta in joules, over the GPUs both
// readings have; ok is false without the counter, with another GPU set or a
// counter that went down (a reset).
func counterDelta(a, b gpuReading) (float64, bool) {
	if len(a.energyMJ) == 0 || len(a.energyMJ) != len(b.energyMJ) {
		return 0, false
	}
	sum := 0.0
	for k, v0 := range a.energyMJ {
		v1, ok := b.energyMJ[k]
		if !ok || v1 < v0 {
			return 0, false
		}
		sum += v1 - v0
	}
	return sum / 1000, true
}

// powerTime integrates the power readings over their times (trapezoids).
func powerTime(rs []gpuReading) (float64, bool) {
	var ps []gpuReading
	for _, g := range rs {
		if g.hasPower {
			ps = append(ps, g)
		}
	}
	if len(ps) < 2 {
		return 0, false
	}
	j := 0.0
	for i := 1; i < len(ps); i++ {
		j += (ps[i].watts + ps[i-1].watts) / 2 * ps[i].t.Sub(ps[i-1].t).Seconds()
	}
	return j, true
}

// KneeEnergyPerGoodToken is the joules per good output token at the knee:
// the mean over the knee level's valid steps that recorded it; ok is false
// without a knee or a recorded figure.
func (r *Result) KneeEnergyPerGoodToken() (float64, bool) {
	if !r.Knee.Found {
		return 0, false
	}
	sum, n := 0.0, 0
	for _, st := range r.KneeSteps() {
		if st.Energy != nil && st.Energy.JoulesPerGoodOutputToken != nil {
			sum += *st.Energy.JoulesPerGoodOutputToken
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// kneeEnergyJSON is result.json's knee joules_per_good_output_token: null
// when not recorded.
func kneeEnergyJSON(r *Result) any {
	if j, ok := r.KneeEnergyPerGoodToken(); ok {
		return finite(j)
	}
	return nil
}
