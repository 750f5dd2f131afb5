package sweep

import (
	"strings"
	"testing"
)

func TestExpectedReusePerRequest(t *testing.T) {
	tests := []struct {
		name string
		r    PrefixReuse
		want int
	}{
		{"one nonce word of margin, rounded down to the block", PrefixReuse{PrefixTokens: 63, OverheadTokens: 1, BlockSize: 16, Prompts: 10, NonceAlphabet: 64}, 64},
		{"a second word past B prompts", PrefixReuse{PrefixTokens: 61, OverheadTokens: 1, BlockSize: 16, Prompts: 100, NonceAlphabet: 64}, 64},
		{"just below a block boundary", PrefixReuse{PrefixTokens: 60, OverheadTokens: 1, BlockSize: 16, Prompts: 100, NonceAlphabet: 64}, 48},
		{"a third word past B² prompts", PrefixReuse{PrefixTokens: 10, OverheadTokens: 1, Prompts: 5000, NonceAlphabet: 64}, 14},
		{"no prefix: less than a block", PrefixReuse{OverheadTokens: 1, BlockSize: 16, Prompts: 1 << 20, NonceAlphabet: 64}, 0},
		{"unknown block: not rounded", PrefixReuse{PrefixTokens: 10, OverheadTokens: 1, Prompts: 1, NonceAlphabet: 64}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.ExpectedReusePerRequest(); got != tt.want {
				t.Errorf("ExpectedReusePerRequest() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCheckPrefixReuse(t *testing.T) {
	// 20 requests of a 64-token prefix and 32 input tokens against a
	// 16-token block cache: each may hit the 64 prefix tokens.
	base := func(hits float64) PrefixReuse {
		return PrefixReuse{
			Requests: 20, Queries: known(20 * 96), Hits: known(hits), Preemptions: known(0),
			PrefixTokens: 64, MaxPromptTokens: 96, BlockSize: 16, Prompts: 40, NonceAlphabet: 64, NonceTested: true,
		}
	}
	tests := []struct {
		name     string
		r        func() PrefixReuse
		wantFlag bool
		reason   string // a substring of the reason
		note     string // a substring of the note
	}{
		{"the prefix explains the hits", func() PrefixReuse { return base(20 * 64) }, false, "", ""},
		{"within the margin (5 % of the queries)", func() PrefixReuse { return base(20*64 + 90) }, false, "", ""},
		{"one more block per request: repeated prompts", func() PrefixReuse { return base(20 * 80) }, true,
			"hit 1600 of 1920 prompt tokens (80.0 per request), more than the shared prefix explains (at most 64 per request", ""},
		{"from the usage's cached tokens, token by token (llama.cpp)", func() PrefixReuse {
			r := base(20 * 90)
			r.BlockSize, r.FromUsage = 0, true
			return r
		}, true, "the server's responses reported cached (usage.prompt_tokens_details.cached_tokens) 1800 of 1920 prompt tokens", ""},
		{"preemptions explain the extra reuse", func() PrefixReuse {
			r := base(20 * 80)
			r.Preemptions = known(4)
			return r
		}, false, "", ""},
		{"short nonces: said, not flagged", func() PrefixReuse {
			r := base(20 * 80)
			r.ShortNonceItems = 3
			return r
		}, false, "", "3 requests had an input too short for a full nonce"},
		{"untested nonce words: said, not flagged", func() PrefixReuse {
			r := base(20 * 80)
			r.NonceTested = false
			return r
		}, false, "", "could not be tested"},
		{"no counters: nothing to judge", func() PrefixReuse {
			r := base(20 * 80)
			r.Hits = Figure{}
			return r
		}, false, "", ""},
		{"no prefix, whole prompts cached", func() PrefixReuse {
			return PrefixReuse{Requests: 20, Queries: known(20 * 33), Hits: known(19 * 32), BlockSize: 16, Prompts: 20,
				NonceAlphabet: 64, NonceTested: true, MaxPromptTokens: 33}
		}, true, "at most 0 per request: prefix 0 + overhead 0 tokens + nonce words, rounded down to the 16-token cache block", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flag, reason, note := CheckPrefixReuse(tt.r())
			if flag != tt.wantFlag {
				t.Fatalf("flag %v, want %v (reason %q, note %q)", flag, tt.wantFlag, reason, note)
			}
			if (tt.reason == "") != (reason == "") || !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q, want one containing %q", reason, tt.reason)
			}
			if (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
				t.Errorf("note %q, want one containing %q", note, tt.note)
			}
		})
	}
}

func known(v float64) Figure { return Figure{Value: v, Known: true} }
