package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/knob"
)

// TestDocsStateTheBounds holds docs/configuration.md to the defaults and
// bounds the code uses: each is one named constant (or a field of a
// Default… value), and the page must state that constant's value where it
// describes the key. Changing a constant fails here until the page follows.
func TestDocsStateTheBounds(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Split(string(raw), "\n")
	// section returns the lines under heading, up to the next heading.
	section := func(heading string) string {
		t.Helper()
		for i, l := range doc {
			if l != heading {
				continue
			}
			var b strings.Builder
			for _, l := range doc[i+1:] {
				if strings.HasPrefix(l, "#") {
					break
				}
				b.WriteString(l + "\n")
			}
			return b.String()
		}
		t.Fatalf("docs/configuration.md has no heading %q", heading)
		return ""
	}
	// row returns the table row of key in the section under heading.
	row := func(heading, key string) string {
		t.Helper()
		for _, l := range strings.Split(section(heading), "\n") {
			if strings.HasPrefix(l, "| `"+key+"` |") {
				return l
			}
		}
		t.Fatalf("docs/configuration.md: %s has no row for %s", heading, key)
		return ""
	}
	const global, target, probe = "## `global`", "## `targets[]`", "## `targets[].probes[]`"
	const modules = "## `modules` and `probe_allowed_targets` (`GET /probe`)"
	g, tc, p := DefaultGlobalConfig, DefaultTargetConfig, DefaultProbeConfig
	for _, c := range []struct {
		where, text, want string
	}{
		{"global.timeout default", row(global, "timeout"), "| `" + dur(g.Timeout) + "` |"},
		{"global.ttft_timeout default", row(global, "ttft_timeout"), "| `" + dur(g.TTFTTimeout) + "` |"},
		{"global.stall_timeout default", row(global, "stall_timeout"), "| `" + dur(g.StallTimeout) + "` |"},
		{"global.goodput_objective default", row(global, "goodput_objective"), fmt.Sprintf("| `%v` |", g.GoodputObjective)},
		{"global.max_rate default", row(global, "max_rate"), fmt.Sprintf("| `%v` |", float64(DefaultMaxRate))},
		{"global.max_rate bound", row(global, "max_rate"), "`<= " + short(arrival.MaxRate) + "`"},
		{"targets[].name pattern", row(target, "name"), "`" + namePattern + "`"},
		{"targets[].api default", row(target, "api"), "| `" + tc.API + "` |"},
		{"targets[].api_key_env pattern", row(target, "api_key_env"), "`" + envPattern + "`"},
		{"targets[].max_body_bytes default", row(target, "max_body_bytes"), "| `" + DefaultMaxBodyBytes.String() + "` |"},
		{"targets[].cost_per_hour bound", row(target, "cost_per_hour"), "at most " + thousands(knob.MaxCostPerHour)},
		{"targets[].probes default probe rate", row(target, "probes"), fmt.Sprintf("%v request/s", DefaultProbe.Rate)},
		{"targets[].probes default probe max_concurrency", row(target, "probes"), fmt.Sprintf("max concurrency %d", MinDefaultConcurrency)},
		{"probes[].name pattern", row(probe, "name"), "`" + namePattern + "`"},
		{"probes[].rate bound", row(probe, "rate"), fmt.Sprintf("(default %v;", float64(DefaultMaxRate))},
		{"probes[].rate lower bound", row(probe, "rate"), fmt.Sprintf("`>= %v` (one request per %v s", MinProbeRate, 1/MinProbeRate)},
		{"probes[].max_concurrency bound", row(probe, "max_concurrency"), fmt.Sprintf("`<= %d`", MaxProbeConcurrency)},
		{"probes[].arrival default", row(probe, "arrival"), "| `" + p.Arrival + "` |"},
		{"probes[].burstiness default", row(probe, "burstiness"), fmt.Sprintf("| `%v` |", p.Burstiness)},
		{"probes[].burstiness bounds", row(probe, "burstiness"), fmt.Sprintf("Between `%v` and `%v`", arrival.MinBurstiness, float64(arrival.MaxBurstiness))},
		{"probes[].burstiness gap CV", row(probe, "burstiness"), knob.GapCV(arrival.MinBurstiness) + " to " + knob.GapCV(arrival.MaxBurstiness)},
		{"probes[].max_concurrency default", row(probe, "max_concurrency"),
			fmt.Sprintf("| `%d × ceil(rate)`, at least %d, at most %d |", DefaultConcurrencyPerRate, MinDefaultConcurrency, MaxDefaultConcurrency)},
		{"load bounds: max_rate", section("### Bounds on the load a probe makes"), fmt.Sprintf("(default %v req/s)", float64(DefaultMaxRate))},
		{"load bounds: burstiness", section("### Bounds on the load a probe makes"), fmt.Sprintf("[%v, %v]", arrival.MinBurstiness, float64(arrival.MaxBurstiness))},
		{"load bounds: max_concurrency", section("### Bounds on the load a probe makes"),
			fmt.Sprintf("`%d × ceil(rate)` clamped to [%d, %d]", DefaultConcurrencyPerRate, MinDefaultConcurrency, MaxDefaultConcurrency)},
		{"names pattern", section("## Rules that apply everywhere"), "`" + namePattern + "`"},
		{"targets[].attribution_headers bound", row(target, "attribution_headers"), fmt.Sprintf("at most %d header names", client.MaxAttributionHeaders)},
		{"targets[].attribution_headers value length", row(target, "attribution_headers"), fmt.Sprintf("cut at %d bytes", prober.MaxHeaderValueLen)},
		{"targets[].attribution_headers values", row(target, "attribution_headers"), fmt.Sprintf("past %d distinct values", prober.MaxAttributionValues)},
		{"modules bound", row(modules, "modules"), fmt.Sprintf("at most %d modules", MaxModules)},
		{"probe_allowed_targets bound", row(modules, "probe_allowed_targets"), fmt.Sprintf("at most %d (", MaxProbeAllowedTargets)},
		{"probe_allowed_targets length", row(modules, "probe_allowed_targets"), fmt.Sprintf("at most %d bytes", MaxProbeTargetLen)},
		{"config file cap", section("## Checking a file"), "**" + ByteSize(MaxConfigFileBytes).String() + "**"},
		{"api_key_file cap", section("## Secrets"), "at most " + ByteSize(maxKeyFileBytes).String()},
		{"http_config secret file cap", section("## HTTP options (`http_config`)"), "at most " + ByteSize(client.MaxSecretFileBytes).String()},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("docs/configuration.md, %s: want %q in\n%s", c.where, c.want, c.text)
		}
	}
	rules, err := os.ReadFile("../../docs/rules-and-dashboards.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("(at most %d, values 1–%d bytes)", MaxTargetLabels, MaxTargetLabelValueLen); !strings.Contains(string(rules), want) {
		t.Errorf("docs/rules-and-dashboards.md: want the bounds of a target's labels, %q", want)
	}
}

// dur writes a duration as the docs do: 2m, 30s, 1h30m.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// short writes a float as the docs do: 1e6, 0.5.
func short(v float64) string {
	return strings.Replace(strconv.FormatFloat(v, 'g', -1, 64), "e+0", "e", 1)
}

// thousands writes an integral float with thousands separators: 1,000,000.
func thousands(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
