package sweepd

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestSweepsInARowOnPrefixCachingServer (issue 21: the second scheduled
// sweep was flagged unintended-prefix-cache on every step): two daemon
// sweeps in a row with the same seed against a simulator with vLLM's prefix
// cache on (the default) both decide the knee and neither is flagged; each
// manifest's command line carries its own --prompt-nonce. A third sweep
// given the first one's prompt_nonce repeats its prompts and is flagged.
func TestSweepsInARowOnPrefixCachingServer(t *testing.T) {
	testutil.Slow(t)
	sc := simtest.Fast()
	sc.MaxNumSeqs, sc.StepBase = 1, 5*time.Millisecond // about 50 req/s
	url, _ := simtest.Start(t, sc)
	s := simService(t, t.TempDir(), newRecorder(), url)
	// 50 requests at 10 req/s: a 5 s window, so that the drain of the
	// step's last requests on a busy host (TPOT p99 over 100 ms at load
	// 25) leaves its served throughput above 90 % of the rate.
	spec := specOf(t, "rates: [10, 1000]\nnum_prompts: 50\ninput_len: 32\noutput_len: 4\nprefix_len: 32\nwarmups: 1\nseed: 7\nmax_send_lag: 250ms\nmax_sched_latency: 250ms")
	run := func(spec config.SweepSpec) (Status, int64) {
		t.Helper()
		done := startWait(t, s, spec)
		var res struct {
			PromptNonce int64 `json:"prompt_nonce"`
		}
		if err := json.Unmarshal(runFile(t, s, done.ID, artifacts.ResultFile), &res); err != nil || res.PromptNonce == 0 {
			t.Fatalf("result.json prompt_nonce %d (%v)", res.PromptNonce, err)
		}
		if cmd := string(runFile(t, s, done.ID, artifacts.CommandFile)); !strings.Contains(cmd, "--prompt-nonce "+strconv.FormatInt(res.PromptNonce, 10)) {
			t.Errorf("the command line does not repeat the run: %s", cmd)
		}
		return done, res.PromptNonce
	}
	first, n1 := run(spec)
	second, n2 := run(spec)
	if n1 == n2 {
		t.Errorf("both sweeps drew the prompt nonce %d", n1)
	}
	for i, done := range []Status{first, second} {
		if done.Status != StatusDone || done.Result == nil {
			t.Fatalf("sweep %d: %+v (result %+v)", i+1, done, done.Result)
		}
		// The process's CPU counts the simulator's (it runs in this test
		// process) and -race multiplies both: a busy host can flag a step
		// client-saturated. The knee is then not stated, accepted with that
		// evidence: a step flagged by the client's checks alone, and a
		// valid 10 req/s, when there is one, still the knee's lower end.
		if !done.Result.KneeFound || done.Result.Knee != 10 {
			flagged := false
			for _, st := range done.Steps {
				if st.Valid {
					if st.Label == "rate=10" && done.Result.Knee != 10 {
						t.Errorf("sweep %d: rate=10 valid, knee %v", i+1, done.Result.Knee)
					}
					continue
				}
				flagged = true
				for _, f := range st.Flags {
					if f != sweep.FlagClientSaturated && f != sweep.FlagClientReadLag {
						t.Errorf("sweep %d step %s flagged %v", i+1, st.Label, st.Flags)
					}
				}
			}
			if !flagged {
				t.Fatalf("sweep %d: knee %v found %v with no step flagged: %+v", i+1, done.Result.Knee, done.Result.KneeFound, done.Steps)
			}
			t.Logf("sweep %d: a step flagged by the client on this host: %+v", i+1, done.Steps)
		}
		for _, st := range done.Steps {
			if slices.Contains(st.Flags, sweep.FlagUnintendedPrefixCache) {
				t.Errorf("sweep %d step %s flagged %v", i+1, st.Label, st.Flags)
			}
		}
	}
	spec = with(t, spec, fmt.Sprintf("prompt_nonce: %d", n1))
	again, n3 := run(spec)
	if n3 != n1 || len(again.Steps) == 0 || !slices.Contains(again.Steps[0].Flags, sweep.FlagUnintendedPrefixCache) {
		t.Errorf("the first sweep's nonce given back (%d, used %d): steps %+v, want the first flagged %s", n1, n3, again.Steps,
			sweep.FlagUnintendedPrefixCache)
	}
}
