package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// verdictSection returns the lines of a section of compare's verdict text
// (report.WriteVerdictText: "rules", "figures"), from its heading to the
// blank line that ends it, and whether the output has it.
func verdictSection(stdout, name string) ([]string, bool) {
	_, rest, ok := strings.Cut(stdout, "\n"+name+":\n")
	if !ok {
		return nil, false
	}
	text, _, _ := strings.Cut(rest, "\n\n")
	return strings.Split(text, "\n"), true
}

// compareStarved reports whether a compare that exited inconclusive did so
// only because the client could not keep its rate: the one rule not ok in
// its output is "client not saturated", failed. On a starved machine that
// is the right answer. It checks the evidence in the rounds' own run
// directories under dir: a step flagged client-saturated, and each such
// step with at least sweep.MinSendsOverLimit sends over the run's send-lag
// limit, a send-lag p99 over it, or a client CPU over its cap.
func compareStarved(t *testing.T, code int, stdout, dir string) bool {
	t.Helper()
	if code != compare.ExitInconclusive {
		return false
	}
	rules, ok := verdictSection(stdout, "rules")
	if !ok {
		return false
	}
	clientFailed := false
	for _, l := range rules {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "ok" {
			continue
		}
		if f[0] != "failed" || !strings.HasPrefix(strings.Join(f[1:], " "), compare.RuleClient+" ") {
			return false
		}
		clientFailed = true
	}
	if !clientFailed {
		return false
	}
	results, _ := filepath.Glob(filepath.Join(dir, "*-r*-*", artifacts.ResultFile))
	flagged := 0
	for _, p := range results {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Fingerprint struct {
				Load struct {
					Validity struct {
						MaxSendLagMS float64 `json:"max_send_lag_ms"`
						MaxClientCPU float64 `json:"max_client_cpu"`
					} `json:"validity"`
				} `json:"load"`
			} `json:"fingerprint"`
			Steps []struct {
				Label    string `json:"label"`
				Validity struct {
					Flags          []string `json:"flags"`
					SendLagP99MS   float64  `json:"send_lag_p99_ms"`
					SendsOverLimit int      `json:"sends_over_send_lag_limit"`
					ClientCPU      float64  `json:"client_cpu_cores"`
					CPUChecked     bool     `json:"client_cpu_checked"`
				} `json:"validity"`
			} `json:"steps"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		th := r.Fingerprint.Load.Validity
		for _, s := range r.Steps {
			v := s.Validity
			if !strings.Contains(strings.Join(v.Flags, ","), sweep.FlagClientSaturated) {
				continue
			}
			flagged++
			if v.SendsOverLimit < sweep.MinSendsOverLimit && v.SendLagP99MS <= th.MaxSendLagMS && !(v.CPUChecked && v.ClientCPU > th.MaxClientCPU) {
				t.Errorf("%s: step %s flagged %s without its evidence: %+v", p, s.Label, sweep.FlagClientSaturated, v)
			}
		}
	}
	if flagged == 0 {
		t.Errorf("compare says the client was saturated, but no round under %s has a step flagged %s", dir, sweep.FlagClientSaturated)
		return false
	}
	t.Logf("compare inconclusive: the client did not keep the rate on this machine in %d steps, and said so", flagged)
	return true
}

// compareNoisy reports whether a compare exited inconclusive only because
// its figures were too noisy to decide: every rule ok, and every figure not
// ok "undecided" (an interval too wide for the limit), none regressed or
// improved beyond it. On a machine whose scheduling stalls are as long as
// the simulator's decode steps, that is the right answer; the caller runs
// the case again, and skips with the figures if the machine stays so.
func compareNoisy(code int, stdout string) bool {
	if code != compare.ExitInconclusive {
		return false
	}
	rules, ok := verdictSection(stdout, "rules")
	if !ok {
		return false
	}
	for _, l := range rules {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "ok" {
			return false
		}
	}
	figures, ok := verdictSection(stdout, "figures")
	if !ok {
		return false
	}
	undecided := 0
	for _, l := range figures {
		switch f := strings.Fields(l); {
		case len(f) == 0 || f[0] == "ok":
		case f[0] == "undecided":
			undecided++
		default:
			return false
		}
	}
	return undecided > 0
}
