package web

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// The bounds of GET /probe (docs/discovery.md, "/probe"; docs/security.md).
const (
	// MaxProbes is how many GET /probe are served at once, whatever
	// their targets; one more is answered 429.
	MaxProbes = 16
	// MaxProbeCount bounds ?count=, the requests one /probe sends one
	// after the other.
	MaxProbeCount = manager.MaxOnceCount
	// MaxProbeQueryBytes bounds the query string of GET /probe.
	MaxProbeQueryBytes = 4 << 10
	// probeTimeoutOffset is taken off Prometheus' scrape timeout
	// (X-Prometheus-Scrape-Timeout-Seconds) so that the answer arrives
	// before Prometheus gives up, as blackbox_exporter's
	// --timeout-offset.
	probeTimeoutOffset = 500 * time.Millisecond
)

// ClassSkipped is the class of probe_error_info for a request that was not
// sent because the module's workload drew more prompt and output tokens
// than the served model's max_model_len (a probe's "too_long" skip).
const ClassSkipped = "skipped"

// probeHandler serves GET /probe?target=URL&module=NAME[&count=N][&debug=true]
// (the blackbox convention): one probe of target with the module, answered
// in the Prometheus text format from a registry of its own. See
// docs/discovery.md.
type probeHandler struct {
	cfg func() *config.Config

	mu       sync.Mutex
	inflight map[string]bool // target + "\x00" + module
}

func addProbeRoute(mux *http.ServeMux, o Options) {
	h := &probeHandler{cfg: o.ProbeConfig, inflight: map[string]bool{}}
	limit := newRouteLimit("/probe", MaxProbes, MaxNoBodyBytes, false)
	mux.HandleFunc("/probe", limit.wrap(h.serve))
}

func (h *probeHandler) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "This endpoint requires a GET request.", http.StatusMethodNotAllowed)
		return
	}
	if len(r.URL.RawQuery) > MaxProbeQueryBytes {
		http.Error(w, fmt.Sprintf("the query is longer than %d bytes", MaxProbeQueryBytes), http.StatusBadRequest)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		http.Error(w, "invalid query: "+err.Error(), http.StatusBadRequest)
		return
	}
	target := q.Get("target")
	if target == "" {
		http.Error(w, "target parameter is missing", http.StatusBadRequest)
		return
	}
	moduleName := q.Get("module")
	if moduleName == "" {
		moduleName = config.DefaultModuleName
	}
	count := 1
	if s := q.Get("count"); s != "" {
		if count, err = strconv.Atoi(s); err != nil || count < 1 || count > MaxProbeCount {
			http.Error(w, fmt.Sprintf("count must be an integer from 1 to %d, got %q", MaxProbeCount, s), http.StatusBadRequest)
			return
		}
	}
	debug := false
	if s := q.Get("debug"); s != "" {
		if debug, err = strconv.ParseBool(s); err != nil {
			http.Error(w, fmt.Sprintf("debug must be true or false, got %q", s), http.StatusBadRequest)
			return
		}
	}
	var cfg *config.Config
	if h.cfg != nil {
		cfg = h.cfg()
	}
	if cfg == nil {
		http.Error(w, "no configuration loaded yet", http.StatusServiceUnavailable)
		return
	}
	module, ok := cfg.Module(moduleName)
	if !ok {
		http.Error(w, fmt.Sprintf("unknown module %q", trimQuoted(moduleName)), http.StatusBadRequest)
		return
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target // host:port, as blackbox_exporter's http prober takes it
	}
	tc, err := module.Target(target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !cfg.ProbeAllowed(tc.BaseURL) {
		http.Error(w, fmt.Sprintf("target %q is not allowed: it must match probe_allowed_targets "+
			"(when that is not set, only the base_url of a configured target is)", tc.BaseURL), http.StatusForbidden)
		return
	}
	key := tc.BaseURL + "\x00" + moduleName
	if !h.claim(key) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("a probe of %q with module %q is already running: one at a time", tc.BaseURL, moduleName),
			http.StatusTooManyRequests)
		return
	}
	defer h.release(key)

	ctx := r.Context()
	if s := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); s != "" {
		if secs, err := strconv.ParseFloat(s, 64); err == nil && secs > 0 {
			d := time.Duration(secs*float64(time.Second)) - probeTimeoutOffset
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, max(d, probeTimeoutOffset))
			defer cancel()
		}
	}
	var logs bytes.Buffer
	logger := log.With(log.NewLogfmtLogger(log.NewSyncWriter(&logs)), "ts", log.DefaultTimestampUTC, "module", moduleName)
	start := time.Now()
	level.Info(logger).Log("msg", "beginning probe", "target_url", tc.BaseURL, "count", count)
	results, err := manager.ProbeOnce(ctx, tc, manager.OnceOptions{Count: count, Logger: logger})
	if err != nil { // the module was validated at load: a bug, not the target
		http.Error(w, "cannot probe: "+err.Error(), http.StatusInternalServerError)
		return
	}
	reg := prometheus.NewRegistry()
	success := probeMetrics(reg, results, time.Since(start), logger)

	if !debug {
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	}
	var out bytes.Buffer
	if success {
		level.Info(logger).Log("msg", "probe succeeded", "duration_seconds", time.Since(start).Seconds())
	} else {
		level.Error(logger).Log("msg", "probe failed", "duration_seconds", time.Since(start).Seconds())
	}
	out.WriteString("Logs for the probe:\n")
	out.Write(logs.Bytes())
	out.WriteString("\n\n\nMetrics that would have been returned:\n")
	if mfs, err := reg.Gather(); err == nil {
		enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			_ = enc.Encode(mf)
		}
	}
	out.WriteString("\n\n\nModule configuration:\n")
	if b, err := yaml.Marshal(module); err == nil {
		out.Write(b)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = out.WriteTo(w)
}

// claim marks key in flight; false when it already was.
func (h *probeHandler) claim(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight[key] {
		return false
	}
	h.inflight[key] = true
	return true
}

func (h *probeHandler) release(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inflight, key)
}

// trimQuoted bounds a name echoed in an error.
func trimQuoted(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// probeMetrics registers the probe_* metrics of results on reg, logs each
// request and reports whether the probe succeeded (every request did).
func probeMetrics(reg *prometheus.Registry, results []manager.OnceResult, took time.Duration, logger log.Logger) bool {
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	info := func(name, help, label string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{label})
		reg.MustRegister(v)
		return v
	}
	successG := gauge("probe_success", "Whether every request of the probe succeeded (1) or not (0).")
	durationG := gauge("probe_duration_seconds", "How long the probe took, discovery and prompt sizing included.")
	ttftG := gauge("probe_ttft_seconds", "Time to first token, mean over the probe's successful streamed requests.")
	tpotG := gauge("probe_tpot_seconds", "Time per output token after the first, mean over the probe's successful requests "+
		"with more than one output token.")
	e2eG := gauge("probe_e2e_seconds", "Time from sending a request to its last token, mean over the probe's successful requests.")
	tokensG := gauge("probe_output_tokens", "Output tokens per request, mean over the probe's successful requests.")
	statusG := gauge("probe_http_status_code", "HTTP status code of the probe's last response (0 when none came).")
	sloG := gauge("probe_slo_met", "Whether every request of the probe succeeded and met the module's SLO (1) or not (0).")
	sentG := gauge("probe_requests", "Requests the probe sent (count=).")
	okG := gauge("probe_requests_succeeded", "Requests of the probe that succeeded.")
	errInfo := info("probe_error_info", "The error class of the probe's failed requests (value 1 per class that occurred; "+
		"none when every request succeeded).", "class")
	backendInfo := info("probe_backend_info", "The backends that answered the probe's requests (the module's "+
		"attribution_headers; value 1 per backend).", "backend")

	var ttft, tpot, e2e, tokens mean
	success, good := len(results) > 0, len(results) > 0
	ok := 0
	for i, res := range results {
		r := &res.Record
		if res.Skipped != "" {
			success, good = false, false
			errInfo.WithLabelValues(ClassSkipped).Set(1)
			level.Error(logger).Log("msg", "request not sent", "n", i+1, "reason", string(res.Skipped))
			continue
		}
		if r.Backend != "" {
			backendInfo.WithLabelValues(r.Backend).Set(1)
		}
		statusG.Set(float64(r.HTTPStatus))
		if !r.OK() {
			success, good = false, false
			errInfo.WithLabelValues(string(r.Error)).Set(1)
		} else {
			ok++
			good = good && res.Verdict.Good
			if !r.NoStream {
				ttft.add(r.TTFT.Seconds())
			}
			if d, has := r.TPOT(); has {
				tpot.add(d.Seconds())
			}
			e2e.add(r.E2E.Seconds())
			tokens.add(float64(r.CompletionTokens))
		}
		kv := []any{"msg", "request done", "n", i + 1, "request_id", r.RequestID, "outcome", r.Outcome(),
			"http_status", r.HTTPStatus, "ttft", r.TTFT, "e2e", r.E2E, "output_tokens", r.CompletionTokens,
			"slo_good", res.Verdict.Good}
		if r.RequestIDEcho != "" {
			kv = append(kv, "request_id_echo", r.RequestIDEcho)
		}
		if r.Backend != "" {
			for _, k := range slices.Sorted(maps.Keys(r.Attribution)) {
				kv = append(kv, k, r.Attribution[k])
			}
		}
		if r.ErrorMessage != "" {
			kv = append(kv, "err", r.ErrorMessage)
		}
		lvl := level.Info
		if !r.OK() {
			lvl = level.Error
		}
		lvl(logger).Log(kv...)
	}
	successG.Set(b2f(success))
	sloG.Set(b2f(good))
	durationG.Set(took.Seconds())
	sentG.Set(float64(len(results)))
	okG.Set(float64(ok))
	for _, m := range []struct {
		g prometheus.Gauge
		v *mean
	}{{ttftG, &ttft}, {tpotG, &tpot}, {e2eG, &e2e}, {tokensG, &tokens}} {
		if m.v.n > 0 {
			m.g.Set(m.v.sum / float64(m.v.n))
		} else {
			reg.Unregister(m.g) // nothing measured: no series, rather than a 0 that reads as fast
		}
	}
	return success
}

// mean accumulates a mean.
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(v float64) { m.sum += v; m.n++ }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
