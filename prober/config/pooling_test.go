package config

import (
	"strings"
	"testing"
)

// TestPoolingTargets accepts api embeddings and rerank with batch_size and
// rerank_path, and refuses each out of place or out of bounds, naming the
// key and line.
func TestPoolingTargets(t *testing.T) {
	c, err := Parse([]byte("targets:\n  - {name: e, base_url: http://x, api: embeddings, batch_size: 8}\n"+
		"  - {name: r, base_url: http://y, api: rerank, batch_size: 4, rerank_path: /score}\n"), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Targets[0].BatchSize != 8 || c.Targets[1].RerankPath != "/score" {
		t.Errorf("targets %+v", c.Targets)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"targets:\n  - {name: a, base_url: http://x, api: embeddings, batch_size: 4096}\n",
			"f.yml:2: targets[0].batch_size: must be in [0, 2048], got 4096"},
		{"targets:\n  - {name: a, base_url: http://x, api: chat, batch_size: 4}\n",
			"f.yml:2: targets[0].batch_size: is for api embeddings and rerank only, this target's api is chat"},
		{"targets:\n  - {name: a, base_url: http://x, api: embeddings, rerank_path: /score}\n",
			"f.yml:2: targets[0].rerank_path: is for api rerank only, this target's api is embeddings"},
		{"targets:\n  - {name: a, base_url: http://x, api: rerank, rerank_path: /v2/rerank}\n",
			`f.yml:2: targets[0].rerank_path: must be /v1/rerank, /rerank or /score, got "/v2/rerank"`},
	} {
		if _, err := Parse([]byte(tt.yaml), "f.yml"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %s", tt.yaml, err, tt.want)
		}
	}
}
