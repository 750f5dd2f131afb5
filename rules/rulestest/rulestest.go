// Package rulestest builds, for tests of rules and dashboards, the Catalog of
// every metric name a query may read: the names llmprobe's daemon really
// exports (gathered from registries built the way `llmprobe serve` builds
// them), the outputs of the recording rules in rules/, vLLM's and the other
// engines' documented metrics and Prometheus' own series. It is meant for tests only.
package rulestest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/rules"
)

// SourceLLMProbe is the Catalog source of llmprobe's own metrics.
const SourceLLMProbe = "llmprobe"

// LLMProbeRegistry returns a registry with llmprobe's daemon metrics as
// `llmprobe serve` registers them (probe metrics, sweep metrics, config reload gauges, the
// client's sched latency, and
// the self-metrics: llmprobe_build_info, go_*, process_*), with one probe
// initialised, its SLOs, goodput objective, rate, last arrival and target
// info set as the probe manager sets them, so that every labelled family has
// a series and is gathered.
func LLMProbeRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	pm := probemetrics.New(reg)
	// The events the probe manager's observers get when a target and its
	// probe start and discovery answers.
	var probes manager.ProbeObserver = pm
	var targets manager.TargetObserver = pm
	targets.SetTargetLabels("t", map[string]string{"canary": "c", "role": "baseline"})
	probes.ProbeStarted("t", "p", manager.ProbeSettings{Rate: 1, GoodputObjective: config.DefaultGoodputObjective, Start: time.Now(),
		SLO: slo.SLO{TTFT: 800 * time.Millisecond, TPOT: 50 * time.Millisecond, E2EL: 10 * time.Second}})
	// An answer-check probe and one judged check (pass: the last-pass gauge).
	probes.ProbeStarted("t", "a", manager.ProbeSettings{Rate: 0.1, GoodputObjective: config.DefaultGoodputObjective, Start: time.Now(),
		AnswerChecks: []string{"c"}})
	var answers manager.AnswerObserver = pm
	answers.AnswerChecked("t", "a", answer.Result{Check: "c", Outcome: answer.Pass, Time: time.Now()})
	targets.SetTargetInfo("t", manager.TargetInfo{ServerVersion: "v", Model: "m", MaxModelLen: "4096", Engine: "vllm", ServerInstance: "vllm:8000"})
	pm.SetTargetCosts(map[string]float64{"t": 1})
	// A response that reported cached prompt tokens: the per-request
	// prefix-cache counters exist from the first one on.
	pm.Observe(&prober.Record{Target: "t", Probe: "p", HTTPStatus: 200, CachedTokens: 1, CachedTokensReported: true}, slo.Verdict{})
	// A request of a target with attribution_headers: its backend counter
	// exists only once one was observed.
	pm.Observe(&prober.Record{Target: "t", Probe: "p", Backend: "b"}, slo.Verdict{})
	// A later turn of a multi-turn session: the session-turn counters
	// exist from the first one on.
	pm.Observe(&prober.Record{Target: "t", Probe: "p", Turn: 2, SessionReplica: prober.SessionSameReplica}, slo.Verdict{})
	// The reasoning histograms appear with the first request that reasoned.
	pm.Observe(&prober.Record{Target: "t", Probe: "p", TTFT: time.Millisecond, TTFR: time.Millisecond,
		ThinkingTime: time.Millisecond, TTFTText: 2 * time.Millisecond, E2E: 3 * time.Millisecond, ReasoningTokens: 1,
		CompletionTokens: 2}, slo.Verdict{Good: true})
	// The server timing histograms appear with the first response that
	// carried vLLM's per-request metrics.
	pm.Observe(&prober.Record{Target: "t", Probe: "p", TTFT: 3 * time.Millisecond, E2E: 3 * time.Millisecond,
		ServerQueueTime: time.Millisecond, ServerTTFT: time.Millisecond, HasServerQueue: true, HasServerTTFT: true,
		CompletionTokens: 1}, slo.Verdict{Good: true})
	sw := probemetrics.NewSweeps(reg)
	sw.SweepRunning("t", false)
	sw.SweepScheduled("t", "s", time.Hour)
	curve := []capacity.StepPoint{{Label: "rate=1", Goodput: 1, Throughput: 1, Valid: true}}
	sw.SweepRestored("t", "s", capacity.Last{Knee: 1, KneeFound: true, MaxGoodput: 1, KneeUnit: "req/s", Finished: time.Now(),
		Duration: time.Minute, Steps: curve})
	// A second decided sweep (the previous knee appears), then an undecided
	// one (its reason appears; the knee gauges keep the last decided knee).
	sw.SweepFinished("t", "s", capacity.ResultSuccess, time.Minute, &capacity.Last{Knee: 2, KneeFound: true, Decided: true,
		State: capacity.StateDecided, KneeUnit: "req/s", Finished: time.Now(), Steps: curve})
	sw.SweepFinished("t", "s", capacity.ResultSuccess, time.Minute, &capacity.Last{State: capacity.StateUndecided,
		Undecided: "no_evidence_below", KneeUnit: "req/s", Finished: time.Now(), Steps: curve})
	config.NewSafeConfig(reg)
	probemetrics.NewSchedLatency(reg)
	for _, c := range []prometheus.Collector{
		versioncollector.NewCollector("llmprobe"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register self-metrics: %w", err)
		}
	}
	return reg, nil
}

// Catalog returns the full catalog: llmprobe's gathered metrics, the
// recording rules of files, vLLM's documented metrics and Prometheus' own
// series. It also checks that every name probemetrics.Names lists was
// gathered, so the catalog cannot silently miss a family.
func Catalog(files []rules.File) (*rules.Catalog, error) {
	reg, err := LLMProbeRegistry()
	if err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather llmprobe metrics: %w", err)
	}
	c := &rules.Catalog{}
	c.AddFamilies(SourceLLMProbe, mfs)
	for _, n := range slices.Concat(probemetrics.Names(), probemetrics.SweepNames(), probemetrics.ClientNames()) {
		if _, ok := c.Source(n); !ok {
			return nil, fmt.Errorf("probemetrics.Names() lists %s but the registry did not gather it", n)
		}
	}
	c.AddRecorded(files)
	c.AddVLLM()
	c.AddEngines()
	c.AddDCGM()
	c.AddPrometheus()
	return c, nil
}

// CanceledInRatios returns the selectors that can read llmprobe_requests_total
// in expr (by name, or through __name__ matchers that all match it, e.g.
// {__name__=~"llmprobe_requests_total|llmprobe_requests_skipped_total"}), sit
// under a division (on either side) and can match outcome="canceled".
// Requests llmprobe canceled itself (config reload, shutdown) must not count
// in error, goodput or burn ratios, so every such selector needs an outcome
// matcher that excludes "canceled" (e.g. outcome!="canceled",
// outcome="success" or outcome!~"success|canceled").
func CanceledInRatios(expr parser.Expr) []string {
	var out []string
	parser.Inspect(expr, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || !readsRequests(vs) {
			return nil
		}
		divided := false
		for _, a := range path {
			if be, ok := a.(*parser.BinaryExpr); ok && be.Op == parser.DIV {
				divided = true
			}
		}
		if !divided {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == "outcome" && !m.Matches("canceled") {
				return nil
			}
		}
		out = append(out, vs.String())
		return nil
	})
	return out
}

// readsRequests reports whether vs can select llmprobe_requests_total.
func readsRequests(vs *parser.VectorSelector) bool {
	if vs.Name != "" {
		return vs.Name == probemetrics.NameRequests
	}
	named := false
	for _, m := range vs.LabelMatchers {
		if m.Name != labels.MetricName {
			continue
		}
		named = true
		if !m.Matches(probemetrics.NameRequests) {
			return false
		}
	}
	return named
}

// OldNameOutsideFallback returns the selectors of expr that read an older
// vLLM name (rules.VLLMRenamed, with or without a _bucket, _sum or _count
// suffix) anywhere but on the right of an `or` whose left reads the current
// name with the same suffix, or, in a selector by __name__ regexp, in a
// list that does not name the current one too: `new or old` (and
// {__name__=~"new|old"}) fills a query from servers of either version and
// lets the current name win; an older name alone goes blank on every
// current vLLM.
func OldNameOutsideFallback(expr parser.Expr) []string {
	var out []string
	parser.Inspect(expr, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName || m.Type != labels.MatchRegexp {
				continue
			}
			alts := strings.Split(m.Value, "|")
			for _, a := range alts {
				if cur, ok := currentName(a); ok && !slices.Contains(alts, cur) {
					out = append(out, vs.String())
					return nil
				}
			}
		}
		current, ok := currentName(vs.Name)
		if !ok {
			return nil
		}
		for i := len(path) - 1; i >= 0; i-- {
			be, ok := path[i].(*parser.BinaryExpr)
			if !ok || be.Op != parser.LOR {
				continue
			}
			var child parser.Node = vs
			if i+1 < len(path) {
				child = path[i+1]
			}
			if child == parser.Node(be.RHS) && reads(be.LHS, current) {
				return nil
			}
		}
		out = append(out, vs.String())
		return nil
	})
	return out
}

// currentName returns the current name of an older vLLM series name, its
// suffix kept.
func currentName(name string) (string, bool) {
	for old, cur := range rules.VLLMRenamed {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if name == old+suffix {
				return cur + suffix, true
			}
		}
	}
	return "", false
}

// reads reports whether expr has a selector of the metric name.
func reads(expr parser.Expr, name string) bool {
	found := false
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name == name {
			found = true
		}
		return nil
	})
	return found
}
