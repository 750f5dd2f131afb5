package simulator_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// sessionTurn sends a non-streamed chat request of prompt under session
// sid and returns the replica that answered and the cached prompt tokens.
func sessionTurn(t *testing.T, base, sid, prompt string) (string, int) {
	t.Helper()
	var headers []string
	if sid != "" {
		headers = []string{"X-Session-ID", sid}
	}
	resp := post(t, base+"/v1/chat/completions", map[string]any{
		"messages": []map[string]string{{"role": "user", "content": prompt}}, "max_completion_tokens": 2, "ignore_eos": true,
	}, headers...)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var body struct {
		Usage struct {
			Details *struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Usage.Details == nil {
		t.Fatal("no usage.prompt_tokens_details")
	}
	return resp.Header.Get("X-Served-By"), body.Usage.Details.Cached
}

// TestSessionStickiness: with --served-by-replicas, a request naming its
// session (X-Session-ID) is answered by one replica for all its turns and
// finds its earlier turns cached there; --fault.session-scatter 1 sends
// every one of them elsewhere, where nothing of it is cached (each replica
// caches apart); requests without a session still rotate by number.
func TestSessionStickiness(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxModelLen, cfg.NumGPUBlocks, cfg.BlockSize = 2048, 1024, 16
	cfg.ServedBy, cfg.ServedByReplicas = "replica", 4
	cfg.EnablePromptTokensDetails = true
	base, sim := simtest.Start(t, cfg)
	prompt := words("w", 200) // a dozen full blocks

	for s := range 3 {
		sid := "conv-" + strconv.Itoa(s)
		home, _ := sessionTurn(t, base, sid, prompt)
		for turn := 2; turn <= 5; turn++ {
			got, cached := sessionTurn(t, base, sid, prompt)
			if got != home {
				t.Fatalf("session %s turn %d: answered by %q, turn 1 by %q", sid, turn, got, home)
			}
			if cached < 128 {
				t.Errorf("session %s turn %d on its own replica: %d cached tokens, want its earlier prompt (>= 128)", sid, turn, cached)
			}
		}
	}

	f := sim.Faults()
	sid, fresh := "conv-scattered", words("z", 200) // a prompt no replica has seen
	home, _ := sessionTurn(t, base, sid, fresh)
	f.SessionScatter = 1
	sim.SetFaults(f)
	seen := map[string]bool{}
	for turn := 2; turn <= 12; turn++ {
		got, cached := sessionTurn(t, base, sid, fresh)
		if got == home {
			t.Fatalf("scattered turn %d answered by the session's own replica %q", turn, home)
		}
		if !seen[got] && cached != 0 {
			t.Errorf("turn %d, first on %q: %d cached tokens, want 0 (that replica never saw the prompt)", turn, got, cached)
		}
		seen[got] = true
	}
	if len(seen) < 2 {
		t.Errorf("scattered turns all went to %v, want them spread over the other replicas", seen)
	}

	rotated := map[string]bool{}
	for range 4 {
		got, _ := sessionTurn(t, base, "", prompt)
		rotated[got] = true
	}
	if len(rotated) != 4 {
		t.Errorf("requests without a session answered by %v, want the 4 replicas in turn", rotated)
	}
}

// TestSessionHeaderValidation: --session-header must be a header name.
func TestSessionHeaderValidation(t *testing.T) {
	c := simulator.DefaultConfig()
	c.SessionHeader = "X Session"
	if err := c.Validate(); err == nil || err.Error() != `--session-header must be a header name, got "X Session"` {
		t.Fatalf("got %v", err)
	}
	c.SessionHeader = ""
	c.Faults.SessionScatter = 1.5
	if err := c.Validate(); err == nil || err.Error() != "--fault.session-scatter must be a probability in [0, 1], got 1.5" {
		t.Fatalf("got %v", err)
	}
}
