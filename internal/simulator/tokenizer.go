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
// of {"type":"text","text":...} parts (image parts left out, not decoded),
// or null/absent (empty).
func (m chatMessage) contentText() (string, error) {
	text, _, err := m.parts(false)
	return text, err
}

// content extracts the text and the images of a message's content (see
// parts).
func (m chatMessage) content() (string, []chatImage, error) { return m.parts(true) }

// parts extracts the text and, with images, the images of a message's
// content: a string, an array of {"type":"text","text":...} and
// {"type":"image_url","image_url":{"url":"data:..."}} parts (chat), or of
// input_text and {"type":"input_image","image_url":"data:..."} parts (the
// Responses API) (images.go), or null/absent (empty).
func (m chatMessage) parts(images bool) (string, []chatImage, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil, nil
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     *string         `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", nil, fmt.Errorf("message content must be a string or an array of content parts")
	}
	texts := make([]string, 0, len(parts))
	var ims []chatImage
	for i, p := range parts {
		switch {
		case (p.Type == "text" || p.Type == "input_text") && p.Text != nil:
			texts = append(texts, *p.Text)
		case (p.Type == "image_url" || p.Type == "input_image") && !images:
		case p.Type == "image_url" || p.Type == "input_image":
			url, err := partImageURL(p.Type, p.ImageURL)
			if err != nil {
				return "", nil, fmt.Errorf("content[%d]: %w", i, err)
			}
			if len(ims) == maxImagesPerRequest {
				return "", nil, fmt.Errorf("content[%d]: more than %d images", i, maxImagesPerRequest)
			}
			im, err := decodeImageURL(url)
			if err != nil {
				return "", nil, fmt.Errorf("content[%d]: %w", i, err)
			}
			ims = append(ims, im)
		default:
			return "", nil, fmt.Errorf("content part type %q is not supported by the simulator (only \"text\", \"image_url\", \"input_text\" and \"input_image\")", p.Type)
		}
	}
	return strings.Join(texts, " "), ims, nil
}

// renderChat applies the simulator's chat template: each message becomes
// "<|role|> content" on its own line, and with addGenerationPrompt a final
// "<|assistant|>" line. Each role marker is one token; an image part is its
// imageTokens words after the message's text (images.go).
func renderChat(msgs []chatMessage, addGenerationPrompt bool) (string, error) {
	text, _, err := renderChatImages(msgs, addGenerationPrompt)
	return text, err
}

// renderChatImages is renderChat that also returns the images of the
// messages, in order.
func renderChatImages(msgs []chatMessage, addGenerationPrompt bool) (string, []chatImage, error) {
	var b strings.Builder
	var images []chatImage
	for i, m := range msgs {
		if strings.TrimSpace(m.Role) == "" || len(strings.Fields(m.Role)) != 1 {
			return "", nil, fmt.Errorf("messages[%d].role must be one non-empty word", i)
		}
		text, ims, err := m.content()
		if err != nil {
			return "", nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		if len(images)+len(ims) > maxImagesPerRequest {
			return "", nil, fmt.Errorf("messages[%d]: more than %d images in the request", i, maxImagesPerRequest)
		}
		images = append(images, ims...)
		b.WriteString("<|" + m.Role + "|> ")
		b.WriteString(text)
		for _, im := range ims {
			im.words(&b)
		}
		b.WriteByte('\n')
	}
	if addGenerationPrompt {
		b.WriteString("<|assistant|>\n")
	}
	return b.String(), images, nil
}
