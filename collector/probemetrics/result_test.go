package probemetrics

import (
	"testing"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestResultKneeOfShard is issue 22 V5's push: a shard where no level
// passed published llmprobe_run_knee 0; it now publishes no knee, while an
// unsharded run (and a shard with a knee) still does.
func TestResultKneeOfShard(t *testing.T) {
	shard := &fingerprint.Shard{Index: 1, Count: 4}
	for _, tc := range []struct {
		name  string
		shard *fingerprint.Shard
		knee  sweep.Knee
		want  int
	}{
		{"shard without a passing level", shard, sweep.Knee{Upper: 10}, 0},
		{"shard with a knee", shard, sweep.Knee{Found: true, Level: 20, Low: 20, Upper: 40}, 1},
		{"unsharded run without a passing level", nil, sweep.Knee{Upper: 10}, 1},
	} {
		res := &sweep.Result{Mode: sweep.ModeOpen, Knee: tc.knee}
		res.Fingerprint.Load.Shard = tc.shard
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewResultCollector("r", res))
		got, err := testutil.GatherAndCount(reg, NameRunKnee)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: %d %s series, want %d", tc.name, got, NameRunKnee, tc.want)
		}
	}
}
