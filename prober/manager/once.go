package manager

import (
	"context"
	"sync"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// MaxOnceCount bounds OnceOptions.Count (GET /probe's ?count=).
const MaxOnceCount = 10

// OnceOptions configures ProbeOnce.
type OnceOptions struct {
	// Count is how many requests are sent, one after the other (1 when
	// below 1; at most MaxOnceCount).
	Count int
	// Logger receives what the request path logs (discovery, prompt
	// sizing, failures at debug level): GET /probe's ?debug=true shows
	// it. Nil discards it.
	Logger log.Logger
}

// OnceResult is one request of ProbeOnce: its Record and SLO verdict, or
// the reason it was not sent (Skipped; Record then holds only its target,
// probe and request id).
type OnceResult struct {
	Record  prober.Record
	Verdict slo.Verdict
	Skipped SkipReason
}

// ProbeOnce sends the requests of one probe of tc (its first) now, through
// the request path of the daemon's probes (discovery of the model and the
// server, prompt sizing, the workload's prompts, the client and the SLO
// verdict: the same code as a running probe's arrival), and returns them in
// order. It is GET /probe's engine (the blackbox convention): nothing runs
// after it returns, and the target's connections are closed. tc must be a
// resolved, valid target (config.ModuleConfig.Target). ctx bounds it all;
// requests left when it ends are not sent.
func ProbeOnce(ctx context.Context, tc config.TargetConfig, o OnceOptions) ([]OnceResult, error) {
	n := min(max(o.Count, 1), MaxOnceCount)
	col := &onceCollector{}
	m := New(Options{Logger: o.Logger, Observers: []Observer{col}, Recent: 1})
	t, err := newTargetRunner(m, tc)
	if err != nil {
		return nil, err
	}
	defer t.ep.CloseIdleConnections()
	pc := tc.Probes[0]
	p, err := newProbeRunner(t, pc, pc.RestartKey())
	if err != nil {
		return nil, err
	}
	p.noPrefetch = true // one request at a time: build no prompts ahead
	t.discover(ctx, true)
	for range n {
		if ctx.Err() != nil {
			break
		}
		col.begin(tc.Name, pc.Name)
		p.fire(ctx, time.Now(), 0)
	}
	p.fillWG.Wait()
	return col.results(), nil
}

var _ SkipObserver = (*onceCollector)(nil)

// onceCollector keeps what ProbeOnce's requests end with.
type onceCollector struct {
	mu  sync.Mutex
	out []OnceResult
}

func (c *onceCollector) begin(target, probe string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, OnceResult{Record: prober.Record{Target: target, Probe: probe}})
}

// Observe keeps the finished request's Record and verdict.
func (c *onceCollector) Observe(r *prober.Record, v slo.Verdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out[len(c.out)-1] = OnceResult{Record: *r, Verdict: v}
}

// Skipped keeps why the request was not sent.
func (c *onceCollector) Skipped(_, _ string, reason SkipReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out[len(c.out)-1].Skipped = reason
}

func (c *onceCollector) results() []OnceResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out
}
