package web

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// verdict is what one surface said of a knob's value: accepted (key ""),
// or refused naming key with reason (the other knobs it names spelled as
// keys: --arrival reads arrival).
type verdict struct{ key, reason string }

func (v verdict) String() string {
	if v.key == "" {
		return "accepted"
	}
	return v.key + ": " + v.reason
}

// flagRef matches a flag in a CLI reason.
var flagRef = regexp.MustCompile(`--([a-z][a-z-]*)`)

// asKeys spells a CLI text's flags as keys (--max-concurrency reads
// max_concurrency).
func asKeys(s string) string {
	return flagRef.ReplaceAllStringFunc(s, func(m string) string { return strings.ReplaceAll(m[2:], "-", "_") })
}

// yamlPath matches a config error's key under a probe, a sweep or the
// target.
var yamlPath = regexp.MustCompile(`targets\[0\]\.(?:probes\[0\]\.|sweeps\[0\]\.)?([a-z_.]+): (.*)`)

// yamlVerdict is config.Parse's verdict of a document.
func yamlVerdict(t *testing.T, doc string) verdict {
	t.Helper()
	_, err := config.Parse([]byte(doc), "k.yml")
	if err == nil {
		return verdict{}
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 1 {
		t.Errorf("%d problems, want one:\n%v", len(lines), err)
	}
	m := yamlPath.FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("no key in %q", lines[0])
	}
	return verdict{m[1], m[2]}
}

// TestSharedKnobsOneRule feeds the edge values of every knob a probe and a
// sweep share, and of the rules between a sweep's knobs, through a
// probe's YAML (or its target's), a scheduled sweep's YAML (a sweeps:
// entry), the sweep API and the sweep CLI, and requires one verdict with
// one named reason from every surface that takes the knob (issue 35
// Deliver 2: `arrival: poisson, burstiness: 0.5` was refused on a probe,
// taken in a sweeps: entry and ignored by `sweep --arrival poisson
// --burstiness 0.5`; `sweep --workload w.yml --prefix-len 100` was taken
// and the same pair refused in a scheduled sweep).
func TestSharedKnobsOneRule(t *testing.T) {
	dir := t.TempDir()
	const inline = `{"input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 4}}`
	wl := filepath.Join(dir, "w.yml")
	if err := os.WriteFile(wl, []byte(inline+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type knobCase struct {
		name   string
		probe  string   // a probe's keys (YAML flow), "" when a probe has none of the knobs
		target string   // a target's keys instead of a probe's
		spec   string   // a sweep spec's keys (JSON, a YAML flow mapping too), "" when none
		cli    []string // sweep's flags
		want   string   // the key refused, "" for accepted
	}
	cases := []knobCase{
		{"poisson with a shape", `"arrival": "poisson", "burstiness": 0.5`, "", `"arrival": "poisson", "burstiness": 0.5`,
			[]string{"--arrival=poisson", "--burstiness=0.5"}, "burstiness"},
		{"gamma with a shape", `"arrival": "gamma", "burstiness": 0.5`, "", `"arrival": "gamma", "burstiness": 0.5`,
			[]string{"--arrival=gamma", "--burstiness=0.5"}, ""},
		{"shape at its minimum", `"arrival": "gamma", "burstiness": 0.01`, "", `"arrival": "gamma", "burstiness": 0.01`,
			[]string{"--arrival=gamma", "--burstiness=0.01"}, ""},
		{"shape below its minimum", `"arrival": "gamma", "burstiness": 0.009`, "", `"arrival": "gamma", "burstiness": 0.009`,
			[]string{"--arrival=gamma", "--burstiness=0.009"}, "burstiness"},
		{"shape at its maximum", `"arrival": "gamma", "burstiness": 1000`, "", `"arrival": "gamma", "burstiness": 1000`,
			[]string{"--arrival=gamma", "--burstiness=1000"}, ""},
		{"shape above its maximum", `"arrival": "gamma", "burstiness": 1001`, "", `"arrival": "gamma", "burstiness": 1001`,
			[]string{"--arrival=gamma", "--burstiness=1001"}, "burstiness"},
		{"negative shape", `"arrival": "gamma", "burstiness": -1`, "", `"arrival": "gamma", "burstiness": -1`,
			[]string{"--arrival=gamma", "--burstiness=-1"}, "burstiness"},
		{"unknown arrival", `"arrival": "bursty"`, "", `"arrival": "bursty"`, []string{"--arrival=bursty"}, "arrival"},
		{"constant arrivals", `"arrival": "constant"`, "", `"arrival": "constant"`, []string{"--arrival=constant"}, ""},
		{"in flight at the bound", `"max_concurrency": 10000`, "", `"max_concurrency": 10000`, []string{"--max-concurrency=10000"}, ""},
		{"in flight over the bound", `"max_concurrency": 10001`, "", `"max_concurrency": 10001`, []string{"--max-concurrency=10001"}, "max_concurrency"},
		{"negative price", "", `"cost_per_hour": -1`, "", []string{"--cost-per-hour=-1"}, "cost_per_hour"},
		{"price at the bound", "", `"cost_per_hour": 1000000`, "", []string{"--cost-per-hour=1000000"}, ""},
		{"price over the bound", "", `"cost_per_hour": 1000001`, "", []string{"--cost-per-hour=1000001"}, "cost_per_hour"},
		{"timeout at the bound", "", `"timeout": "24h"`, "", []string{"--timeout=24h"}, ""},
		{"timeout over the bound", "", `"timeout": "24h1s"`, "", []string{"--timeout=24h1s"}, "timeout"},
		{"no timeout", "", `"timeout": "0s"`, "", []string{"--timeout=0s"}, "timeout"},
		{"workload and a prefix", "", "", `"workload": ` + inline + `, "prefix_len": 100`, []string{"--workload=" + wl, "--prefix-len=100"}, "workload"},
		{"workload and an input length", "", "", `"workload": ` + inline + `, "input_len": 64`, []string{"--workload=" + wl, "--input-len=64"}, "workload"},
		{"workload alone", "", "", `"workload": ` + inline, []string{"--workload=" + wl}, ""},
		{"rates and concurrency", "", "", `"rates": [1], "concurrency": [2], "num_prompts": 10`,
			[]string{"--rates=1", "--concurrency=2", "--num-prompts=10"}, "concurrency"},
	}

	// The sweep API: one target per case, none reachable, so that an
	// accepted sweep ends at once.
	var targets strings.Builder
	targets.WriteString("targets:\n")
	for i := range cases {
		fmt.Fprintf(&targets, "  - name: t%d\n    base_url: http://127.0.0.1:1\n", i)
	}
	dcfg, err := config.Parse([]byte(targets.String()), "t.yml")
	if err != nil {
		t.Fatal(err)
	}
	svc := sweepd.New(sweepd.Options{Dir: t.TempDir(), MaxConcurrent: len(cases)})
	t.Cleanup(svc.Stop)
	svc.Apply(dcfg)
	srv := httptest.NewServer(NewHandler(Options{Gatherer: prometheus.NewRegistry(), EnableSweeps: true, Sweeps: svc}))
	defer srv.Close()

	withLoad := func(spec string) string {
		if strings.Contains(spec, `"rates"`) || strings.Contains(spec, `"concurrency"`) {
			return spec
		}
		return `"rates": [1], "num_prompts": 10, ` + spec
	}
	for i, c := range cases {
		got := map[string]verdict{}
		if c.probe != "" {
			got["probe YAML"] = yamlVerdict(t, "targets:\n  - name: a\n    base_url: http://127.0.0.1:1\n    probes:\n"+
				`      - {"name": "p", "rate": 1, `+c.probe+"}\n")
		}
		if c.target != "" {
			got["target YAML"] = yamlVerdict(t, "targets:\n  - {\"name\": \"a\", \"base_url\": \"http://127.0.0.1:1\", "+c.target+"}\n")
		}
		if c.spec != "" {
			got["sweep YAML"] = yamlVerdict(t, "targets:\n  - name: a\n    base_url: http://127.0.0.1:1\n    sweeps:\n"+
				`      - {"name": "s", "every": "1h", `+withLoad(c.spec)+"}\n")
			body := fmt.Sprintf(`{"target": "t%d", %s}`, i, withLoad(c.spec))
			r := call(t, srv.Client(), "POST", srv.URL+"/api/v1/sweeps", jsonType, []byte(body))
			switch r.code {
			case 201:
				got["sweep API"] = verdict{}
			case 400:
				msg, _ := r.json(t)["error"].(string)
				key, reason, _ := strings.Cut(msg, ": ")
				got["sweep API"] = verdict{key, reason}
			default:
				t.Errorf("%s: the API answered %d %s", c.name, r.code, r.body)
			}
		}
		app := kingpin.New("llmprobe", "")
		f := &rundir.SweepFlags{}
		rundir.AddSweepFlags(app.Command("sweep", ""), f, sweep.SurfaceSweep)
		args := append([]string{"sweep", "--target=http://127.0.0.1:1"}, c.cli...)
		if !strings.Contains(strings.Join(args, " "), "--rates") && !strings.Contains(strings.Join(args, " "), "--concurrency") {
			args = append(args, "--rates=1", "--num-prompts=10")
		}
		if _, err := app.Parse(args); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := f.Config(); err == nil {
			got["sweep CLI"] = verdict{}
		} else if !rundir.IsFlagError(err) {
			t.Errorf("%s: the CLI failed otherwise: %v", c.name, err)
		} else {
			flag, reason, _ := strings.Cut(rundir.FlagErrorText(err), ": ")
			got["sweep CLI"] = verdict{asKeys(flag), asKeys(reason)}
		}

		var first verdict
		var firstSurface string
		for _, s := range []string{"probe YAML", "target YAML", "sweep YAML", "sweep API", "sweep CLI"} {
			v, ok := got[s]
			if !ok {
				continue
			}
			if v.key != c.want {
				t.Errorf("%s: %s: %v, want %s", c.name, s, v, map[bool]string{true: "accepted", false: "refused at " + c.want}[c.want == ""])
			}
			if firstSurface == "" {
				first, firstSurface = v, s
			} else if v != first {
				t.Errorf("%s: %s says %q, %s says %q", c.name, s, v, firstSurface, first)
			}
		}
		if len(got) < 2 {
			t.Errorf("%s: only %d surfaces", c.name, len(got))
		}
	}
}
