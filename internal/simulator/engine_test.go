package simulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// completion runs one non-streaming completion and returns its text and
// usage.
func completion(t *testing.T, base string, body map[string]any) (string, usageJSON) {
	t.Helper()
	text, u, err := tryCompletion(base, body)
	if err != nil {
		t.Fatal(err)
	}
	return text, u
}

// tryCompletion is completion for goroutines other than the test's.
func tryCompletion(base string, body map[string]any) (string, usageJSON, error) {
	b, _ := json.Marshal(body)
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		return "", usageJSON{}, err
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage usageJSON `json:"usage"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", usageJSON{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
		return "", usageJSON{}, fmt.Errorf("decode completion: %v", err)
	}
	return out.Choices[0].Text, out.Usage, nil
}

func TestPreemption(t *testing.T) {
	small := fastConfig()
	small.BlockSize = 4
	small.NumGPUBlocks = 16 // 64 tokens for 4 sequences that grow to 47 tokens each
	small.MaxModelLen = 64
	small.StepBase = 200 * time.Microsecond
	base, _ := simtest.Start(t, small)
	big := fastConfig() // same seed, room for everything: the reference output
	refBase, _ := simtest.Start(t, big)

	const n, outLen = 4, 40
	texts := make([]string, n)
	usages := make([]usageJSON, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			texts[i], usages[i], err = tryCompletion(base, map[string]any{"prompt": words("pre"+itoa(i), 8), "max_tokens": outLen, "ignore_eos": true})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if usages[i].CompletionTokens != outLen || usages[i].PromptTokens != 8 {
			t.Errorf("request %d: usage %+v", i, usages[i])
		}
		ref, _ := completion(t, refBase, map[string]any{"prompt": words("pre"+itoa(i), 8), "max_tokens": outLen, "ignore_eos": true})
		if texts[i] != ref {
			t.Errorf("request %d: text after preemption differs from the unpreempted run", i)
		}
	}
	mfs := scrape(t, base)
	if p := value(t, mfs, "vllm:num_preemptions_total"); p == 0 {
		t.Error("vllm:num_preemptions_total did not move")
	}
	if got := value(t, mfs, "vllm:generation_tokens_total"); got != n*outLen {
		t.Errorf("generation tokens %v, want %d (recompute must not emit tokens twice)", got, n*outLen)
	}
	if got := value(t, mfs, "vllm:kv_cache_usage_perc"); got != 0 {
		t.Errorf("kv usage %v after all finished", got)
	}
}

func TestPrefixCache(t *testing.T) {
	tests := []struct {
		name        string
		prefix      bool
		prompts     []string
		wantQueries float64
		wantHits    float64
	}{
		{
			name:    "same prompt hits its full blocks",
			prefix:  true,
			prompts: []string{words("a", 10), words("a", 10)},
			// 10 tokens = 2 full blocks of 4; the second request hits both.
			wantQueries: 20, wantHits: 8,
		},
		{
			name:    "fully cached prompt recomputes its last block",
			prefix:  true,
			prompts: []string{words("b", 8), words("b", 8)},
			// At least one token is computed, so only (8-1)/4 = 1 block hits.
			wantQueries: 16, wantHits: 4,
		},
		{
			name:        "shared first block only",
			prefix:      true,
			prompts:     []string{words("c", 4) + " x1 x2 x3 x4 x5", words("c", 4) + " y1 y2 y3 y4 y5"},
			wantQueries: 18, wantHits: 4,
		},
		{
			name:        "disabled",
			prefix:      false,
			prompts:     []string{words("d", 10), words("d", 10)},
			wantQueries: 0, wantHits: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.BlockSize = 4
			cfg.EnablePrefixCaching = tt.prefix
			base, _ := simtest.Start(t, cfg)
			for _, p := range tt.prompts {
				completion(t, base, map[string]any{"prompt": p, "max_tokens": 2})
			}
			mfs := scrape(t, base)
			q, h := value(t, mfs, "vllm:prefix_cache_queries_total"), value(t, mfs, "vllm:prefix_cache_hits_total")
			if q != tt.wantQueries || h != tt.wantHits {
				t.Errorf("queries %v hits %v, want %v %v", q, h, tt.wantQueries, tt.wantHits)
			}
		})
	}
}

func TestClientDisconnectAborts(t *testing.T) {
	cfg := fastConfig()
	cfg.StepBase = 5 * time.Millisecond
	base, _ := simtest.Start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions",
		strings.NewReader(`{"prompt":"a b c","max_tokens":200,"ignore_eos":true,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first event %q: %v", line, err)
	}
	if v := value(t, scrape(t, base), "vllm:num_requests_running"); v != 1 {
		t.Errorf("running %v during the stream", v)
	}
	cancel()
	resp.Body.Close()
	testutil.Eventually(t, "the abort", func() bool {
		mfs := scrape(t, base)
		return value(t, mfs, "vllm:request_success_total", "finished_reason", "abort") == 1 &&
			value(t, mfs, "vllm:num_requests_running") == 0 && value(t, mfs, "vllm:kv_cache_usage_perc") == 0
	})
}

func TestWaitingQueue(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxNumSeqs = 1
	cfg.MaxNumBatchedTokens = 16
	cfg.StepBase = 2 * time.Millisecond
	cfg.MaxModelLen, cfg.NumGPUBlocks = 8192, 1024
	base, _ := simtest.Start(t, cfg)
	// The first request holds the only running slot (8000 steps, 16 s at
	// the least) until the other two are seen waiting, and is aborted
	// then: on a busy host the two may arrive late, and a short first
	// request would finish before they queue (CI saw that under -race).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions",
		strings.NewReader(`{"prompt":"a b c","max_tokens":8000,"ignore_eos":true,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first event %q: %v", line, err)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if _, _, err := tryCompletion(base, map[string]any{"prompt": words("q"+itoa(i), 3), "max_tokens": 40, "ignore_eos": true}); err != nil {
				t.Error(err)
			}
		})
	}
	testutil.Eventually(t, "two waiting requests", func() bool {
		mfs := scrape(t, base)
		return value(t, mfs, "vllm:num_requests_waiting") == 2 && value(t, mfs, "vllm:num_requests_running") == 1 &&
			value(t, mfs, "vllm:kv_cache_usage_perc") > 0
	})
	cancel()
	wg.Wait()
	mfs := scrape(t, base)
	// The second of the two queued waited for the first's 40 steps of at
	// least 2 ms each.
	if q := mfs["vllm:request_queue_time_seconds"].GetMetric()[0].GetHistogram(); q.GetSampleSum() < 0.05 {
		t.Errorf("queue time sum %v s: one queued request waited for another's 40 steps of 2 ms (80 ms)", q.GetSampleSum())
	}
}

func TestCloseEndsStreams(t *testing.T) {
	cfg := fastConfig()
	cfg.StepBase = 5 * time.Millisecond
	sim, err := simulator.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srvDone := make(chan struct{})
	srv := &http.Server{Handler: sim.Handler()}
	l := testutil.Listen(t)
	go func() { srv.Serve(l); close(srvDone) }()
	resp, err := http.Post("http://"+l.Addr().String()+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"a","max_tokens":200,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	s := readSSE(t, resp) // returns once the handler ended the stream
	if s.done {
		t.Error("a stream ended by Close must not end with [DONE]")
	}
	srv.Close()
	<-srvDone
	if err := sim.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
