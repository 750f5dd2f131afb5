package sweep_test

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestPromptNonceSetting: --prompt-nonce is a table setting on every
// surface, bounded below by 0 (a negative nonce is refused naming the
// flag); NewPromptNonce draws positive, distinct nonces.
func TestPromptNonceSetting(t *testing.T) {
	st := sweep.LookupField("PromptNonce")
	if st.Flag != "prompt-nonce" || st.Key != "prompt_nonce" ||
		st.Surfaces != sweep.SurfaceSweep|sweep.SurfaceCompare|sweep.SurfaceSpec {
		t.Fatalf("setting %+v", st)
	}
	var c sweep.Config
	if err := st.Apply(&c, int64(-1)); err == nil || !strings.Contains(err.Error(), "must be") {
		t.Errorf("a negative nonce: %v", err)
	}
	if err := st.Apply(&c, int64(42)); err != nil || c.PromptNonce != 42 {
		t.Errorf("nonce 42: %v, %d", err, c.PromptNonce)
	}
	seen := map[int64]bool{}
	for range 100 {
		n := sweep.NewPromptNonce()
		if n <= 0 || seen[n] {
			t.Fatalf("NewPromptNonce drew %d (seen %v)", n, seen[n])
		}
		seen[n] = true
	}
}
