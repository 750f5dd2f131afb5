package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestScrubPrompt(t *testing.T) {
	prompt := "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
	tests := []struct {
		name, msg, want string
	}{
		{"no echo", "HTTP 400: too long", "HTTP 400: too long"},
		{"a whole echo", "bad prompt '" + prompt + "'", "bad prompt '" + PromptEcho + "'"},
		{"a piece of 17 characters", "[charlie delta ech]", "[" + PromptEcho + "]"},
		{"16 characters stay", "[charlie delta ec]", "[charlie delta ec]"},
		{"two pieces", "[alpha bravo charlie] and [golf hotel india juliet]", "[" + PromptEcho + "] and [" + PromptEcho + "]"},
		{"echo at the very end", "x" + prompt[len(prompt)-20:], "x" + PromptEcho},
		{"short prompt", "hello", "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScrubPrompt(tt.msg, prompt); got != tt.want {
				t.Errorf("ScrubPrompt(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

// naiveScrub is the definition ScrubPrompt implements: every window of
// MinPromptEcho bytes of msg that occurs in prompt is covered (the
// replacement of the covered runs is TestScrubPrompt's to check).
func naiveScrub(msg, prompt string) string {
	if len(msg) < MinPromptEcho || len(prompt) < MinPromptEcho {
		return msg
	}
	covered := make([]bool, len(msg))
	for i := 0; i+MinPromptEcho <= len(msg); i++ {
		if strings.Contains(prompt, msg[i:i+MinPromptEcho]) {
			for k := i; k < i+MinPromptEcho; k++ {
				covered[k] = true
			}
		}
	}
	return replaceCovered(msg, covered)
}

// TestScrubPromptMatchesDefinition compares the rolling-hash scrubber with
// the naive definition on random messages built from pieces of a prompt.
func TestScrubPromptMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the quick brown fox jumps over the lazy dog and then some more words follow here")
	gen := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()[:n]
	}
	for i := range 2000 {
		prompt := gen(20 + rng.IntN(400))
		var msg strings.Builder
		for msg.Len() < 300 {
			if rng.IntN(2) == 0 {
				a := rng.IntN(len(prompt))
				b := min(len(prompt), a+rng.IntN(40))
				msg.WriteString(prompt[a:b])
			} else {
				msg.WriteString(gen(1 + rng.IntN(30)))
			}
		}
		m := msg.String()
		if got, want := ScrubPrompt(m, prompt), naiveScrub(m, prompt); got != want {
			t.Fatalf("case %d: ScrubPrompt(%q, %q)\n got %q\nwant %q", i, m, prompt, got, want)
		}
	}
}

func TestScrubPromptBoundsMessage(t *testing.T) {
	msg := strings.Repeat("z", 10*maxScrubMessage)
	if got := ScrubPrompt(msg, "prompt text that is long enough"); len(got) != maxScrubMessage {
		t.Errorf("len = %d, want %d", len(got), maxScrubMessage)
	}
}

// BenchmarkScrubPrompt scrubs a 256-byte server message against a 400 KB
// prompt (about 100k tokens), the worst case of a failing long request.
func BenchmarkScrubPrompt(b *testing.B) {
	prompt := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 10000)
	msg := "HTTP 400: This model's maximum context length is 4096 tokens. However, you requested 100000 tokens: 'lorem ipsum dolor sit amet' ..."
	b.SetBytes(int64(len(prompt)))
	for b.Loop() {
		ScrubPrompt(msg, prompt)
	}
}
