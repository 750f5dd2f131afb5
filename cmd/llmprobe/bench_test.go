package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/bench"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// TestBenchSmoke runs `llmprobe bench` with tiny settings (the test binary
// plays llmprobe for the children): the simulator, one accuracy step, one
// capacity rate and a short daemon window, then checks the table and the
// JSON report.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	defer func(e []string) { benchEnv = e }(benchEnv)
	benchEnv = []string{asMainEnv}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "bench.json")
	var stdout, stderr testutil.SyncBuffer
	code := run(context.Background(), []string{"bench", "--sections=accuracy,capacity,daemon", "--concurrency=2",
		"--rates=50", "--step-duration=300ms", "--light.ttft=2ms", "--light.gap=1ms", "--light.tokens=4",
		"--daemon.duration=300ms", "--daemon.warmup=100ms", "--dir=" + filepath.Join(dir, "work"), "--json=" + jsonPath},
		&stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"machine:", "placement:", "| accuracy", "2 concurrent streams", "| capacity",
		"open loop 50 req/s", "| daemon", "read delay p50"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Accuracy) != 1 || rep.Accuracy[0].Delay.Events == 0 || rep.Accuracy[0].Failed != 0 {
		t.Errorf("accuracy %+v", rep.Accuracy)
	}
	// Every event of every request is matched with the trace: 4 events per
	// request.
	if a := rep.Accuracy[0]; a.Delay.Events != 4*a.Delay.Requests || a.Delay.Skipped != 0 || a.Delay.Requests != a.Requests {
		t.Errorf("accuracy delays %+v of %d requests", a.Delay, a.Requests)
	}
	if len(rep.Capacity) != 1 || rep.Capacity[0].Requests == 0 || rep.Capacity[0].ServerCPUPer1k <= 0 {
		t.Errorf("capacity %+v", rep.Capacity)
	}
	if runtime.GOOS == "linux" && (rep.Machine.BusyPct <= 0 || rep.Machine.OthersPct < 0 || rep.Machine.OthersPct > rep.Machine.BusyPct) {
		t.Errorf("machine use %+v", rep.Machine)
	}
	if rep.Daemon == nil || rep.Daemon.Targets != 10 || (rep.Daemon.Measured && rep.Daemon.RSSMB <= 0) {
		t.Errorf("daemon %+v", rep.Daemon)
	}
}
