package simulator_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// encodeImage encodes a w×h image of one colour.
func encodeImage(t *testing.T, w, h int, format string, shade uint8) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = shade
	}
	var buf bytes.Buffer
	var err error
	mime := "image/png"
	if format == "jpeg" {
		mime = "image/jpeg"
		err = jpeg.Encode(&buf, img, nil)
	} else {
		err = png.Encode(&buf, img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

func imageMessage(text string, urls ...string) []map[string]any {
	parts := []map[string]any{{"type": "text", "text": text}}
	for _, u := range urls {
		parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}})
	}
	return []map[string]any{{"role": "user", "content": parts}}
}

// TestChatImages: image_url parts count as ceil(w/28)·ceil(h/28) prompt
// tokens each (docs/simulator.md), the multimodal cache counters count the
// images looked up and those seen before, and a malformed image is a 400
// naming what is wrong.
func TestChatImages(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxModelLen = 4096
	base, _ := simtest.Start(t, cfg)
	var usage struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	postJSON(t, base+"/v1/chat/completions", map[string]any{"messages": imageMessage("one two three"), "max_tokens": 1}, http.StatusOK, &usage)
	textOnly := usage.Usage.PromptTokens

	a, b := encodeImage(t, 56, 30, "png", 10), encodeImage(t, 100, 28, "jpeg", 200)
	postJSON(t, base+"/v1/chat/completions", map[string]any{"messages": imageMessage("one two three", a, b), "max_tokens": 1}, http.StatusOK, &usage)
	// 56x30: 2·2 = 4 tokens; 100x28: 4·1 = 4 tokens.
	if got, want := usage.Usage.PromptTokens, textOnly+4+4; got != want {
		t.Errorf("prompt tokens with two images %d, want %d (text alone %d)", got, want, textOnly)
	}
	mfs := scrape(t, base)
	if q, h := value(t, mfs, "vllm:mm_cache_queries_total"), value(t, mfs, "vllm:mm_cache_hits_total"); q != 2 || h != 0 {
		t.Errorf("after two new images: mm cache queries %v hits %v, want 2 and 0", q, h)
	}
	postJSON(t, base+"/v1/chat/completions", map[string]any{"messages": imageMessage("other words", a), "max_tokens": 1}, http.StatusOK, nil)
	mfs = scrape(t, base)
	if q, h := value(t, mfs, "vllm:mm_cache_queries_total"), value(t, mfs, "vllm:mm_cache_hits_total"); q != 3 || h != 1 {
		t.Errorf("after a known image: mm cache queries %v hits %v, want 3 and 1", q, h)
	}

	bad := func(url, want string) {
		t.Helper()
		resp := post(t, base+"/v1/chat/completions", map[string]any{"messages": imageMessage("x", url), "max_tokens": 1})
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("%.40s: status %d body %s, want 400 with %q", url, resp.StatusCode, body, want)
		}
	}
	bad("https://example.com/cat.png", "must be a data URL")
	bad("data:image/png,raw", "must be a base64 data URL")
	bad("data:image/png;base64,!!!", "invalid base64")
	bad("data:image/gif;base64,"+base64.StdEncoding.EncodeToString([]byte("GIF89a....")), "neither PNG nor JPEG")
	bad("data:image/png;base64,"+base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nbroken")), "malformed image")
	resp := post(t, base+"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user",
		"content": []map[string]any{{"type": "image_url"}}}}, "max_tokens": 1})
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("image_url part without image_url: status %d", resp.StatusCode)
	}
	mfs = scrape(t, base)
	if q := value(t, mfs, "vllm:mm_cache_queries_total"); q != 3 {
		t.Errorf("refused requests were looked up: mm cache queries %v, want 3", q)
	}
}

// TestResponsesInputImages: the Responses API's input_image parts (the url
// a string) count as chat's image_url parts do, and reach the multimodal
// cache counters.
func TestResponsesInputImages(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxModelLen = 4096
	base, _ := simtest.Start(t, cfg)
	input := func(urls ...string) []map[string]any {
		parts := []map[string]any{{"type": "input_text", "text": "one two three"}}
		for _, u := range urls {
			parts = append(parts, map[string]any{"type": "input_image", "image_url": u, "detail": "auto"})
		}
		return []map[string]any{{"role": "user", "content": parts}}
	}
	var out struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	postJSON(t, base+"/v1/responses", map[string]any{"input": input(), "max_output_tokens": 1}, http.StatusOK, &out)
	textOnly := out.Usage.InputTokens
	img := encodeImage(t, 84, 28, "png", 3) // 3·1 tokens
	postJSON(t, base+"/v1/responses", map[string]any{"input": input(img, img), "max_output_tokens": 1}, http.StatusOK, &out)
	if out.Usage.InputTokens != textOnly+2*3 {
		t.Errorf("input tokens %d, want %d + 2 images of 3", out.Usage.InputTokens, textOnly)
	}
	mfs := scrape(t, base)
	if q, h := value(t, mfs, "vllm:mm_cache_queries_total"), value(t, mfs, "vllm:mm_cache_hits_total"); q != 2 || h != 1 {
		t.Errorf("mm cache queries %v hits %v, want 2 and 1 (the same image twice)", q, h)
	}
	resp := post(t, base+"/v1/responses", map[string]any{"input": []map[string]any{{"role": "user",
		"content": []map[string]any{{"type": "input_image", "image_url": map[string]string{"url": img}}}}}})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `an input_image part needs \"image_url\": \"data:...\"`) {
		t.Errorf("input_image with an object: status %d body %s", resp.StatusCode, body)
	}
}
