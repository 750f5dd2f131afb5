package simulator

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The DCGM exporter's names, types, units and labels, as NVIDIA/dcgm-exporter
// serves them (docs/simulator.md "Power model" cites the files):
//   - etc/default-counters.csv: DCGM_FI_DEV_POWER_USAGE "gauge, Power draw
//     (in W)" and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION "counter, Total energy
//     consumption since boot (in mJ)". DCGM_FI_DEV_POWER_MGMT_LIMIT (W) is a
//     DCGM field the default CSV leaves out; a custom CSV adds it.
//   - the exposition template (metricsFormat in the collector): labels gpu
//     (the index), UUID ("uuid" with --use-old-namespace), device
//     ("nvidia<index>"), modelName, Hostname; the Kubernetes pod mapper adds
//     pod, namespace and container (pod_name, pod_namespace,
//     container_name with --use-old-namespace).
const (
	dcgmEnergy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	dcgmPower  = "DCGM_FI_DEV_POWER_USAGE"
	dcgmLimit  = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
)

// dcgmCollector exposes the power meter as dcgm-exporter does.
type dcgmCollector struct {
	m                    *powerMeter
	labels               []string // label names, in dcgm-exporter's order
	values               [][]string
	energy, power, limit *prometheus.Desc
}

func newDCGMCollector(m *powerMeter, seed uint64) *dcgmCollector {
	p := m.p
	names := []string{"gpu", "UUID", "device", "modelName", "Hostname"}
	for _, kv := range [][2]string{{"pod", p.Pod}, {"namespace", p.Namespace}, {"container", p.Container}} {
		if kv[1] != "" {
			names = append(names, kv[0])
		}
	}
	c := &dcgmCollector{m: m, labels: names}
	for i := range p.GPUs {
		h := hash2(seed, uint64(i)+0x9e37)
		uuid := fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(h>>32), uint16(h>>16), uint16(h), uint16(mix(h)>>48), mix(h)&0xffffffffffff)
		v := []string{strconv.Itoa(i), uuid, "nvidia" + strconv.Itoa(i), p.GPUModel, p.Hostname}
		for _, x := range []string{p.Pod, p.Namespace, p.Container} {
			if x != "" {
				v = append(v, x)
			}
		}
		c.values = append(c.values, v)
	}
	c.energy = prometheus.NewDesc(dcgmEnergy, "Total energy consumption since boot (in mJ).", names, nil)
	c.power = prometheus.NewDesc(dcgmPower, "Power draw (in W).", names, nil)
	c.limit = prometheus.NewDesc(dcgmLimit, "Power management limit (in W).", names, nil)
	return c
}

// Describe implements prometheus.Collector.
func (c *dcgmCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.energy
	ch <- c.power
	ch <- c.limit
}

// Collect implements prometheus.Collector: one reading of every GPU.
func (c *dcgmCollector) Collect(ch chan<- prometheus.Metric) {
	joules, watts := c.m.read(time.Now())
	for i, v := range c.values {
		// DCGM reports whole millijoules.
		ch <- prometheus.MustNewConstMetric(c.energy, prometheus.CounterValue, math.Floor(joules[i]*1000), v...)
		ch <- prometheus.MustNewConstMetric(c.power, prometheus.GaugeValue, watts, v...)
		if c.m.p.LimitWatts > 0 {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, c.m.p.LimitWatts, v...)
		}
	}
}

// dcgmHandler serves the DCGM-exporter-shaped metrics on a registry of
// their own (the vLLM /metrics never carries them).
func (s *Simulator) dcgmHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newDCGMCollector(s.eng.power, uint64(s.cfg.Seed)))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
