package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// TestServeShard: with --shard the daemon probes only the targets it owns,
// and says so on /metrics and the landing page.
func TestServeShard(t *testing.T) {
	down := testutil.FreeAddr(t)
	var cfg strings.Builder
	cfg.WriteString("targets:\n")
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	owned := 0
	var mine, other string
	for _, n := range names {
		fmt.Fprintf(&cfg, "  - name: %s\n    base_url: http://%s\n    probes:\n      - name: p\n        rate: 20\n", n, down)
		if manager.Owner(n, 3) == 1 {
			owned++
			mine = n
		} else {
			other = n
		}
	}
	if owned == 0 || mine == "" || other == "" {
		t.Fatalf("test names give shard 1/3 %d targets: pick others", owned)
	}
	path := filepath.Join(t.TempDir(), "llmprobe.yml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startServe(t, "--config.file", path, "--shard", "1/3")
	body := waitMetric(t, base, fmt.Sprintf(`llmprobe_requests_total{outcome="connect",probe="p",target="%s"}`, mine))
	for _, want := range []string{
		fmt.Sprintf(`llmprobe_shard_targets{shard="1/3",state="owned"} %d`, owned),
		fmt.Sprintf(`llmprobe_shard_targets{shard="1/3",state="configured"} %d`, len(names)),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, fmt.Sprintf(`target="%s"`, other)) {
		t.Errorf("/metrics has series of target %s, which shard 1/3 does not own:\n%s", other, body)
	}
	if _, page := get(t, base+"/"); !strings.Contains(page, fmt.Sprintf("shard 1/3: probing %d of the config&#39;s %d targets", owned, len(names))) {
		t.Errorf("landing page lacks the shard line:\n%s", page)
	}
}
