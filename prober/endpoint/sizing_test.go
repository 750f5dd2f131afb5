package endpoint

import (
	"context"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestDiscoverSizing: without a model, the server's first listed one is
// sized through its /tokenize; an unreachable server is an error and
// nothing to close.
func TestDiscoverSizing(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	s, closeIdle, err := DiscoverSizing(context.Background(), Options{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	defer closeIdle()
	if s.Method() != workload.MethodServerTokenize || s.Tokenizer == nil {
		t.Errorf("method %s, tokenizer %v: want the server's /tokenize", s.Method(), s.Tokenizer)
	}
	if n, err := s.Tokenizer.Count(context.Background(), "one two three"); err != nil || n <= 0 {
		t.Errorf("Count = %d, %v", n, err)
	}

	s, closeIdle, err = DiscoverSizing(context.Background(), Options{BaseURL: "http://" + testutil.RefusedAddr(t)})
	if err == nil || s != nil || closeIdle != nil {
		t.Errorf("unreachable: sizing %v, close %v, err %v; want only an error", s, closeIdle != nil, err)
	}
}
