package client

import (
	"strings"
	"testing"
)

// TestPayloadImages: a chat request's images become image_url parts after
// the text of the last user message (a user message of their own when
// there is none), a Responses request's input_image parts; the other APIs
// refuse images.
func TestPayloadImages(t *testing.T) {
	c := newClient(t, Options{BaseURL: "http://h", Model: "m", API: APIChat})
	imgs := []Image{{URL: "data:image/png;base64,AAAA", Bytes: 3}, {URL: "data:image/jpeg;base64,BBBB", Bytes: 3}}
	b, err := c.payload(&Request{Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "look"}}, MaxTokens: 2, Images: imgs})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"look"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,BBBB"}}]}],` +
		`"max_completion_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`
	if string(b) != want {
		t.Errorf("payload\n got %s\nwant %s", b, want)
	}
	b, err = c.payload(&Request{Messages: []Message{{Role: "system", Content: "s"}}, Images: imgs[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"role":"system","content":"s"},{"role":"user","content":[{"type":"image_url"`) {
		t.Errorf("payload without a user message: %s", b)
	}
	c = newClient(t, Options{BaseURL: "http://h", API: APIResponses})
	b, err = c.payload(&Request{Messages: []Message{{Role: "user", Content: "look"}}, Images: imgs[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"input":[{"role":"user","content":[{"type":"input_text","text":"look"},` +
		`{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"auto"}]}],"stream":true}`; string(b) != want {
		t.Errorf("responses payload\n got %s\nwant %s", b, want)
	}
	for _, api := range []string{APICompletions, APIEmbeddings} {
		c := newClient(t, Options{BaseURL: "http://h", API: api})
		if _, err := c.payload(&Request{Prompt: "x", Inputs: []string{"x"}, Images: imgs}); err == nil ||
			err.Error() != "images are sent with the chat and responses APIs only" {
			t.Errorf("api %s: %v", api, err)
		}
	}
}
