package simulator

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// Power is the simulated GPUs' power model (issue 38): every GPU draws
// IdleWatts, plus its share of WattsPerSeq for each running sequence and of
// WattsPerBatchToken for each token the current engine step computes
// (prefill and decode), capped at LimitWatts. The engine sets the draw at
// the start of every step and to idle when it has nothing to run, so the
// draw is piecewise constant and the energy counter is its exact integral
// over wall time (powerMeter). DCGM-exporter-shaped metrics serve it on
// DCGMPath (dcgm.go).
type Power struct {
	// GPUs is the number of simulated GPUs the engine is spread over
	// (`--power.gpus`, tensor parallel): each has IdleWatts and 1/GPUs of
	// the load's watts. Default 1 (0 means 1).
	GPUs int
	// IdleWatts is one GPU's draw with nothing running (`--power.idle-watts`).
	// Default 70.
	IdleWatts float64
	// WattsPerSeq is the draw added per running sequence, over all GPUs
	// (`--power.watts-per-seq`). Default 6.
	WattsPerSeq float64
	// WattsPerBatchToken is the draw added per token computed in the current
	// step, over all GPUs (`--power.watts-per-batch-token`). Default 0.02.
	WattsPerBatchToken float64
	// LimitWatts is one GPU's power limit (`--power.limit-watts`): its draw
	// never exceeds it, and DCGM_FI_DEV_POWER_MGMT_LIMIT reports it. Default
	// 700; 0: no limit (and no DCGM_FI_DEV_POWER_MGMT_LIMIT).
	LimitWatts float64
	// GPUModel is the modelName label (`--power.gpu-model`).
	GPUModel string
	// Hostname is the Hostname label (`--power.hostname`).
	Hostname string
	// Pod, Namespace and Container are the Kubernetes labels dcgm-exporter
	// adds when it maps GPUs to pods (`--power.pod`, `--power.namespace`,
	// `--power.container`); empty: not added.
	Pod, Namespace, Container string
}

// DCGMPath is where the Simulator serves its DCGM-exporter-shaped metrics.
const DCGMPath = "/dcgm/metrics"

// Bounds of Power.
const (
	maxPowerGPUs  = 64
	maxPowerWatts = 10_000
)

// DefaultPower returns the power model's defaults: one GPU of an H100-like
// shape (70 W idle, 700 W limit).
func DefaultPower() Power {
	return Power{GPUs: 1, IdleWatts: 70, WattsPerSeq: 6, WattsPerBatchToken: 0.02, LimitWatts: 700,
		GPUModel: "NVIDIA H100 80GB HBM3", Hostname: "llmprobe-sim"}
}

// Validate reports the first invalid power-model parameter; the error names
// its flag.
func (p Power) Validate() error {
	w := func(name string, v float64) error {
		if !(v >= 0 && v <= maxPowerWatts) {
			return fmt.Errorf("--power.%s must be in [0, %d], got %v", name, maxPowerWatts, v)
		}
		return nil
	}
	if p.GPUs < 0 || p.GPUs > maxPowerGPUs {
		return fmt.Errorf("--power.gpus must be in [1, %d], got %d", maxPowerGPUs, p.GPUs)
	}
	for _, x := range []struct {
		n string
		v float64
	}{{"idle-watts", p.IdleWatts}, {"watts-per-seq", p.WattsPerSeq}, {"watts-per-batch-token", p.WattsPerBatchToken}, {"limit-watts", p.LimitWatts}} {
		if err := w(x.n, x.v); err != nil {
			return err
		}
	}
	if p.LimitWatts > 0 && p.LimitWatts < p.IdleWatts {
		return fmt.Errorf("--power.limit-watts (%v) must be >= --power.idle-watts (%v)", p.LimitWatts, p.IdleWatts)
	}
	for _, s := range []struct{ n, v string }{{"gpu-model", p.GPUModel}, {"hostname", p.Hostname}, {"pod", p.Pod},
		{"namespace", p.Namespace}, {"container", p.Container}} {
		if len(s.v) > 253 {
			return fmt.Errorf("--power.%s must be at most 253 bytes, got %d", s.n, len(s.v))
		}
	}
	return nil
}

// GPUWatts is one GPU's draw with running sequences and batchTokens tokens
// in the current step: IdleWatts + (WattsPerSeq·running +
// WattsPerBatchToken·batchTokens)/GPUs, at most LimitWatts.
func (p Power) GPUWatts(running, batchTokens int) float64 {
	w := p.IdleWatts + (p.WattsPerSeq*float64(running)+p.WattsPerBatchToken*float64(batchTokens))/float64(max(p.GPUs, 1))
	if p.LimitWatts > 0 {
		return math.Min(w, p.LimitWatts)
	}
	return w
}

// addPowerFlags registers the --power flags on cmd.
func addPowerFlags(cmd *kingpin.CmdClause, p *Power) {
	f := func(name, help string, v *float64) {
		cmd.Flag("power."+name, help).Default(strconv.FormatFloat(*v, 'g', -1, 64)).Float64Var(v)
	}
	s := func(name, help string, v *string) { cmd.Flag("power."+name, help).Default(*v).StringVar(v) }
	cmd.Flag("power.gpus", "Power model: simulated GPUs the engine is spread over (each draws the idle watts and its share "+
		"of the load); "+DCGMPath+" serves their DCGM-exporter metrics.").Default(strconv.Itoa(p.GPUs)).IntVar(&p.GPUs)
	f("idle-watts", "Power model: one GPU's draw in W with nothing running.", &p.IdleWatts)
	f("watts-per-seq", "Power model: W added per running sequence (over all GPUs).", &p.WattsPerSeq)
	f("watts-per-batch-token", "Power model: W added per token computed in the current engine step (over all GPUs).", &p.WattsPerBatchToken)
	f("limit-watts", "Power model: one GPU's power limit in W (its draw is capped there).", &p.LimitWatts)
	s("gpu-model", "Power model: the modelName label of "+DCGMPath+".", &p.GPUModel)
	s("hostname", "Power model: the Hostname label of "+DCGMPath+".", &p.Hostname)
	s("pod", "Power model: the pod label of "+DCGMPath+", as dcgm-exporter's Kubernetes mapping adds it (empty: none).", &p.Pod)
	s("namespace", "Power model: the namespace label of "+DCGMPath+" (empty: none).", &p.Namespace)
	s("container", "Power model: the container label of "+DCGMPath+" (empty: none).", &p.Container)
}

// powerMeter integrates the power model over wall time. set is called by
// the engine goroutine; read by scrapes. Safe for concurrent use.
type powerMeter struct {
	p     Power
	mu    sync.Mutex
	last  time.Time
	watts float64   // one GPU's current draw
	joule []float64 // per GPU, since New
}

func newPowerMeter(p Power, now time.Time) *powerMeter {
	if p.GPUs < 1 {
		p.GPUs = 1
	}
	return &powerMeter{p: p, last: now, watts: p.GPUWatts(0, 0), joule: make([]float64, p.GPUs)}
}

// advance integrates the current draw up to now; mu must be held.
func (m *powerMeter) advance(now time.Time) {
	if dt := now.Sub(m.last).Seconds(); dt > 0 {
		for i := range m.joule {
			m.joule[i] += m.watts * dt
		}
		m.last = now
	}
}

// set changes the draw at now to that of running sequences and batchTokens
// tokens in the step that starts.
func (m *powerMeter) set(now time.Time, running, batchTokens int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.advance(now)
	m.watts = m.p.GPUWatts(running, batchTokens)
	m.mu.Unlock()
}

// read returns each GPU's energy in joules since New and its current draw
// in W, at now.
func (m *powerMeter) read(now time.Time) (joules []float64, watts float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(now)
	return append([]float64(nil), m.joule...), m.watts
}

// EnergyJoules returns the simulated GPUs' energy in joules since New,
// summed over the GPUs, exactly (the DCGM counter rounds it down to whole
// millijoules per GPU).
func (s *Simulator) EnergyJoules() float64 {
	j, _ := s.eng.power.read(time.Now())
	sum := 0.0
	for _, x := range j {
		sum += x
	}
	return sum
}

// stepTokens is the tokens a step computes.
func stepTokens(plan []planned) int {
	n := 0
	for _, p := range plan {
		n += p.tokens
	}
	return n
}
