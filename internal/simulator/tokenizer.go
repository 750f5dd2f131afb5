package simulator

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
)

// The toy tokenizer: one token per whitespace-separated word (strings.Fields),
// no special tokens. Token ids live in [0, VocabSize). Id i is spelled as a
// fixed three-syllable word (consonant+vowel ×3, base 80), so
// tokenize(detokenize(ids)) == ids for every valid id list; any other word
// maps to the FNV-1a hash of its bytes modulo VocabSize, so detokenize keeps
// the token count of any text but not its spelling.

// VocabSize is the toy tokenizer's vocabulary size.
const VocabSize = 32000

const (
	consonants = "bdfghjklmnprstvz" // 16
	vowels     = "aeiou"            // 5
	syllables  = len(consonants) * len(vowels)
)

// vocabWord spells token id (0 <= id < VocabSize).
func vocabWord(id int) string {
	var b [6]byte
	d := [3]int{id / (syllables * syllables), (id / syllables) % syllables, id % syllables}
	for i, s := range d {
		b[2*i] = consonants[s/len(vowels)]
		b[2*i+1] = vowels[s%len(vowels)]
	}
	return string(b[:])
}

// wordID is the token id of one word.
func wordID(w string) int {
	if len(w) == 6 {
		v, ok := 0, true
		for i := 0; i < 3 && ok; i++ {
			c := strings.IndexByte(consonants, w[2*i])
			o := strings.IndexByte(vowels, w[2*i+1])
			if c < 0 || o < 0 {
				ok = false
				break
			}
			v = v*syllables + c*len(vowels) + o
		}
		if ok && v < VocabSize {
			return v
		}
	}
	h := fnv.New64a()
	h.Write([]byte(w))
	return int(h.Sum64() % VocabSize)
}

// tokenize returns the token ids of text.
func tokenize(text string) []int {
	words := strings.Fields(text)
	ids := make([]int, len(words))
	for i, w := range words {
		ids[i] = wordID(w)
	}
	return ids
}

// detokenize spells ids as words joined by single spaces.
func detokenize(ids []int) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		if id < 0 || id >= VocabSize {
			return "", fmt.Errorf("token id %d is out of vocabulary [0, %d)", id, VocabSize)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabWord(id))
	}
	return b.String(), nil
}

// chatMessage is one message of a chat request.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentText extracts the text of a message's content: a string, an array
// of {"type":"text","text":...} parts, or null/absent (empty).
func (m chatMessage) contentText() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("message content must be a string or an array of content parts")
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", fmt.Errorf("content part type %q is not supported by the simulator (only \"text\")", p.Type)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, " "), nil
}

// renderChat applies the simulator's chat template: each message becomes
// "<|role|> content" on its own line, and with addGenerationPrompt a final
// "<|assistant|>" line. Each role marker is one token.
func renderChat(msgs []chatMessage, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	for i, m := range msgs {
		if strings.TrimSpace(m.Role) == "" || len(strings.Fields(m.Role)) != 1 {
			return "", fmt.Errorf("messages[%d].role must be one non-empty word", i)
		}
		text, err := m.contentText()
		if err != nil {
			return "", fmt.Errorf("messages[%d]: %w", i, err)
		}
		b.WriteString("<|" + m.Role + "|> ")
		b.WriteString(text)
		b.WriteByte('\n')
	}
	if addGenerationPrompt {
		b.WriteString("<|assistant|>\n")
	}
	return b.String(), nil
}
