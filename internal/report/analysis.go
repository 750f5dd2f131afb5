package report

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Analysis renders analysis.md of res in the sections of
// docs/templates/experiment-report.md (Sections): the decision and SLO with
// a one-line answer, the run's fingerprint, the workload distributions
// (workloadSections), the results (the per-step table with the knee marked,
// with --rounds the spread of each level over its rounds, the knee with its
// uncertainty and the plots, the cost with --cost-per-hour, latency detail,
// errors, server-side deltas, the answer checks with --answer-checks), the
// validity checks, the conclusion limited
// to this environment and workload, the rollback condition and the
// evidence still missing. It never fails: missing data is shown as
// "not-recorded" or "-".
func Analysis(res *sweep.Result) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if res.Name == "" || res.Name == "sweep" {
		p("# llmprobe sweep\n\n")
	} else {
		p("# llmprobe sweep: %s\n\n", res.Name)
	}
	writeDecision(&b, res)
	writeRun(&b, res)
	writeWorkload(&b, res)
	heading(&b, SectionResults)
	writeSteps(&b, res)
	writeMultiTurn(&b, res)
	writeTrace(&b, res)
	writeSpread(&b, res)
	writeKnee(&b, res)
	writeCost(&b, res)
	writeEnergy(&b, res) // energy.go
	writeLatency(&b, res)
	writeErrors(&b, res)
	writeServer(&b, res)
	writeServerTiming(&b, res) // servertiming.go
	writeCacheHits(&b, res)
	writeReasoning(&b, res)
	writePooling(&b, res)    // pooling.go
	writeImages(&b, res)     // images.go
	writeSpecDecode(&b, res) // specdecode.go
	writeAnswers(&b, res)    // answers.go
	writeValidity(&b, res)
	writeConclusion(&b, res)
	writeRollback(&b, res)
	writeNotRecorded(&b, res)
	return b.Bytes()
}

func writeRun(b *bytes.Buffer, res *sweep.Result) {
	fp := res.Fingerprint
	row := func(k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, mdCell(v)) }
	heading(b, SectionFingerprint)
	b.WriteString("| field | value |\n|---|---|\n")
	row("llmprobe", fmt.Sprintf("%s (revision %s, %s)", fp.Tool.Version, fp.Tool.Revision, fp.Tool.GoVersion))
	cmd := fingerprint.NotRecorded
	if len(fp.Command) > 0 {
		cmd = "`" + fingerprint.ShellJoin(fp.Command) + "`"
	}
	row("command", cmd)
	t := fp.Target
	row("target", fmt.Sprintf("%s (API %s)", t.URL, t.API))
	row("model", fmt.Sprintf("%s (served %s, root %s, max_model_len %s)", t.Model, t.ServedModel, t.Root, t.MaxModelLen))
	withReason := func(v, field string) string {
		if why := t.NotRecorded[field]; v == fingerprint.NotRecorded && why != "" {
			return v + " (" + why + ")"
		}
		return v
	}
	row("server version", withReason(t.ServerVersion, "server_version"))
	ec := withReason(fingerprint.NotRecorded, "engine_config")
	if t.EngineConfig != nil {
		keys := make([]string, 0, len(t.EngineConfig))
		for k := range t.EngineConfig {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+t.EngineConfig[k])
		}
		ec = strings.Join(parts, ", ")
	}
	row("engine config", ec)
	row("tokenizer", t.Tokenizer)
	row("server metrics", t.MetricsURL)
	row("workload", fmt.Sprintf("sha256 %s (from %s)", fp.Workload.SHA256, fp.Workload.Source))
	l := fp.Load
	load := fmt.Sprintf("mode %s", l.Mode)
	if l.Arrival != "" {
		load += fmt.Sprintf(", arrival %s", l.Arrival)
	}
	if l.Burstiness > 0 {
		load += fmt.Sprintf(", burstiness %s", num(l.Burstiness))
	}
	if len(l.Rates) > 0 {
		load += ", rates " + strings.Join(l.Rates, ",")
	}
	if len(l.Concurrency) > 0 {
		cs := make([]string, len(l.Concurrency))
		for i, c := range l.Concurrency {
			cs[i] = fmt.Sprint(c)
		}
		load += ", concurrency " + strings.Join(cs, ",")
	}
	if l.MaxConcurrency > 0 {
		load += fmt.Sprintf(", max concurrency %d", l.MaxConcurrency)
	}
	if l.NumPrompts > 0 {
		load += fmt.Sprintf(", %d prompts per step", l.NumPrompts)
	}
	if l.Duration != "" {
		load += ", " + l.Duration + " per step"
	}
	load += fmt.Sprintf(", %d warmups, seed %d", l.Warmups, l.Seed)
	if l.Rounds > 1 {
		load += fmt.Sprintf(", %d rounds", l.Rounds)
	}
	row("load", load)
	row("SLO", sloText(res))
	c := fp.Client
	row("client", fmt.Sprintf("%s: %s, %d cores, %s %s/%s", c.Hostname, c.CPUModel, c.Cores, c.GoVersion, c.OS, c.Arch))
	row("start / end (UTC)", utc(fp.Start)+" / "+utc(fp.End))
	complete := "yes"
	if !res.Complete {
		complete = "no: " + res.InterruptedReason
	}
	row("complete", complete)
	b.WriteString("\n")
}

func writeNotRecorded(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionMissing)
	if miss := missingEvidence(res); len(miss) > 0 {
		for _, m := range miss {
			fmt.Fprintf(b, "- %s\n", m)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("None for this conclusion beyond what follows.\n\n")
	}
	b.WriteString("### Not recorded\n\n")
	b.WriteString("`not-recorded` means llmprobe tried to read the value and could not (the endpoint does not exist, " +
		"the server does not expose it, or the request failed). It is never a guess or a default; the value is unknown.\n\n")
	fields := notRecordedFields(res.Fingerprint)
	var idle []string
	for _, st := range res.Steps {
		if s := st.Validity.Idle.Status; s == "" || s == sweep.IdleNotRecorded {
			idle = append(idle, stepName(st))
		}
	}
	if len(fields) == 0 && len(idle) == 0 {
		b.WriteString("Every fingerprint field and idle proof was recorded.\n")
		return
	}
	if len(fields) > 0 {
		b.WriteString("Fingerprint fields not recorded (manifest.json):\n\n")
		for _, f := range fields {
			fmt.Fprintf(b, "- `%s`%s\n", f, explain(f))
		}
		b.WriteString("\n")
	}
	if len(idle) > 0 {
		fmt.Fprintf(b, "Idle proof not recorded before step(s) %s: the server's queue could not be read, so these steps "+
			"may have started with requests still in flight.\n", strings.Join(idle, ", "))
	}
}

// sloSet reports whether any SLO threshold is set.
func sloSet(res *sweep.Result) bool {
	for _, v := range res.SLO {
		if v > 0 {
			return true
		}
	}
	return false
}

// idleDetail says what an idle proof read, or why it read nothing.
func idleDetail(p sweep.IdleProof) string {
	switch p.Status {
	case sweep.IdleProven:
		return fmt.Sprintf("running + waiting read 0 after %.1f s", p.Waited)
	case sweep.IdleNotIdle:
		return fmt.Sprintf("running %s, waiting %s after %.1f s", trimFloat(p.Running), trimFloat(p.Waiting), p.Waited)
	}
	return p.Reason
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// explain says where a not-recorded fingerprint field would have come from.
func explain(field string) string {
	switch field {
	case "target.served_model", "target.root":
		return ": from GET /v1/models (vLLM lists root)"
	case "target.max_model_len", "target.max_model_len_source":
		return ": from GET /v1/models max_model_len, else the engine's own context length (docs/engines.md)"
	case "target.server_version":
		return ": from GET /version (vLLM only)"
	case "target.engine", "target.engine_source":
		return ": the server's engine was neither given (--engine) nor recognised, so none of its metrics was read"
	case "target.engine_config":
		return ": from the labels of vllm:cache_config_info on /metrics, or the engine's info endpoint"
	case "target.tokenizer":
		return ": neither the server's /tokenize nor a calibration was used"
	case "target.metrics_url":
		return ": no /metrics URL was scraped"
	case "llmprobe.version", "llmprobe.revision", "llmprobe.branch", "llmprobe.build_date":
		return ": not set at build time (-ldflags) and not in the Go build info"
	case "client.cpu_model":
		return ": /proc/cpuinfo names no model on this host"
	}
	return ""
}
