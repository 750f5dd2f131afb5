package web

import "html/template"

// landing is the landing page: server-rendered, no script. Every section
// and every target has an id to link to (#alerts, #budgets, #summary,
// #canary, #sweeps, #target-NAME, #sweep-ID).
var landing = template.Must(template.New("landing").Funcs(template.FuncMap{
	"ms": ms, "ago": ago, "pct": pct, "burn": burnText, "budget": budgetPct, "window": window,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>llmprobe</title>
<style>
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .6em;font-size:90%;text-align:left}
th{background:#f2f2f2}.bad{color:#b00}.good{color:#070}.muted{color:#777}.warn{color:#a60}
.sweeping{background:#fff3c4;padding:0 .3em}
</style></head><body>
<h1>llmprobe</h1>
<p>Prometheus-native prober for LLM serving endpoints. <span class="muted" id="version">{{.Version}}</span></p>
{{if .Shard}}<p><b>{{.Shard}}</b></p>{{end}}
<p><a href="/metrics">Metrics</a> · <a href="/config">Configuration</a> · <a href="/-/healthy">Health</a> · <a href="/-/ready">Readiness</a>
{{if .HasWindow}} · <a href="#alerts">Alerts</a> · <a href="#budgets">Error budgets</a> · <a href="#summary">Summary</a>{{end}}{{if .Canary}} · <a href="#canary">Canary pairs</a>{{end}}{{if .Sweeps}} · <a href="#sweeps">Sweeps</a>{{end}}</p>
{{if not .Targets}}<p>No targets configured yet.</p>{{end}}
{{if .HasWindow}}<h2>Firing <span class="muted">(the daemon's own view, not Prometheus')</span></h2>
<table id="alerts"><tr><th>alert</th><th>severity</th><th>target</th><th>what holds</th></tr>
{{range .Alerts}}<tr class="alert" data-alert="{{.Name}}" data-target="{{.Target}}"><td>{{.Name}}</td><td class="{{if eq .Severity "critical"}}bad{{else}}warn{{end}}">{{.Severity}}</td><td><a href="#target-{{.Target}}">{{.Target}}</a></td><td>{{.Text}}</td></tr>
{{else}}<tr><td colspan="4" class="good" id="no-alerts">none firing</td></tr>{{end}}</table>
<p class="muted">The conditions of every shipped alert family (requests, answers, canary, capacity, replicas) on the daemon's own counts per target (every probe summed; answer checks per probe), to the minute, without their <code>for:</code> delays, critical first; the minutes a target is swept are left out of its burn and latency conditions and budgets, as the rules leave sweeps out (docs/daemon.md).</p>
<h2>Error budgets <span class="muted">(the daemon's last 6 hours without the swept minutes; most urgent first)</span></h2>
<table id="budgets"><tr><th>target</th><th>SLO</th><th>objective</th><th>window</th><th>bad / counted</th><th>burn 5m</th><th>burn 1h</th><th>budget left</th></tr>
{{range .Budgets}}<tr data-target="{{.Target}}" data-slo="{{.SLO}}"><td><a href="#target-{{.Target}}">{{.Target}}</a></td><td>{{.SLO}}</td><td>{{pct .Objective}}</td><td>{{window .Window}}</td><td>{{.Bad}} / {{.Total}}</td><td class="burn-5m">{{burn .Burn5m}}</td><td class="burn-1h">{{burn .Burn1h}}</td><td class="budget-left {{if lt .Remaining 0.0}}bad{{end}}">{{budget .Remaining}}</td></tr>
{{end}}</table>{{end}}
{{if .Summaries}}<h2>Summary <span class="muted">(last 5 minutes)</span></h2>
<table id="summary"><tr><th>target</th><th>engine</th><th>requests</th><th>errors</th><th>skipped</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th><th>TPOT p99</th><th>goodput</th><th>objective</th><th>SLO</th><th>last knee</th><th>knee age</th></tr>
{{range .Summaries}}<tr data-target="{{.Target}}"><td class="target"><a href="#target-{{.Target}}">{{.Target}}</a>{{if .SweepID}} <b class="sweeping" title="a sweep of this target runs: its latency and burn conditions are muted">sweeping</b>{{end}}</td><td class="engine">{{if .Engine}}{{.Engine}}{{else}}-{{end}}</td><td class="requests">{{.Requests}}</td><td class="error-rate {{if .Failed}}bad{{end}}">{{if .Requests}}{{pct .ErrorRate}}{{else}}-{{end}}</td><td class="skipped" title="max_concurrency {{.SkippedMaxConcurrency}}, too_long {{.SkippedTooLong}}">{{.Skipped}}</td><td class="ttft-p50">{{ms .TTFTP50}}</td><td class="ttft-p99">{{ms .TTFTP99}}</td><td class="tpot-p50">{{ms .TPOTP50}}</td><td class="tpot-p99">{{ms .TPOTP99}}</td><td class="goodput">{{if or .Requests .SkippedMaxConcurrency}}{{pct .GoodputRatio}}{{else}}-{{end}}</td><td class="objective">{{pct .Objective}}</td><td class="slo-state {{if eq .SLOState "met"}}good{{else if eq .SLOState "violated"}}bad{{end}}">{{.SLOState}}</td><td class="knee">{{.Knee}}{{if .Sweep}} <span class="muted">({{.Sweep}})</span>{{end}}{{if .LastFailed}}<br><span class="bad last-failed">latest sweep failed: {{.LastFailed}}</span>{{end}}</td><td class="knee-age">{{.KneeAge}}</td></tr>
{{end}}</table>{{end}}
{{if .Canary}}<h2 id="canary">Canary pairs <span class="muted">(last 5 minutes, each side's targets pooled)</span></h2>
{{range .Canary}}<table class="canary" id="canary-{{.Name}}" data-canary="{{.Name}}"><tr><th>{{.Name}}</th><th>baseline{{range .Baseline}} <a href="#target-{{.}}">{{.}}</a>{{end}}</th><th>candidate{{range .Candidate}} <a href="#target-{{.}}">{{.}}</a>{{end}}</th><th>candidate / baseline</th></tr>
{{range .Figures}}<tr data-figure="{{.Name}}"><td>{{.Name}}</td><td class="baseline">{{.Baseline}}</td><td class="candidate">{{.Candidate}}</td><td class="ratio">{{.Ratio}}</td></tr>
{{end}}</table>{{end}}<p class="muted">The figures LLMProbeCanaryRegression compares, from the daemon's own requests; Prometheus' rules decide the alert.</p>{{end}}
{{if .Sweeps}}<h2>Recent sweeps</h2>
<table id="sweeps"><tr><th>id</th><th>target</th><th>sweep</th><th>origin</th><th>status</th><th>started</th><th>knee</th><th>reason</th><th>files</th></tr>
{{range .Sweeps}}<tr id="sweep-{{.ID}}" data-id="{{.ID}}"><td>{{if $.SweepLinks}}<a href="/api/v1/sweeps/{{.ID}}">{{.ID}}</a>{{else}}{{.ID}}{{end}}</td><td><a href="#target-{{.Target}}">{{.Target}}</a></td><td>{{.Name}}</td><td>{{.Origin}}</td><td class="status {{if eq .Status "done"}}good{{else if eq .Status "failed"}}bad{{end}}">{{.Status}}{{with .Step}} ({{.Label}}: {{.Done}}{{if ge .Planned 0}}/{{.Planned}}{{end}}){{end}}</td><td>{{ago $.Now .Created}}</td><td class="knee">{{.Knee}}</td><td class="reason {{if eq .Status "failed"}}bad{{else}}muted{{end}}">{{.Reason}}</td><td>{{if and $.SweepLinks .Files}}<a href="/api/v1/sweeps/{{.ID}}/files/analysis.md">analysis.md</a> · <a href="/api/v1/sweeps/{{.ID}}/files/goodput.svg">goodput.svg</a> · <a href="/api/v1/sweeps/{{.ID}}/files/latency.svg">latency.svg</a>{{else}}-{{end}}</td></tr>
{{end}}</table>{{end}}
{{range $t := .Targets}}
<h2 id="target-{{$t.Name}}">Target {{$t.Name}}{{if $t.SweepID}} <span class="sweeping">sweeping: {{if $.SweepLinks}}<a href="/api/v1/sweeps/{{$t.SweepID}}">{{$t.SweepID}}</a>{{else}}{{$t.SweepID}}{{end}}</span>{{end}}</h2>
<p>{{$t.BaseURL}} · API {{$t.API}} · engine <span class="engine">{{if $t.Engine}}{{$t.Engine}}{{else}}<span class="muted">not detected yet</span>{{end}}</span> · model {{if $t.Model}}{{$t.Model}}{{else}}<span class="muted">not resolved yet</span>{{end}}
{{if $t.ServerVersion}} · server {{$t.ServerVersion}}{{end}} · SLO {{if $t.SLO}}{{$t.SLO}}{{else}}none{{end}}
{{if $t.Note}}<br><b>{{$t.Note}}</b>{{end}}</p>
{{if $t.Answers}}<h3 id="target-{{$t.Name}}-answers">Answer checks <span class="muted">(the last result of each; docs/quality.md)</span></h3>
<table class="answers" data-target="{{$t.Name}}"><tr><th>probe</th><th>check</th><th>expects</th><th>result</th><th>when</th><th>reply</th><th>why</th></tr>
{{range $t.Answers}}<tr class="answer" data-check="{{.Check}}" data-result="{{.Outcome}}"><td>{{.Probe}}</td><td>{{.Check}}</td><td>{{.Kind}}</td><td class="result {{if eq .Outcome "pass"}}good{{else}}bad{{end}}">{{.Outcome}}</td><td>{{ago $.Now .Time}}</td><td class="reply"><code>{{printf "%q" .Reply}}</code>{{if .Cut}}…{{end}}</td><td class="reason">{{.Reason}}</td></tr>
{{end}}</table>{{end}}
{{range $p := $t.Probes}}
<h3 id="target-{{$t.Name}}-probe-{{$p.Name}}">Probe {{$p.Name}}</h3>
<p>{{$p.Rate}} req/s {{$p.Arrival}} · workload {{$p.Workload}} · sent {{$p.Sent}} · good {{$p.Good}} · failed {{$p.Failed}} · skipped {{$p.Skipped}}</p>
<table><tr><th>when</th><th>request id</th><th>outcome</th><th>status</th><th>TTFT</th><th>TPOT</th><th>E2E</th><th>tokens</th><th>send lag</th><th>message</th></tr>
{{range $p.Recent}}<tr><td>{{ago $.Now .Time}}</td><td>{{.RequestID}}{{if .TraceID}}<br><small>trace {{.TraceID}}</small>{{end}}{{with .Backend}}<br><span class="muted">backend {{.}}</span>{{end}}</td><td class="{{if .Good}}good{{else if ne .Outcome "success"}}bad{{end}}">{{.Outcome}}{{if and .Good}} (good){{end}}</td><td>{{.HTTPStatus}}</td><td>{{ms .TTFT}}</td><td>{{ms .TPOT}}</td><td>{{ms .E2E}}</td><td>{{.OutputTokens}}</td><td>{{ms .SendLag}}</td><td>{{.Message}}</td></tr>
{{else}}<tr><td colspan="10" class="muted">no requests yet</td></tr>{{end}}
</table>
{{if $p.Failures}}<p>Recent failures (kept longer):</p>
<table><tr><th>when</th><th>request id</th><th>outcome</th><th>status</th><th>message</th></tr>
{{range $p.Failures}}<tr><td>{{ago $.Now .Time}}</td><td>{{.RequestID}}{{if .TraceID}}<br><small>trace {{.TraceID}}</small>{{end}}{{with .Backend}}<br><span class="muted">backend {{.}}</span>{{end}}</td><td class="bad">{{.Outcome}}</td><td>{{.HTTPStatus}}</td><td>{{.Message}}</td></tr>{{end}}
</table>{{end}}
{{end}}{{end}}
</body></html>
`))
