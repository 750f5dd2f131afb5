package rundir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// loggingServer stands for a server writing its log: a line per completed
// request of a step, appended to the log file.
type loggingServer struct {
	sweep.NopObserver
	mu   sync.Mutex
	path string
}

func (l *loggingServer) RequestDone(st *sweep.Step, _ *prober.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "server: request of %s done\n", st.Label)
	f.Close()
}

func TestServerLog(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	logPath := filepath.Join(t.TempDir(), "vllm.log")
	if err := os.WriteFile(logPath, []byte("server: started before the sweep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, url)
	o := testOptions(t)
	o.ServerLog = logPath
	o.Observer = &loggingServer{path: logPath}
	out := mustRun(t, cfg, o)
	b := mustRead(t, filepath.Join(out.Dir, ServerLogFile))
	got := string(b)
	for _, want := range []string{"### step 0 rate=20: bytes 33 to ", "### step 1 rate=40: bytes ", "server: request of rate=40 done\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("server.log lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "server: request of rate=20 done\n"); n != 20 {
		t.Errorf("server.log holds %d lines of step 0, want 20", n)
	}
	if strings.Contains(got, "before the sweep") {
		t.Error("server.log holds a line written before the first step")
	}
	m, err := artifacts.ReadManifest(out.Dir)
	if err != nil || m.ServerLog != ServerLogFile {
		t.Errorf("manifest server_log %q, %v", m.ServerLog, err)
	}
	if v, err := artifacts.Verify(out.Dir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) > 0 {
		t.Errorf("verify: %v %v", v.Problems, err)
	}

	// Without --server-log: no file, and the manifest says not-recorded.
	out, err = Run(context.Background(), testConfig(t, url), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, ServerLogFile)); !os.IsNotExist(err) {
		t.Errorf("server.log without --server-log: %v", err)
	}
	if m, _ := artifacts.ReadManifest(out.Dir); m.ServerLog != fingerprint.NotRecorded {
		t.Errorf("manifest server_log %q, want %s", m.ServerLog, fingerprint.NotRecorded)
	}
}
