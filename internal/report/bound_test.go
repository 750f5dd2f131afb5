package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestTableKneeBound (issue 40 Deliver 1): a search that ended below a
// level its client could not measure states the bound with the client as
// the limit, in the table and the verdict; a sweep whose every step the
// client flagged names the client as the limit instead of "no valid level".
func TestTableKneeBound(t *testing.T) {
	step := func(level float64, flags ...string) *sweep.Step {
		return &sweep.Step{Label: "rate=" + num(level), Level: level, Validity: sweep.Validity{Valid: len(flags) == 0, Flags: flags, Reasons: flags}}
	}
	res := &sweep.Result{KneeUnit: "req/s", Complete: true, Mode: sweep.ModeOpen,
		Steps: []*sweep.Step{step(119, sweep.FlagClientSaturated), step(84), step(84)},
		Knee: sweep.Knee{Low: 84, Bound: &sweep.KneeBoundDetail{AtLeast: 84, Confirmed: true, Unmeasurable: 100, Flags: []string{sweep.FlagClientSaturated},
			Client: true, Shards: 5, ShardsFor: 369}}}
	out := tableText(t, res)
	want := "knee ≥ 84 req/s: this client keeps up to 84 req/s on this host; shard the sweep (5 shards) to measure up to 369 req/s"
	if !strings.Contains(out, "\n"+want+"\n") || strings.Contains(out, "knee: ") {
		t.Errorf("table lacks the line %q:\n%s", want, out)
	}
	if v := strings.Join(verdict(res), "\n"); !strings.Contains(v, "**Capacity: "+want+".**") || !strings.Contains(v, "run 5 shards") {
		t.Errorf("verdict:\n%s", v)
	}

	res.Knee = sweep.Knee{}
	res.Steps = []*sweep.Step{step(119, sweep.FlagClientSaturated, sweep.FlagClientReadLag), step(59.5, sweep.FlagClientSaturated)}
	out = tableText(t, res)
	checkText(t, "table", out, out, []string{"knee: not found: the client is the limit: it could not keep its own schedule on this host at any " +
		"level tried, down to 59.5 req/s (every step flagged client-saturated or client-read-lag)"}, nil)
	res.Steps[1] = step(59.5, sweep.FlagNotIdle)
	if out := tableText(t, res); !strings.Contains(out, "knee: not found (no valid level)") {
		t.Errorf("a not-idle step blamed on the client:\n%s", out)
	}
}
