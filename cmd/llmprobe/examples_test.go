package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleConfigsCheck runs check-config on the shipped examples that
// the other tests do not load whole: the per-replica recipe (discovery:
// with kubernetes_sd_configs; its API key file moved to a temporary one)
// and the /probe example.
func TestExampleConfigsCheck(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "vllm")
	if err := os.WriteFile(key, []byte("sk-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../deploy/examples/per-replica.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("/etc/llmprobe/keys/vllm")) {
		t.Fatal("per-replica.yml no longer reads /etc/llmprobe/keys/vllm: update this test")
	}
	perReplica := filepath.Join(dir, "per-replica.yml")
	if err := os.WriteFile(perReplica, bytes.ReplaceAll(data, []byte("/etc/llmprobe/keys/vllm"), []byte(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"check-config", perReplica, "../../deploy/examples/probe/llmprobe.yml"}, &out, &errb); code != 0 {
		t.Fatalf("check-config: exit %d: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), ": OK"); n != 2 {
		t.Errorf("%d configs OK, want 2: %s", n, out.String())
	}
}
