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
		retries:       counter(NameRetries, helpRetries, "reason"),
		cachedTokens:  counter(NamePromptCachedTokens, helpPromptCachedTokens),
		cacheRequests: counter(NamePromptCacheRequests, helpPromptCacheRequests, "result"),
		probes:        map[probeKey]*probeMetrics{},
		info:          map[string]prometheus.Labels{},
		labels:        map[string]map[string]string{},
		answers:       newAnswerVecs(),
		backends:      counter(NameBackendRequests, helpBackendRequests, "backend", "outcome"),
		sessionTurns:  counter(NameSessionTurns, helpSessionTurns, "result", "cache"),
		phases:        newPhases(histConst),
		serverTiming:  newServerTiming(hist),
	}
	if reg != nil {
		reg.MustRegister(m, targetLabels{m}, targetCost{m})
	}
	return m
}

// Describe implements prometheus.Collector. New registers m already.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range m.probeVecs() {
		v.Describe(ch)
	}
	m.targetInfo.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, v := range m.probeVecs() {
		v.Collect(ch)
	}
	m.targetInfo.Collect(ch)
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
