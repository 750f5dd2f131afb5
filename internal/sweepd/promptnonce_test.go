package sweepd

import (
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
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
	sc := fastSim()
	sc.MaxNumSeqs, sc.StepBase = 1, 5*time.Millisecond // about 50 req/s
	url, _ := simtest.Start(t, sc)
	s := newService(t, t.TempDir(), newRecorder())
	s.Apply(targetsConfig(t, "", "sim", url))
	spec := config.SweepSpec{Rates: config.Rates{Values: []float64{10, 1000}}, NumPrompts: 20, InputLen: 32, OutputLen: 4,
		PrefixLen: 32, Warmups: 1, Seed: 7, MaxSendLag: lag, MaxSchedLatency: lag}
	read := func(id, name string) string {
		t.Helper()
		f, err := s.File(id, name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	run := func(spec config.SweepSpec) (Status, int64) {
		t.Helper()
		st, err := s.Start("sim", spec)
		if err != nil {
			t.Fatal(err)
		}
		done := wait(t, s, st.ID)
		var res struct {
			PromptNonce int64 `json:"prompt_nonce"`
		}
		if err := json.Unmarshal([]byte(read(st.ID, artifacts.ResultFile)), &res); err != nil || res.PromptNonce == 0 {
			t.Fatalf("result.json prompt_nonce %d (%v)", res.PromptNonce, err)
		}
		if cmd := read(st.ID, artifacts.CommandFile); !strings.Contains(cmd, "--prompt-nonce "+strconv.FormatInt(res.PromptNonce, 10)) {
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
		if done.Status != StatusDone || done.Result == nil || !done.Result.KneeFound || done.Result.Knee != 10 {
			t.Fatalf("sweep %d: %+v (result %+v)", i+1, done, done.Result)
		}
		for _, st := range done.Steps {
			if slices.Contains(st.Flags, sweep.FlagUnintendedPrefixCache) {
				t.Errorf("sweep %d step %s flagged %v", i+1, st.Label, st.Flags)
			}
		}
	}
	spec.PromptNonce = n1
	again, n3 := run(spec)
	if n3 != n1 || len(again.Steps) == 0 || !slices.Contains(again.Steps[0].Flags, sweep.FlagUnintendedPrefixCache) {
		t.Errorf("the first sweep's nonce given back (%d, used %d): steps %+v, want the first flagged %s", n1, n3, again.Steps,
			sweep.FlagUnintendedPrefixCache)
	}
}
