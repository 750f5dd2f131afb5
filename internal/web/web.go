// Package web owns llmprobe's HTTP surface apart from the metrics themselves:
// the landing page (targets, probes and their latest results), the health and
// readiness endpoints, the reload endpoint (behind --web.enable-lifecycle),
// the config view and, behind --web.enable-pprof, /debug/pprof. Serving (TLS,
// basic auth) is exporter-toolkit's job; this package only builds the mux.
package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/http/pprof"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// StatusSource reports the current targets; implemented by the probe
// manager (*manager.Manager), whose status types the landing page reads.
type StatusSource interface {
	Status() []manager.TargetStatus
}

// ErrNothingToReload is returned (wrapped) by an Options.Reload that has no
// configuration file to reload; /-/reload answers it with 409 Conflict.
var ErrNothingToReload = errors.New("nothing to reload")

// Options configures the handlers. Reload is called for POST /-/reload and
// returns the reload error; Ready reports readiness; ConfigYAML returns the
// loaded config with secrets masked.
type Options struct {
	Gatherer   prometheus.Gatherer
	Status     StatusSource
	Reload     func(ctx context.Context) error
	Ready      func() bool
	ConfigYAML func() string
	// EnableOpenMetrics serves OpenMetrics (needed for exemplars) when the
	// scraper asks for it. Default true via NewHandler.
	DisableOpenMetrics bool
	// EnableLifecycle serves POST /-/reload (Prometheus'
	// --web.enable-lifecycle); when false (the default) it answers 403 and
	// only SIGHUP reloads.
	EnableLifecycle bool
	// EnablePprof serves net/http/pprof under /debug/pprof/ (default false:
	// 404). Profiles show memory and goroutine stacks, request contents
	// included: enable it only behind basic auth or on a trusted network.
	EnablePprof bool
	// EnableSweeps serves the sweep API under /api/v1/sweeps through Sweeps
	// (--web.enable-sweeps; docs/sweep-api.md); when false (the default)
	// every sweep API path answers 403.
	EnableSweeps bool
	Sweeps       SweepService
	// Window feeds the landing page's per-target summary of the last
	// SummaryWindow (nil: no summary).
	Window *Window
	// Shard says which share of the targets this replica probes, for the
	// landing page (nil or "": not sharded).
	Shard func() string
}

// NewHandler returns the mux with /, /metrics, /-/healthy, /-/ready,
// /-/reload (POST or PUT, with EnableLifecycle), /config, /debug/pprof/
// (with EnablePprof) and the sweep API /api/v1/sweeps (with EnableSweeps).
//
// /-/reload answers 405 to other methods, 403 without EnableLifecycle, 409
// when Reload returns ErrNothingToReload, 500 when the reload failed (an
// invalid file: the old configuration stays), 200 when it succeeded.
func NewHandler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
		EnableOpenMetrics: !o.DisableOpenMetrics,
		ErrorHandling:     promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil && !o.Ready() {
			http.Error(w, "Not ready: config not loaded or probes not scheduled yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready")
	})
	reloads := newRouteLimit("/-/reload", MaxReloads, MaxNoBodyBytes, false)
	mux.HandleFunc("/-/reload", reloads.wrap(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "This endpoint requires a POST or PUT request.", http.StatusMethodNotAllowed)
			return
		}
		if !o.EnableLifecycle {
			http.Error(w, "Lifecycle API is not enabled: start llmprobe with --web.enable-lifecycle, or send SIGHUP.", http.StatusForbidden)
			return
		}
		if o.Reload == nil {
			http.Error(w, "reload is not available", http.StatusNotImplemented)
			return
		}
		if err := o.Reload(r.Context()); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, ErrNothingToReload) {
				code = http.StatusConflict
			}
			http.Error(w, fmt.Sprintf("failed to reload config: %s", err), code)
			return
		}
		fmt.Fprintln(w, "Config reloaded")
	}))
	addSweepRoutes(mux, o)
	if o.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/config", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.ConfigYAML == nil {
			fmt.Fprintln(w, "# no config file (flags or built-in default)")
			return
		}
		fmt.Fprint(w, o.ConfigYAML())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		var ts []manager.TargetStatus
		if o.Status != nil {
			ts = o.Status.Status()
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		data := landingData{Version: version.Info(), Targets: ts, Now: time.Now(), SweepLinks: o.EnableSweeps}
		if o.Shard != nil {
			data.Shard = o.Shard()
		}
		data.Summaries = summaries(o, ts, data.Now)
		if o.Sweeps != nil {
			data.Sweeps = o.Sweeps.List()
			if len(data.Sweeps) > recentSweeps {
				data.Sweeps = data.Sweeps[:recentSweeps]
			}
		}
		if err := landing.Execute(w, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}

// cmdline is pprof.Cmdline with secret-looking flag values and URL
// credentials redacted (fingerprint.Redact), e.g. those of --push.url.
func cmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(fingerprint.Redact(os.Args), "\x00"))
}

type landingData struct {
	Version   string
	Targets   []manager.TargetStatus
	Now       time.Time
	Summaries []summaryRow
	// Sweeps are the recent sweeps (newest first); SweepLinks says their
	// files can be linked (the sweep API is on).
	Sweeps     []sweepd.Status
	SweepLinks bool
	// Shard is the replica's shard line ("" when not sharded).
	Shard string
}

// recentSweeps is how many sweeps the landing page lists.
const recentSweeps = 10

// summaryRow is one target's line of the landing page's summary.
type summaryRow struct {
	TargetSummary
	// Knee is the last successful sweep's knee ("-" when none), KneeAge
	// how long ago it ended, Sweep the sweep's name; Sweeping says a sweep
	// of the target runs now.
	Knee, KneeAge, Sweep string
	Sweeping             bool
}

// summaries builds the summary of every target: the Window's last 5
// minutes and the sweeps' last knee.
func summaries(o Options, ts []manager.TargetStatus, now time.Time) []summaryRow {
	if o.Window == nil {
		return nil
	}
	rows := make([]summaryRow, 0, len(ts))
	for _, t := range ts {
		r := summaryRow{TargetSummary: o.Window.Summary(t.Name), Knee: "-", KneeAge: "-"}
		if o.Sweeps != nil {
			if name, last, ok := o.Sweeps.LastOf(t.Name); ok {
				unit := last.KneeUnit
				if unit == "" {
					unit = "req/s"
				}
				r.Knee = strconv.FormatFloat(last.Knee, 'g', 4, 64) + " " + unit
				if !last.KneeFound {
					r.Knee = "≥ " + r.Knee
				}
				r.KneeAge, r.Sweep = ago(now, last.Finished), name
			}
			_, r.Sweeping = o.Sweeps.Running(t.Name)
		}
		rows = append(rows, r)
	}
	return rows
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + " %" }

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Truncate(100*time.Millisecond).String() + " ago"
}

var landing = template.Must(template.New("landing").Funcs(template.FuncMap{"ms": ms, "ago": ago, "pct": pct}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>llmprobe</title>
<style>
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .6em;font-size:90%;text-align:left}
th{background:#f2f2f2}.bad{color:#b00}.good{color:#070}.muted{color:#777}
</style></head><body>
<h1>llmprobe</h1>
<p>Prometheus-native prober for LLM serving endpoints. <span class="muted">{{.Version}}</span></p>
{{if .Shard}}<p><b>{{.Shard}}</b></p>{{end}}
<p><a href="/metrics">Metrics</a> · <a href="/config">Configuration</a> · <a href="/-/healthy">Health</a> · <a href="/-/ready">Readiness</a></p>
{{if not .Targets}}<p>No targets configured yet.</p>{{end}}
{{if .Summaries}}<h2>Summary <span class="muted">(last 5 minutes)</span></h2>
<table id="summary"><tr><th>target</th><th>requests</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th><th>TPOT p99</th><th>goodput</th><th>objective</th><th>SLO</th><th>last knee</th><th>knee age</th></tr>
{{range .Summaries}}<tr data-target="{{.Target}}"><td>{{.Target}}{{if .Sweeping}} <b>(sweeping)</b>{{end}}</td><td class="requests">{{.Requests}}</td><td class="ttft-p50">{{ms .TTFTP50}}</td><td class="ttft-p99">{{ms .TTFTP99}}</td><td class="tpot-p50">{{ms .TPOTP50}}</td><td class="tpot-p99">{{ms .TPOTP99}}</td><td class="goodput">{{if .Requests}}{{pct .GoodputRatio}}{{else}}-{{end}}</td><td class="objective">{{pct .Objective}}</td><td class="slo-state {{if eq .SLOState "met"}}good{{else if eq .SLOState "violated"}}bad{{end}}">{{.SLOState}}</td><td class="knee">{{.Knee}}{{if .Sweep}} <span class="muted">({{.Sweep}})</span>{{end}}</td><td class="knee-age">{{.KneeAge}}</td></tr>
{{end}}</table>{{end}}
{{if .Sweeps}}<h2>Recent sweeps</h2>
<table id="sweeps"><tr><th>id</th><th>target</th><th>sweep</th><th>origin</th><th>status</th><th>started</th><th>knee</th><th>files</th></tr>
{{range .Sweeps}}<tr data-id="{{.ID}}"><td>{{if $.SweepLinks}}<a href="/api/v1/sweeps/{{.ID}}">{{.ID}}</a>{{else}}{{.ID}}{{end}}</td><td>{{.Target}}</td><td>{{.Name}}</td><td>{{.Origin}}</td><td class="status {{if eq .Status "done"}}good{{else if eq .Status "failed"}}bad{{end}}">{{.Status}}{{with .Step}} ({{.Label}}: {{.Done}}{{if ge .Planned 0}}/{{.Planned}}{{end}}){{end}}</td><td>{{ago $.Now .Created}}</td><td>{{with .Result}}{{if .KneeFound}}{{.Knee}}{{else}}≥ {{.Knee}}{{end}} {{.KneeUnit}}{{else}}-{{end}}</td><td>{{if and $.SweepLinks .Files}}<a href="/api/v1/sweeps/{{.ID}}/files/analysis.md">analysis.md</a> · <a href="/api/v1/sweeps/{{.ID}}/files/goodput.svg">goodput.svg</a> · <a href="/api/v1/sweeps/{{.ID}}/files/latency.svg">latency.svg</a>{{else}}-{{end}}</td></tr>
{{end}}</table>{{end}}
{{range $t := .Targets}}
<h2>Target {{$t.Name}}</h2>
<p>{{$t.BaseURL}} · API {{$t.API}} · model {{if $t.Model}}{{$t.Model}}{{else}}<span class="muted">not resolved yet</span>{{end}}
{{if $t.ServerVersion}} · server {{$t.ServerVersion}}{{end}} · SLO {{if $t.SLO}}{{$t.SLO}}{{else}}none{{end}}
{{if $t.Note}}<br><b>{{$t.Note}}</b>{{end}}</p>
{{range $p := $t.Probes}}
<h3>Probe {{$p.Name}}</h3>
<p>{{$p.Rate}} req/s {{$p.Arrival}} · workload {{$p.Workload}} · sent {{$p.Sent}} · good {{$p.Good}} · failed {{$p.Failed}} · skipped {{$p.Skipped}}</p>
<table><tr><th>when</th><th>request id</th><th>outcome</th><th>status</th><th>TTFT</th><th>TPOT</th><th>E2E</th><th>tokens</th><th>send lag</th><th>message</th></tr>
{{range $p.Recent}}<tr><td>{{ago $.Now .Time}}</td><td>{{.RequestID}}</td><td class="{{if .Good}}good{{else if ne .Outcome "success"}}bad{{end}}">{{.Outcome}}{{if and .Good}} (good){{end}}</td><td>{{.HTTPStatus}}</td><td>{{ms .TTFT}}</td><td>{{ms .TPOT}}</td><td>{{ms .E2E}}</td><td>{{.OutputTokens}}</td><td>{{ms .SendLag}}</td><td>{{.Message}}</td></tr>
{{else}}<tr><td colspan="10" class="muted">no requests yet</td></tr>{{end}}
</table>
{{if $p.Failures}}<p>Recent failures (kept longer):</p>
<table><tr><th>when</th><th>request id</th><th>outcome</th><th>status</th><th>message</th></tr>
{{range $p.Failures}}<tr><td>{{ago $.Now .Time}}</td><td>{{.RequestID}}</td><td class="bad">{{.Outcome}}</td><td>{{.HTTPStatus}}</td><td>{{.Message}}</td></tr>{{end}}
</table>{{end}}
{{end}}{{end}}
</body></html>
`))
