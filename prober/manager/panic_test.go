package manager_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// TestPanicLogRedactsKey: a recovered panic whose value and stack quote the
// API key (an error built from a server's echo of the header) logs neither
// with the key, and still logs the panic and the stack.
func TestPanicLogRedactsKey(t *testing.T) {
	const key = "sk-panic-SECRET-4242"
	var buf testutil.SyncBuffer
	v := errors.New("server said: Authorization: Bearer " + key)
	stack := []byte("goroutine 7 [running]:\nmain.f(" + key + ")\n")
	if err := manager.LogProbePanic(log.NewLogfmtLogger(&buf), key, v, stack); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, key) || strings.Contains(out, "SECRET-4242") {
		t.Fatalf("the panic log quotes the key:\n%s", out)
	}
	for _, want := range []string{"panic in probe request", "server said", "goroutine 7"} {
		if !strings.Contains(out, want) {
			t.Errorf("the panic log lacks %q:\n%s", want, out)
		}
	}
}
