package manager

import (
	"slices"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// calls records the events an observer got, by method name.
type calls struct{ got []string }

func (c *calls) Observe(*prober.Record, slo.Verdict) { c.got = append(c.got, "Observe") }

// skips adds SkipObserver only.
type skips struct{ calls }

func (c *skips) Skipped(string, string, SkipReason) { c.got = append(c.got, "Skipped") }

// every implements every optional interface.
type every struct{ calls }

func (c *every) Skipped(string, string, SkipReason)          { c.add("Skipped") }
func (c *every) SetLastArrival(string, string, time.Time)    { c.add("SetLastArrival") }
func (c *every) InFlight(string, string, int)                { c.add("InFlight") }
func (c *every) ProbeStarted(string, string, ProbeSettings)  { c.add("ProbeStarted") }
func (c *every) SLOChanged(string, string, slo.SLO, float64) { c.add("SLOChanged") }
func (c *every) DeleteProbe(string, string)                  { c.add("DeleteProbe") }
func (c *every) SetTargetLabels(string, map[string]string)   { c.add("SetTargetLabels") }
func (c *every) SetTargetInfo(string, TargetInfo)            { c.add("SetTargetInfo") }
func (c *every) DeleteTarget(string)                         { c.add("DeleteTarget") }
func (c *every) add(m string)                                { c.got = append(c.got, m) }

// TestObserversFanOut checks that each event reaches the observers that
// implement its interface, and only those, in the order given; nil
// observers are left out.
func TestObserversFanOut(t *testing.T) {
	var order []string
	first := ObserverFunc(func(*prober.Record, slo.Verdict) { order = append(order, "first") })
	only, sk, all := &calls{}, &skips{}, &every{}
	o := newObservers([]Observer{first, nil, NopObserver{}, only, sk, all,
		ObserverFunc(func(*prober.Record, slo.Verdict) { order = append(order, "last") })})
	o.Observe(&prober.Record{}, slo.Verdict{})
	o.Skipped("t", "p", SkipTooLong)
	o.SetLastArrival("t", "p", time.Time{})
	o.InFlight("t", "p", 1)
	o.ProbeStarted("t", "p", ProbeSettings{})
	o.SLOChanged("t", "p", slo.SLO{}, 0.99)
	o.DeleteProbe("t", "p")
	o.SetTargetLabels("t", nil)
	o.SetTargetInfo("t", TargetInfo{})
	o.DeleteTarget("t")
	if want := []string{"first", "last"}; !slices.Equal(order, want) {
		t.Errorf("Observe order %v, want %v", order, want)
	}
	if want := []string{"Observe"}; !slices.Equal(only.got, want) {
		t.Errorf("an Observer only got %v, want %v", only.got, want)
	}
	if want := []string{"Observe", "Skipped"}; !slices.Equal(sk.got, want) {
		t.Errorf("a SkipObserver got %v, want %v", sk.got, want)
	}
	want := []string{"Observe", "Skipped", "SetLastArrival", "InFlight", "ProbeStarted", "SLOChanged", "DeleteProbe",
		"SetTargetLabels", "SetTargetInfo", "DeleteTarget"}
	if !slices.Equal(all.got, want) {
		t.Errorf("an observer of every interface got %v, want %v", all.got, want)
	}
	if n := len(newObservers(nil).all); n != 0 {
		t.Errorf("no observers: %d", n)
	}
}
