// Package probemetrics owns llmprobe's own Prometheus metrics: the latency
// histograms, request/goodput/token counters and gauges that the continuous
// prober exports for every (target, probe) pair, fed from prober.Records.
//
// Every metric carries the labels target and probe; there is no per-request
// model label (the model is a property of the target and is exported once by
// llmprobe_target_info, so joining on target adds it where needed). Request
// ids never become labels: they are attached to latency observations as
// exemplars ({request_id="..."}). docs/metrics.md is the reference for names,
// units, buckets and semantics.
//
// The package only observes; it never decides. The caller evaluates the SLO
// and passes the verdict to Observe. Metrics implements manager.Observer and
// every optional observer interface of the manager (skips, arrivals, probe
// and target starts and stops): internal/daemon hands it to the probe manager,
// which does not import this package.
package probemetrics

import (
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// Metrics is what the probe manager reports to: every event it has.
var (
	_ manager.Observer        = (*Metrics)(nil)
	_ manager.SkipObserver    = (*Metrics)(nil)
	_ manager.ArrivalObserver = (*Metrics)(nil)
	_ manager.ProbeObserver   = (*Metrics)(nil)
	_ manager.TargetObserver  = (*Metrics)(nil)
)

// Metric family names exported by this package. Histogram families expose
// the series <name>_bucket, <name>_sum and <name>_count (plus native buckets
// in the protobuf exposition).
const (
	NameTTFT           = "llmprobe_time_to_first_token_seconds"
	NameTTFC           = "llmprobe_time_to_first_content_seconds"
	NameITL            = "llmprobe_inter_token_latency_seconds"
	NameTPOT           = "llmprobe_time_per_output_token_seconds"
	NameE2E            = "llmprobe_e2e_request_latency_seconds"
	NameSendLag        = "llmprobe_request_send_lag_seconds"
	NameRequests       = "llmprobe_requests_total"
	NameGoodRequests   = "llmprobe_good_requests_total"
	NameSLOViolations  = "llmprobe_slo_violations_total"
	NameSkipped        = "llmprobe_requests_skipped_total"
	NamePromptTokens   = "llmprobe_prompt_tokens_total"
	NameGenTokens      = "llmprobe_generation_tokens_total"
	NameInFlight       = "llmprobe_requests_in_flight"
	NameSLOThreshold   = "llmprobe_slo_threshold_seconds"
	NameTargetInfo     = "llmprobe_target_info"
	NameTargetLabels   = "llmprobe_target_labels"
	NameArrivalRate    = "llmprobe_probe_arrival_rate"
	NameLastArrival    = "llmprobe_probe_last_arrival_timestamp_seconds"
	NameObjective      = "llmprobe_goodput_objective_ratio"
	NameReasoningTok   = "llmprobe_reasoning_tokens"
	NameThinkingTime   = "llmprobe_thinking_time_seconds"
	exemplarLabel      = "request_id"
	exemplarValueLimit = prometheus.ExemplarMaxRunes - len(exemplarLabel)
	// traceLabel is the exemplar label of Record.TraceID: the name
	// Grafana's exemplar links to a trace data source read by default.
	traceLabel = "trace_id"
	// traceIDLen is a W3C trace id's length in hex digits.
	traceIDLen = 32
)

// SLONames lists the values of the slo label of llmprobe_slo_violations_total
// and llmprobe_slo_threshold_seconds in a stable order: prober/slo's names
// (vllm bench serve's --goodput keys), indexed by slo.Kind.
var SLONames = slo.Names

// The values of the reason label of llmprobe_requests_skipped_total: the
// probe manager's skip reasons.
const (
	// SkipMaxConcurrency: the probe's max_concurrency in-flight cap was full.
	SkipMaxConcurrency = manager.SkipMaxConcurrency
	// SkipTooLong: the drawn prompt + output tokens exceed the served
	// model's max_model_len (the probe's config, not a server failure).
	SkipTooLong = manager.SkipTooLong
)

// SkipReasons lists the skip reasons that Init pre-creates (every
// manager.SkipReason).
var SkipReasons = manager.SkipReasons

// Names returns every metric family name this package exports, in a stable
// order. Histogram families are listed by their base name (their series add
// _bucket, _sum and _count).
func Names() []string {
	return []string{
		NameTTFT, NameTTFC, NameITL, NameTPOT, NameE2E, NameSendLag,
		NameRequests, NameGoodRequests, NameSLOViolations, NameSkipped,
		NamePromptTokens, NameGenTokens,
		NameInFlight, NameSLOThreshold, NameTargetInfo, NameTargetLabels,
		NameArrivalRate, NameLastArrival, NameObjective, NameTargetCost, NameRetries, NameBackendRequests, NamePhase,
		NamePromptCachedTokens, NamePromptCacheRequests, NameSessionTurns,
		NameAnswerChecks, NameAnswerLastPass,
		NameReasoningTok, NameThinkingTime,
		NameServerQueue, NameServerTTFT, NameTTFTOverhead, NameTTFTOverheadNegative,
	}
}

// outcomes is "success" followed by every error class, the order of
// probeMetrics.requests.
var outcomes = func() []string {
	o := []string{prober.OutcomeSuccess}
	for _, c := range prober.ErrorClasses {
		o = append(o, string(c))
	}
	return o
}()

// outcomeIndex maps an error class to its index in outcomes; ClassNone is 0.
var outcomeIndex = func() map[prober.ErrorClass]int {
	m := map[prober.ErrorClass]int{prober.ClassNone: 0}
	for i, c := range prober.ErrorClasses {
		m[c] = i + 1
	}
	return m
}()

// Metrics holds llmprobe's probe metrics and is the prometheus.Collector
// that exports them. Create it with New. All methods are safe for concurrent
// use.
type Metrics struct {
	ttft, ttfc, itl, tpot, e2e, sendLag *prometheus.HistogramVec
	// reasoningTok and thinking observe the successful streamed requests
	// that reasoned; their series appear with the first such request.
	reasoningTok, thinking *prometheus.HistogramVec
	phases                 []*prometheus.HistogramVec // indexed like prober.Phases (phases.go)
	serverTiming           serverTimingVecs           // servertiming.go

	requests      *prometheus.CounterVec
	good          *prometheus.CounterVec
	sloViolations *prometheus.CounterVec
	skipped       *prometheus.CounterVec
	promptTokens  *prometheus.CounterVec
	genTokens     *prometheus.CounterVec
	retries       *prometheus.CounterVec // retries.go
	cachedTokens  *prometheus.CounterVec // cache.go
	cacheRequests *prometheus.CounterVec // cache.go
	backends      *prometheus.CounterVec // backend.go
	sessionTurns  *prometheus.CounterVec // session.go

	inFlight     *prometheus.GaugeVec
	sloThreshold *prometheus.GaugeVec
	targetInfo   *prometheus.GaugeVec
	arrivalRate  *prometheus.GaugeVec
	lastArrival  *prometheus.GaugeVec
	objective    *prometheus.GaugeVec
	answers      answerVecs // answers.go

	mu     sync.RWMutex
	probes map[probeKey]*probeMetrics
	info   map[string]prometheus.Labels // target -> labels of its info series
	// labels holds the static labels of each target that has some; the
	// targetLabels collector exports them.
	labels map[string]map[string]string
	// costs holds each priced target's cost_per_hour; the targetCost
	// collector exports them (cost.go).
	costs map[string]float64
}

type probeKey struct{ target, probe string }

// probeMetrics caches the labelled children of one (target, probe) so the
// per-request path does no label lookups.
type probeMetrics struct {
	ttft, ttfc, itl, tpot, e2e, sendLag exemplarObserver
	phases                              []exemplarObserver // indexed like prober.Phases

	requests []prometheus.Counter // indexed like outcomes
	good     prometheus.Counter
	slo      []prometheus.Counter // indexed like SLONames
	skipped  map[manager.SkipReason]prometheus.Counter
	prompt   prometheus.Counter
	gen      prometheus.Counter
	inFlight prometheus.Gauge
	retries  []prometheus.Counter // indexed like RetryReasons
	// cache is nil until the probe's first response that reports cached
	// prompt tokens (cache.go).
	cache atomic.Pointer[cacheCounters]
	// session is nil until the probe's first later turn of a session
	// (session.go).
	session atomic.Pointer[sessionCounters]
	// server is nil until the probe's first response that reports the
	// server's per-request timing (servertiming.go).
	server atomic.Pointer[serverTimingObservers]
}

// exemplarObserver is what client_golang's histogram children implement.
type exemplarObserver interface {
	prometheus.Observer
	prometheus.ExemplarObserver
}

// New creates the metrics and registers them with reg (never the global
// default registry unless the caller passes it). A nil reg creates
// unregistered metrics (benchmarks). New panics if registration fails, e.g.
// when the metrics are already registered with reg.
func New(reg prometheus.Registerer) *Metrics {
	pl := []string{"target", "probe"}
	histConst := func(name, help string, buckets []float64, constLabels prometheus.Labels) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            name,
			Help:                            help,
			ConstLabels:                     constLabels,
			Buckets:                         buckets,
			NativeHistogramBucketFactor:     nativeBucketFactor,
			NativeHistogramMaxBucketNumber:  nativeMaxBucketCount,
			NativeHistogramMinResetDuration: nativeMinReset * time.Second,
		}, pl)
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return histConst(name, help, buckets, nil)
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(pl[:2:2], extra...))
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		ttft: hist(NameTTFT, "Time from sending a request to the first streamed event with a non-empty choices array "+
			"(vllm bench serve's TTFT), successful requests only.", TTFTBuckets),
		ttfc: hist(NameTTFC, "Time from sending a request to the first streamed event with non-empty text or content "+
			"(chat's role-only chunk does not count), successful requests that streamed text only.", TTFTBuckets),
		itl: hist(NameITL, "Gaps between consecutive token-bearing streamed events (one observation per gap), "+
			"successful requests only.", DecodeLatencyBuckets),
		tpot: hist(NameTPOT, "Time per output token after the first, (e2e - ttft) / (output_tokens - 1), "+
			"successful requests with more than one output token only.", DecodeLatencyBuckets),
		e2e: hist(NameE2E, "Time from sending a request to its last token-bearing streamed event, "+
			"successful requests only.", RequestLatencyBuckets),
		reasoningTok: hist(NameReasoningTok, "Reasoning tokens of a response (usage.completion_tokens_details."+
			"reasoning_tokens, else counted reasoning deltas), successful streamed requests that reasoned only.",
			ReasoningTokenBuckets),
		thinking: hist(NameThinkingTime, "Time from a response's first reasoning token to its first answer token "+
			"(content or a tool call; the last reasoning token when none came), successful streamed requests that "+
			"reasoned only.", TTFTBuckets),
		sendLag: hist(NameSendLag, "How late a request was sent compared with its scheduled arrival time "+
			"(client saturation), every sent request (not those that failed before sending).", SendLagBuckets),
		requests: counter(NameRequests, "Requests sent and finished, by outcome: success or the error class.",
			"outcome"),
		good: counter(NameGoodRequests, "Successful requests that met every configured SLO (goodput)."),
		sloViolations: counter(NameSLOViolations, "Requests that violated a configured SLO, by SLO "+
			"(ttft, tpot, e2el, ttfa); a request can violate several.", "slo"),
		skipped: counter(NameSkipped, "Scheduled arrivals that were not sent, by reason.", "reason"),
		promptTokens: counter(NamePromptTokens, "Prompt tokens reported by the server (usage.prompt_tokens) "+
			"over finished requests of any outcome."),
		genTokens: counter(NameGenTokens, "Output tokens received (usage.completion_tokens, else counted "+
			"token events) over finished requests of any outcome."),
		inFlight: gauge(NameInFlight, "Requests sent and not yet finished.", "target", "probe"),
		sloThreshold: gauge(NameSLOThreshold, "Configured SLO threshold per SLO; absent when the SLO is not set.",
			"target", "probe", "slo"),
		targetInfo: gauge(NameTargetInfo, "Target information from discovery (/v1/models, the engine's version "+
			"and info endpoints) and the host:port of the server's /metrics (server_instance, the join to the "+
			"server's own series); value 1.",
			"target", "server_version", "model", "max_model_len", "engine", "server_instance"),
		arrivalRate: gauge(NameArrivalRate, "Configured mean arrival rate of the probe in requests per second.",
			"target", "probe"),
		lastArrival: gauge(NameLastArrival, "Unix time of the probe's last scheduled arrival, sent or skipped "+
			"(the probe's start time until its first arrival).", "target", "probe"),
		objective: gauge(NameObjective, "Configured goodput objective: the share of requests that must be good.",
			"target", "probe"),
		retries:       newRetries(),
		cachedTokens:  newCachedTokens(),
		cacheRequests: newCacheRequests(),
		probes:        map[probeKey]*probeMetrics{},
		info:          map[string]prometheus.Labels{},
		labels:        map[string]map[string]string{},
		answers:       newAnswerVecs(),
		backends:      newBackendRequests(),
		sessionTurns:  newSessionTurns(),
		phases:        newPhases(histConst),
		serverTiming:  newServerTiming(hist),
	}
	if reg != nil {
		reg.MustRegister(m, targetLabels{m}, targetCost{m})
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{
		m.ttft, m.ttfc, m.itl, m.tpot, m.e2e, m.sendLag, m.reasoningTok, m.thinking,
		m.requests, m.good, m.sloViolations, m.skipped, m.promptTokens, m.genTokens, m.retries,
		m.cachedTokens, m.cacheRequests, m.backends, m.sessionTurns,
		m.inFlight, m.sloThreshold, m.targetInfo,
		m.arrivalRate, m.lastArrival, m.objective,
		m.answers.checks, m.answers.lastPass,
		m.serverTiming.queue, m.serverTiming.ttft, m.serverTiming.overhead, m.serverTiming.negative,
	}
	for _, v := range m.phases {
		cs = append(cs, v)
	}
	return cs
}

// Describe implements prometheus.Collector. New registers m already.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// Init creates every series of a (target, probe) with value zero — each
// outcome of llmprobe_requests_total, each SLO of
// llmprobe_slo_violations_total, each reason in SkipReasons, the token and
// goodput counters, the in-flight gauge and empty histograms — so that
// rate() and absent() work from the first scrape. Calling it again is a
// no-op. Observe, InFlight and Skipped call it implicitly.
func (m *Metrics) Init(target, probe string) {
	m.probe(target, probe)
}

// probe returns the cached children of (target, probe), creating them on
// first use.
func (m *Metrics) probe(target, probe string) *probeMetrics {
	k := probeKey{target, probe}
	m.mu.RLock()
	pm := m.probes[k]
	m.mu.RUnlock()
	if pm != nil {
		return pm
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if pm = m.probes[k]; pm != nil {
		return pm
	}
	obs := func(v *prometheus.HistogramVec) exemplarObserver {
		return v.WithLabelValues(target, probe).(exemplarObserver)
	}
	pm = &probeMetrics{
		ttft:     obs(m.ttft),
		ttfc:     obs(m.ttfc),
		itl:      obs(m.itl),
		tpot:     obs(m.tpot),
		e2e:      obs(m.e2e),
		sendLag:  obs(m.sendLag),
		requests: make([]prometheus.Counter, len(outcomes)),
		good:     m.good.WithLabelValues(target, probe),
		slo:      make([]prometheus.Counter, len(SLONames)),
		skipped:  make(map[manager.SkipReason]prometheus.Counter, len(SkipReasons)),
		prompt:   m.promptTokens.WithLabelValues(target, probe),
		gen:      m.genTokens.WithLabelValues(target, probe),
		inFlight: m.inFlight.WithLabelValues(target, probe),
		retries:  m.retryCounters(target, probe),
		phases:   make([]exemplarObserver, len(m.phases)),
	}
	for i, v := range m.phases {
		pm.phases[i] = obs(v)
	}
	for i, o := range outcomes {
		pm.requests[i] = m.requests.WithLabelValues(target, probe, o)
	}
	for i, s := range SLONames {
		pm.slo[i] = m.sloViolations.WithLabelValues(target, probe, s)
	}
	for _, r := range SkipReasons {
		pm.skipped[r] = m.skipped.WithLabelValues(target, probe, string(r))
	}
	m.probes[k] = pm
	return pm
}

// Observe records one finished request with the caller's SLO verdict: v.Good
// says whether it met every configured SLO, v.Violated which SLOs it broke.
//
// Every Record counts once in llmprobe_requests_total{outcome}, adds its
// token counts and observes its send lag (negative lags count as 0). The
// latency histograms (TTFT, ITL, TPOT, E2E) observe successful requests
// only: a failed request's partial timings would mix failure modes into
// latency quantiles; a non-streamed request (Record.NoStream) observes E2E
// only. The content TTFT (Record.TTFTText) is observed for
// successful requests that streamed some text. Observations carry the request id (and the trace id of a traced
// request, trace_id) as an exemplar; for
// ITL only the request's largest gap does.
func (m *Metrics) Observe(r *prober.Record, v slo.Verdict) {
	pm := m.probe(r.Target, r.Probe)

	var ex prometheus.Labels
	// An exemplar's labels hold at most 128 runes, names included: the
	// trace id (40 with its name) goes first, the request id when it fits
	// in what is left.
	hasTrace := len(r.TraceID) == traceIDLen
	idLimit := exemplarValueLimit
	if hasTrace {
		idLimit -= len(traceLabel) + traceIDLen
	}
	hasID := r.RequestID != "" && len(r.RequestID) <= idLimit && utf8.ValidString(r.RequestID)
	if hasID || hasTrace {
		// One label map for the request's exemplars, reused across
		// requests: client_golang copies the pairs into each exemplar.
		ex = exemplarLabels.Get().(prometheus.Labels)
		clear(ex)
		if hasID {
			ex[exemplarLabel] = r.RequestID
		}
		if hasTrace {
			ex[traceLabel] = r.TraceID
		}
		defer exemplarLabels.Put(ex)
	}
	if !r.NotSent {
		observe(pm.sendLag, max(r.SendLag, 0), ex)
		observePhases(pm, r, ex)
	}

	if i, ok := outcomeIndex[r.Error]; ok {
		pm.requests[i].Inc()
	} else {
		m.requests.WithLabelValues(r.Target, r.Probe, r.Outcome()).Inc()
	}
	m.observeRetry(pm, r)
	m.observeCache(pm, r)
	m.observeServerTiming(pm, r, ex)
	m.observeBackend(r)
	m.observeSession(pm, r)
	if r.PromptTokens > 0 {
		pm.prompt.Add(float64(r.PromptTokens))
	}
	if r.CompletionTokens > 0 {
		pm.gen.Add(float64(r.CompletionTokens))
	}

	if r.OK() && !r.NoStream {
		observe(pm.ttft, r.TTFT, ex)
		if r.TTFTText > 0 {
			observe(pm.ttfc, r.TTFTText, ex)
		}
		if tpot, ok := r.TPOT(); ok {
			observe(pm.tpot, tpot, ex)
		}
		if r.Reasoned() {
			m.observeReasoning(r, ex)
		}
		maxi := -1
		for i, gap := range r.ITL {
			if maxi < 0 || gap > r.ITL[maxi] {
				maxi = i
			}
		}
		for i, gap := range r.ITL {
			if i == maxi {
				observe(pm.itl, gap, ex)
			} else {
				pm.itl.Observe(gap.Seconds())
			}
		}
	}

	if r.OK() {
		observe(pm.e2e, r.E2E, ex)
	}
	if v.Good {
		pm.good.Inc()
	}
	if v.Violated != 0 {
		for _, k := range slo.Kinds {
			if v.Violated.Has(k) {
				pm.slo[k].Inc()
			}
		}
	}
}

// observeReasoning observes the reasoning tokens and thinking time of a
// successful streamed request that reasoned (a label lookup per such
// request: their series exist only where some request reasoned).
func (m *Metrics) observeReasoning(r *prober.Record, ex prometheus.Labels) {
	tok := m.reasoningTok.WithLabelValues(r.Target, r.Probe).(exemplarObserver)
	if ex != nil {
		tok.ObserveWithExemplar(float64(r.ReasoningTokens), ex)
	} else {
		tok.Observe(float64(r.ReasoningTokens))
	}
	if r.TTFR > 0 {
		observe(m.thinking.WithLabelValues(r.Target, r.Probe).(exemplarObserver), r.ThinkingTime, ex)
	}
}

// exemplarLabels recycles the {request_id, trace_id} maps of Observe.
var exemplarLabels = sync.Pool{New: func() any { return make(prometheus.Labels, 2) }}

func observe(o exemplarObserver, d time.Duration, ex prometheus.Labels) {
	if ex == nil {
		o.Observe(d.Seconds())
		return
	}
	o.ObserveWithExemplar(d.Seconds(), ex)
}

// InFlight adds delta to the llmprobe_requests_in_flight gauge of (target,
// probe): +1 when a request starts, -1 when it finished.
func (m *Metrics) InFlight(target, probe string, delta int) {
	m.probe(target, probe).inFlight.Add(float64(delta))
}

// Skipped counts one scheduled arrival of (target, probe) that was not sent.
// reason should be one of SkipReasons; other values create a new series and
// must come from a small fixed set.
func (m *Metrics) Skipped(target, probe string, reason manager.SkipReason) {
	pm := m.probe(target, probe)
	if c, ok := pm.skipped[reason]; ok {
		c.Inc()
		return
	}
	m.skipped.WithLabelValues(target, probe, string(reason)).Inc()
}

// ProbeStarted initialises the series of (target, probe) (Init) and exports
// its settings: SLO thresholds, goodput objective, arrival rate, and its
// start as its last arrival.
func (m *Metrics) ProbeStarted(target, probe string, s manager.ProbeSettings) {
	m.Init(target, probe)
	m.SLOChanged(target, probe, s.SLO, s.GoodputObjective)
	m.SetProbeRate(target, probe, s.Rate)
	m.SetLastArrival(target, probe, s.Start)
	m.initAnswerChecks(target, probe, s.AnswerChecks)
}

// SLOChanged exports new SLO thresholds and goodput objective of (target,
// probe) (SetSLO, SetGoodputObjective).
func (m *Metrics) SLOChanged(target, probe string, s slo.SLO, goodputObjective float64) {
	m.SetSLO(target, probe, s.TTFT, s.TPOT, s.E2EL)
	m.setThreshold(target, probe, slo.NameTTFA, s.TTFA)
	m.SetGoodputObjective(target, probe, goodputObjective)
}

// SetSLO exports the SLO thresholds of (target, probe) as
// llmprobe_slo_threshold_seconds{slo}. A zero (or negative) duration means
// the SLO is not set: its series is deleted.
func (m *Metrics) SetSLO(target, probe string, ttft, tpot, e2el time.Duration) {
	for i, d := range []time.Duration{ttft, tpot, e2el} {
		m.setThreshold(target, probe, SLONames[i], d)
	}
}

// setThreshold sets (d > 0) or deletes the threshold series of one SLO.
func (m *Metrics) setThreshold(target, probe, name string, d time.Duration) {
	if d <= 0 {
		m.sloThreshold.DeleteLabelValues(target, probe, name)
		return
	}
	m.sloThreshold.WithLabelValues(target, probe, name).Set(d.Seconds())
}

// SetProbeRate exports the configured mean arrival rate of (target, probe)
// in requests per second as llmprobe_probe_arrival_rate. A rate that is not
// positive and finite deletes the series. Call it when the probe starts; the
// alert on a probe that stopped scheduling reads it.
func (m *Metrics) SetProbeRate(target, probe string, rate float64) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		m.arrivalRate.DeleteLabelValues(target, probe)
		return
	}
	m.arrivalRate.WithLabelValues(target, probe).Set(rate)
}

// SetLastArrival sets llmprobe_probe_last_arrival_timestamp_seconds of
// (target, probe) to at (Unix time). Call it for every scheduled arrival,
// sent or skipped, and once with the start time when the probe starts. It is
// a label lookup and a gauge Set: cheap enough for every arrival. Concurrent
// calls for one probe may land out of order by the few microseconds between
// them.
func (m *Metrics) SetLastArrival(target, probe string, at time.Time) {
	m.lastArrival.WithLabelValues(target, probe).Set(float64(at.Unix()) + float64(at.Nanosecond())/1e9)
}

// SetGoodputObjective exports the goodput objective of (target, probe), the
// share of requests that must be good (0 < objective < 1), as
// llmprobe_goodput_objective_ratio. The burn-rate rules divide by
// 1 - objective. A value outside (0, 1) deletes the series.
func (m *Metrics) SetGoodputObjective(target, probe string, objective float64) {
	if !(objective > 0 && objective < 1) {
		m.objective.DeleteLabelValues(target, probe)
		return
	}
	m.objective.WithLabelValues(target, probe).Set(objective)
}

// SetTargetInfo sets llmprobe_target_info for target to 1 with the labels
// of info (server_version, model, max_model_len, engine, server_instance),
// replacing the target's previous info series. Empty values are exported as
// empty labels (that is, absent in PromQL).
func (m *Metrics) SetTargetInfo(target string, info manager.TargetInfo) {
	l := prometheus.Labels{
		"target": target, "server_version": info.ServerVersion, "model": info.Model,
		"max_model_len": info.MaxModelLen, "engine": info.Engine, "server_instance": info.ServerInstance,
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.info[target]; ok {
		m.targetInfo.Delete(old)
	}
	m.targetInfo.With(l).Set(1)
	m.info[target] = l
}

// SetTargetLabels sets llmprobe_target_labels for target: one series, value
// 1, with the target label and the target's static labels from the
// configuration (config.TargetConfig.Labels), replacing its previous series;
// no labels remove it. The histograms never carry these labels: rules join
// them on target. m keeps its own copy of labels.
func (m *Metrics) SetTargetLabels(target string, labels map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(labels) == 0 {
		delete(m.labels, target)
		return
	}
	m.labels[target] = maps.Clone(labels)
}

// targetLabels exports llmprobe_target_labels. Its label names differ from
// target to target, so it is an unchecked collector (Describe sends
// nothing), registered beside Metrics by New.
type targetLabels struct{ m *Metrics }

// Describe implements prometheus.Collector: nothing (unchecked).
func (targetLabels) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector: one series per target with
// static labels, in target order.
func (c targetLabels) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	for _, target := range slices.Sorted(maps.Keys(c.m.labels)) {
		l := prometheus.Labels{"target": target}
		maps.Copy(l, c.m.labels[target])
		d := prometheus.NewDesc(NameTargetLabels, "Static labels of the target from the configuration "+
			"(targets[].labels, e.g. canary and role), for rules to join on target; value 1.", nil, l)
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, 1)
	}
}

// DeleteProbe removes every series of (target, probe), for a probe removed
// by a config reload. Call it after the probe's in-flight requests have
// been observed: a later Observe re-creates the series.
func (m *Metrics) DeleteProbe(target, probe string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.probes, probeKey{target, probe})
	match := prometheus.Labels{"target": target, "probe": probe}
	for _, v := range m.probeVecs() {
		v.DeletePartialMatch(match)
	}
}

// DeleteTarget removes every series of target (all its probes and its info
// series), for a target removed by a config reload.
func (m *Metrics) DeleteTarget(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.probes {
		if k.target == target {
			delete(m.probes, k)
		}
	}
	delete(m.info, target)
	delete(m.labels, target)
	delete(m.costs, target)
	match := prometheus.Labels{"target": target}
	for _, v := range m.probeVecs() {
		v.DeletePartialMatch(match)
	}
	m.targetInfo.DeletePartialMatch(match)
}

// partialDeleter is the part of the *Vec types DeleteProbe needs.
type partialDeleter interface {
	DeletePartialMatch(prometheus.Labels) int
}

func (m *Metrics) probeVecs() []partialDeleter {
	ds := []partialDeleter{
		m.ttft, m.ttfc, m.itl, m.tpot, m.e2e, m.sendLag, m.reasoningTok, m.thinking,
		m.requests, m.good, m.sloViolations, m.skipped, m.promptTokens, m.genTokens, m.retries,
		m.cachedTokens, m.cacheRequests, m.backends, m.sessionTurns,
		m.inFlight, m.sloThreshold,
		m.arrivalRate, m.lastArrival, m.objective,
		m.answers.checks, m.answers.lastPass,
		m.serverTiming.queue, m.serverTiming.ttft, m.serverTiming.overhead, m.serverTiming.negative,
	}
	for _, v := range m.phases {
		ds = append(ds, v)
	}
	return ds
}
