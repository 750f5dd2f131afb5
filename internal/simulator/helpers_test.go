package simulator_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

// fastConfig is a small, quick engine for API tests.
func fastConfig() simulator.Config {
	c := simulator.DefaultConfig()
	c.MaxNumSeqs = 16
	c.MaxNumBatchedTokens = 512
	c.MaxModelLen = 256
	c.NumGPUBlocks = 256
	c.StepBase = time.Millisecond
	c.StepPerSeq = 10 * time.Microsecond
	c.StepPerPrefillToken = time.Microsecond
	return c
}

// post sends body as JSON and returns the response; the caller closes it.
func post(t *testing.T, url string, body any, headers ...string) *http.Response {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

// postJSON posts and decodes a JSON answer, checking the status.
func postJSON(t *testing.T, url string, body any, wantStatus int, out any) http.Header {
	t.Helper()
	resp := post(t, url, body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("POST %s: status %d, want %d; body %s", url, resp.StatusCode, wantStatus, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return resp.Header
}

// sse is a parsed SSE stream.
type sse struct {
	header http.Header
	events []string // data payloads, without "data: "
	done   bool     // [DONE] seen
}

// readSSE reads a whole event stream.
func readSSE(t *testing.T, resp *http.Response) sse {
	t.Helper()
	defer resp.Body.Close()
	s := sse{header: resp.Header}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		if data == "[DONE]" {
			s.done = true
			continue
		}
		s.events = append(s.events, data)
	}
	return s
}

// streamChunk is the union of completion and chat chunks.
type streamChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int    `json:"index"`
		Text  string `json:"text"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageJSON `json:"usage"`
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func decodeChunks(t *testing.T, s sse) []streamChunk {
	t.Helper()
	out := make([]streamChunk, len(s.events))
	for i, e := range s.events {
		if err := json.Unmarshal([]byte(e), &out[i]); err != nil {
			t.Fatalf("event %d %q: %v", i, e, err)
		}
	}
	return out
}

// words returns a prompt of n distinct words.
func words(prefix string, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = prefix + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + itoa(i)
	}
	return strings.Join(w, " ")
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// readAll reads and closes a 200 response's body.
func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return b
}

// getOK GETs url and requires a 200; the caller closes the body.
func getOK(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return resp
}

// getJSON GETs url, requires a 200 and decodes the JSON answer into v
// (when not nil).
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp := getOK(t, url)
	defer resp.Body.Close()
	if v == nil {
		return
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
