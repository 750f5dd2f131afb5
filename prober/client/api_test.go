package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestAPITable checks the table's rows: names unique, every row complete,
// Lookup and ParseAPI find each row and refuse another name naming them all.
func TestAPITable(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range APIs() {
		if a.Name == "" || seen[a.Name] || len(a.Paths) == 0 || a.Operation == "" || a.body == nil || a.Pooling != (a.decode == decodePooling) {
			t.Errorf("row %q: name, paths, operation and body are required, the name once, pooling decoded as pooling", a.Name)
		}
		seen[a.Name] = true
		if a.Streams && a.streamEnd == "" {
			t.Errorf("row %s streams: it needs the name of its stream's end", a.Name)
		}
		if a.Streams == a.Pooling {
			t.Errorf("row %s: a pooling API is sent non-streamed, a generating one streams", a.Name)
		}
		if got, ok := Lookup(a.Name); !ok || got.Name != a.Name {
			t.Errorf("Lookup(%s) = %v, %v", a.Name, got.Name, ok)
		}
	}
	if len(seen) != len(apis) {
		t.Errorf("%d rows, %d names", len(apis), len(seen))
	}
	if _, ok := Lookup(DefaultAPI); !ok {
		t.Errorf("DefaultAPI %q is no row", DefaultAPI)
	}
	_, err := ParseAPI("images")
	if want := `must be completions, chat, responses, embeddings, rerank or messages, got "images"`; err == nil || err.Error() != want {
		t.Errorf("ParseAPI(images) = %v, want %s", err, want)
	}
	if got := NamesWith(WithImages, "and"); got != "chat and responses" {
		t.Errorf("NamesWith(images) = %q", got)
	}
	if got := NamesWith(WithConversations, "or"); got != "chat or messages" {
		t.Errorf("NamesWith(conversations) = %q", got)
	}
}

// TestSimulatorServesEveryAPI sends a request of every row to each of its
// paths on the built-in simulator: the simulator's routes cover the table
// (it cannot import this package, which tests against it).
func TestSimulatorServesEveryAPI(t *testing.T) {
	url, _ := simtest.Start(t, simulator.DefaultConfig())
	for _, a := range APIs() {
		for _, p := range a.Paths {
			t.Run(a.Name+p, func(t *testing.T) {
				o := Options{BaseURL: url, API: a.Name, Timeout: 30 * time.Second}
				if len(a.Paths) > 1 {
					o.RerankPath = p
				}
				c := newClient(t, o)
				if !strings.HasSuffix(c.URL(), p) {
					t.Errorf("url %s, want path %s", c.URL(), p)
				}
				req := Request{ID: "r1", Prompt: "hello there", MaxTokens: 4}
				if a.Messages {
					req.Prompt, req.Messages = "", []Message{{Role: "user", Content: "hello there"}}
				}
				if a.Pooling {
					req.Inputs = []string{"a b", "c d"}
				}
				rec := do(t, context.Background(), c, req)
				if !rec.OK() || rec.NoStream == a.Streams {
					t.Errorf("%s %s: %s %s (no stream %v)", a.Name, p, rec.Error, rec.ErrorMessage, rec.NoStream)
				}
			})
		}
	}
}
