package sweep

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/proccpu"
	"github.com/llmprobe/llmprobe/prober/schedlat"
	"github.com/llmprobe/llmprobe/prober/schedule"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// The throughput probe that starts an adaptive search (--rates auto without
// --auto-start): closed loops of growing concurrency, each ProbeDuration
// long, until the server's request throughput stops growing.
const (
	// ProbeDuration is how long each probe level keeps sending; it then
	// drains the requests in flight.
	ProbeDuration = 3 * time.Second
	// probeGrowth is the least throughput growth from one probe level to
	// the next (4x the concurrency) that counts as "still growing".
	probeGrowth = 1.2
	// ProbeSearchFactor is the search's bracketing factor (SearchOptions.
	// Factor) when it starts from the probe's estimate: sqrt 2.
	ProbeSearchFactor = math.Sqrt2
)

// probeConcurrency are the probe's concurrency levels, tried in order, and
// probeLevelDuration how long each keeps sending (ProbeDuration; tests
// shorten both).
var (
	probeConcurrency   = []int{32, 128, 512, 2048}
	probeLevelDuration = ProbeDuration
)

// ThroughputProbe is what the closed-loop probe before an adaptive search
// measured and where it started the search. It is written into result.json
// ("throughput_probe") and analysis.md; its requests are not steps (they
// are not in records.jsonl and not in the knee).
type ThroughputProbe struct {
	// Levels are the closed-loop levels run, in order.
	Levels []ProbeLevel `json:"levels"`
	// EstimateReqPerS is the highest request throughput measured: the
	// estimate of the server's capacity for this workload (0 when no level
	// completed a request).
	EstimateReqPerS float64 `json:"estimate_req_per_s"`
	// Saturated is true when the probe saw the server saturate: requests
	// waited in its queue (the engine's waiting gauge, e.g.
	// vllm:num_requests_waiting, above 0) or the throughput
	// grew by less than 20 % when the concurrency was multiplied by 4.
	Saturated bool `json:"saturated"`
	// ClientCeilingReqPerS is the highest throughput of a level, from the
	// first, that the client drove without a flag of its own
	// (ProbeLevel.ClientFlags): an estimate of the rate this client keeps
	// up with on this host. The first level's throughput when even it was
	// flagged (the lowest figure the probe has); 0 when no level completed
	// a request.
	ClientCeilingReqPerS float64 `json:"client_ceiling_req_per_s"`
	// StartRate is the rate the search started from (req/s): the lower of
	// the estimate and the client's ceiling, or --auto-start's default when
	// there is none.
	StartRate float64 `json:"start_rate"`
	// Note says in words why the probe stopped where it did.
	Note string `json:"note"`
}

// ProbeLevel is one closed-loop level of the throughput probe.
type ProbeLevel struct {
	Concurrency int       `json:"concurrency"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	// Requests sent, Completed (successful) and Failed; DurationS from the
	// first send to the end of the last request.
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// FailedByClass counts the failed requests by error class (absent
	// when none failed); Retried counts the requests resent once after a
	// stale connection (Record.Retry), whatever their outcome.
	FailedByClass map[string]int `json:"failed_by_class,omitempty"`
	Retried       int            `json:"retried,omitempty"`
	DurationS     float64        `json:"duration_s"`
	// ThroughputReqPerS is Completed / DurationS (vLLM's
	// request_throughput of a closed loop), MeanE2ELMS the mean latency.
	ThroughputReqPerS float64 `json:"request_throughput"`
	MeanE2ELMS        float64 `json:"mean_e2el_ms"`
	// ClientFlags are the client's own validity flags over the level
	// (client-read-lag: Go's scheduling latency; client-saturated: the
	// process CPU, when checked), judged as a step's (Judge), and
	// SchedLatencyP99MS the scheduling-latency p99; empty flags when the
	// client kept up.
	ClientFlags       []string `json:"client_flags"`
	SchedLatencyP99MS float64  `json:"sched_latency_p99_ms"`
	// MaxWaiting is the most requests the server reported waiting (the
	// engine's waiting gauge: vllm:num_requests_waiting,
	// llamacpp:requests_deferred, ...) during the level; not-recorded
	// without server metrics or when the engine has no such gauge.
	MaxWaiting Figure `json:"max_waiting"`
}

// runProbe runs the throughput probe and returns its result (never nil).
// Its estimate is 0 when no level completed a request; the caller then
// falls back to DefaultAutoStart.
func (r *runner) runProbe(ctx context.Context) *ThroughputProbe {
	p := &ThroughputProbe{}
	seed := stepSeed(r.cfg.shardSeed(), -1, 0)
	items, err := r.buildItems(ctx, seed, -1, 0, false)
	if err != nil {
		p.Note = "the probe's prompts could not be built: " + r.redact(err.Error())
		return p
	}
	level.Info(r.logger).Log("msg", "throughput probe: closed loops of growing concurrency to estimate the capacity",
		"concurrency", fmt.Sprint(probeConcurrency), "each", probeLevelDuration)
	prev := 0.0
	for _, n := range probeConcurrency {
		lv := r.probeLevel(ctx, n, items.measured)
		p.Levels = append(p.Levels, lv)
		level.Info(r.logger).Log("msg", "throughput probe level done", "concurrency", n, "completed", lv.Completed,
			"failed", lv.Failed, "req_per_s", fmt.Sprintf("%.4g", lv.ThroughputReqPerS), "max_waiting", figureText(lv.MaxWaiting))
		if ctx.Err() != nil {
			p.Note = "interrupted"
			return p
		}
		if lv.Requests == 0 || lv.Completed == 0 {
			p.Note = fmt.Sprintf("no request completed at concurrency %d", n)
			break
		}
		p.EstimateReqPerS = math.Max(p.EstimateReqPerS, lv.ThroughputReqPerS)
		if len(p.Levels) == 1 || (len(lv.ClientFlags) == 0 && p.clientOK()) {
			p.ClientCeilingReqPerS = math.Max(p.ClientCeilingReqPerS, lv.ThroughputReqPerS)
		}
		if note, saturated, stop := failureVerdict(lv); stop {
			p.Note, p.Saturated = note, saturated
			break
		}
		if lv.MaxWaiting.Known && lv.MaxWaiting.Value > 0 {
			p.Note = fmt.Sprintf("requests waited in the server's queue at concurrency %d (%s up to %s): its batch was full",
				n, r.waitingName(), figureText(lv.MaxWaiting))
			p.Saturated = true
			break
		}
		if prev > 0 && lv.ThroughputReqPerS < probeGrowth*prev {
			p.Note = fmt.Sprintf("throughput grew by less than %.0f %% from concurrency %d to %d", 100*(probeGrowth-1), n/4, n)
			p.Saturated = true
			break
		}
		prev = lv.ThroughputReqPerS
	}
	if p.Note == "" {
		p.Note = fmt.Sprintf("throughput still grew at concurrency %d, the probe's highest: the estimate is a lower bound", probeConcurrency[len(probeConcurrency)-1])
	}
	return p
}

// clientOK reports whether every level so far kept the client unflagged.
func (p *ThroughputProbe) clientOK() bool {
	for _, l := range p.Levels {
		if len(l.ClientFlags) > 0 {
			return false
		}
	}
	return true
}

// probeLevel runs one closed loop of n workers for ProbeDuration and
// drains it.
func (r *runner) probeLevel(ctx context.Context, n int, items *itemList) ProbeLevel {
	lv := ProbeLevel{Concurrency: n}
	var stopRec func() error
	var rec *scrape.Recorder
	if r.metricsOK && r.idleKnown {
		rec = scrape.NewRecorder(r.http, r.metricsURL, 250*time.Millisecond, io.Discard,
			append(r.scrapeOpts(), scrape.WithGauges(r.eng.RecorderGauges))...)
		stopRec = rec.Start(ctx)
	}
	var mu sync.Mutex
	var recs []prober.Record
	cpu0, cpuOK := proccpu.Used()
	sched0 := schedlat.Read()
	t0 := time.Now()
	lv.Start = t0.UTC()
	sched, err := schedule.New(schedule.Config{Start: t0, Mode: schedule.Closed, Workers: n, Duration: probeLevelDuration},
		func(ctx context.Context, scheduled time.Time, _ time.Duration) {
			i, _ := schedule.Index(ctx)
			it, err := items.get(ctx, int(i))
			rc := prober.Record{Model: r.model, Scheduled: scheduled,
				RequestID: fmt.Sprintf("llmprobe-%s-probe-%d-%d", r.runID, n, i)}
			if err != nil {
				rc.Error, rc.ErrorMessage = prober.ClassCanceled, "building the prompt: "+err.Error()
			} else {
				r.client.Do(ctx, r.request(rc.RequestID, it), &rc)
			}
			mu.Lock()
			recs = append(recs, rc)
			mu.Unlock()
		})
	if err == nil {
		if _, err := sched.Run(ctx); err != nil {
			level.Warn(r.logger).Log("msg", "throughput probe schedule", "err", r.redact(err.Error()))
		}
	}
	dur := time.Since(t0)
	lv.End = time.Now().UTC()
	cpu1, cpuOK1 := proccpu.Used()
	vo := r.validityOptions()
	var st Stats
	st.schedLat = schedFigureOf(schedlat.Read().Sub(sched0), vo.withDefaults().MaxSchedLatency)
	cores := -1.0
	if cpuOK && cpuOK1 && dur > 0 {
		cores = float64(cpu1-cpu0) / float64(dur)
	}
	v := Judge(st, cores, IdleProof{}, false, vo)
	lv.ClientFlags, lv.SchedLatencyP99MS = v.Flags, v.SchedLatencyP99MS
	if stopRec != nil {
		_ = stopRec()
		if v, ok := rec.Max()[string(engine.Waiting)]; ok {
			lv.MaxWaiting = knownFigure(v, true)
		}
	}
	lv.Requests = len(recs)
	lv.DurationS = dur.Seconds()
	var e2e float64
	for i := range recs {
		if recs[i].Retry != prober.RetryNone {
			lv.Retried++
		}
		if recs[i].OK() {
			lv.Completed++
			e2e += ms(recs[i].E2E)
			continue
		}
		lv.Failed++
		if lv.FailedByClass == nil {
			lv.FailedByClass = map[string]int{}
		}
		lv.FailedByClass[string(recs[i].Error)]++
	}
	if lv.Completed > 0 {
		lv.MeanE2ELMS = e2e / float64(lv.Completed)
	}
	if lv.DurationS > 0 {
		lv.ThroughputReqPerS = float64(lv.Completed) / lv.DurationS
	}
	return lv
}

// loadClasses are the failure classes that say a server refuses more
// load: it rate-limits (429), fails under load (5xx) or does not answer in
// time (timeouts, stalls). A failed connection, a cut or malformed stream,
// a 4xx or a response of the wrong shape says something about the
// connection or the server's answers, not that its capacity is reached: a
// server that closes kept-alive connections (issue 22 V8) fails requests at
// any load.
var loadClasses = []prober.ErrorClass{prober.ClassHTTP429, prober.ClassHTTP5xx, prober.ClassTimeout,
	prober.ClassTTFTTimeout, prober.ClassStall}

// failureVerdict reads a probe level's failures: stop when more than
// DefaultMaxErrorRate of its requests failed, saturated only when the
// failures in loadClasses alone are that many; the note names the classes
// seen.
func failureVerdict(lv ProbeLevel) (note string, saturated, stop bool) {
	limit := DefaultMaxErrorRate * float64(lv.Requests)
	if float64(lv.Failed) <= limit {
		return "", false, false
	}
	load := 0
	for _, c := range loadClasses {
		load += lv.FailedByClass[string(c)]
	}
	classes := classCounts(lv.FailedByClass)
	if float64(load) > limit {
		return fmt.Sprintf("%d of %d requests failed at concurrency %d (%s): the server refuses more load",
			lv.Failed, lv.Requests, lv.Concurrency, classes), true, true
	}
	return fmt.Sprintf("%d of %d requests failed at concurrency %d (%s): failures that do not say the server is full "+
		"(the connection or its answers, not its capacity), so the probe stopped without calling it saturated; "+
		"the estimate is a lower bound", lv.Failed, lv.Requests, lv.Concurrency, classes), false, true
}

// classCounts formats failures by class, "connect 12, http_429 3", in the
// order of prober.ErrorClasses.
func classCounts(by map[string]int) string {
	var parts []string
	for _, c := range prober.ErrorClasses {
		if n := by[string(c)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// waitingName names the engine's waiting-requests gauge (the first the
// adapter tries), for the probe's note.
func (r *runner) waitingName() string {
	if src := r.eng.Source(engine.Waiting); len(src) > 0 {
		return src[0]
	}
	return r.eng.String() + "'s waiting requests"
}

// figureText formats a Figure for logs and text: the number or
// "not-recorded".
func figureText(f Figure) string {
	if !f.Known {
		return "not-recorded"
	}
	return fmt.Sprintf("%.4g", f.Value)
}

// buildItems builds a step's prompts (promptSource.items) but stops waiting
// when ctx ends: prompt building can be slow (many /tokenize calls for long
// prompts), and an interrupted sweep must write what it has at once rather
// than wait for it. The builder then ends on its own (its calls see ctx).
func (r *runner) buildItems(ctx context.Context, seed uint64, n, warmups int, burst bool) (stepItems, error) {
	type built struct {
		it  stepItems
		err error
	}
	ch := make(chan built, 1)
	go func() {
		it, err := r.prompts.items(ctx, seed, n, warmups, burst)
		ch <- built{it, err}
	}()
	select {
	case b := <-ch:
		return b.it, b.err
	case <-ctx.Done():
		return stepItems{}, ctx.Err()
	}
}
