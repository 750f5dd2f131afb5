package redact

import "strings"

// PromptEcho replaces the pieces of a prompt that ScrubPrompt cuts out of a
// message.
const PromptEcho = "<prompt redacted>"

// MinPromptEcho is the shortest piece of a prompt ScrubPrompt removes: a
// message may share a word or two with a prompt by chance, not 17
// characters.
const MinPromptEcho = 17

// maxScrubMessage bounds the part of a message ScrubPrompt examines; the rest
// is dropped (messages are short; a longer one is cut, never kept unscrubbed).
const maxScrubMessage = 4096

// ScrubPrompt returns msg with every substring of at least MinPromptEcho
// bytes that also occurs in prompt replaced by PromptEcho (runs that touch
// or overlap become one). A server that echoes the request in its error
// ("... your prompt 'the quick brown ...' is too long") must not put prompt
// text into logs, metrics pages or artifacts. It is the one scrubber of
// echoed prompts: the streaming client applies it to every server message
// it records. Messages over 4 KiB are cut to 4 KiB first. The cost is one
// pass over the prompt with a rolling hash (no allocation per byte), so a
// long prompt costs microseconds, not a map lookup per window.
func ScrubPrompt(msg, prompt string) string {
	if len(msg) > maxScrubMessage {
		msg = msg[:maxScrubMessage]
	}
	const w = MinPromptEcho
	if len(msg) < w || len(prompt) < w {
		return msg
	}
	// Rabin-Karp over windows of w bytes: index the message's windows by
	// hash, then roll over the prompt and confirm candidates byte for byte.
	const base = 1099511628211 // FNV prime; arithmetic is mod 2^64
	var pow uint64 = 1         // base^(w-1)
	for range w - 1 {
		pow *= base
	}
	roll := func(s string) uint64 {
		var h uint64
		for i := range w {
			h = h*base + uint64(s[i])
		}
		return h
	}
	// A 64 Ki-bit filter of the message's hashes skips the map lookup for
	// almost every prompt window (at most 4 Ki windows are set).
	var filter [1 << 10]uint64
	windows := make(map[uint64][]int32, len(msg)-w+1)
	h := roll(msg)
	for i := 0; ; i++ {
		windows[h] = append(windows[h], int32(i))
		filter[h>>54] |= 1 << (h >> 48 & 63)
		if i+w >= len(msg) {
			break
		}
		h = (h-uint64(msg[i])*pow)*base + uint64(msg[i+w])
	}
	var covered []bool
	h = roll(prompt)
	for j := 0; ; j++ {
		if filter[h>>54]&(1<<(h>>48&63)) == 0 {
			// not a message window
		} else if starts, ok := windows[h]; ok {
			for _, i := range starts {
				if msg[i:int(i)+w] != prompt[j:j+w] {
					continue
				}
				if covered == nil {
					covered = make([]bool, len(msg))
				}
				for k := int(i); k < int(i)+w; k++ {
					covered[k] = true
				}
			}
		}
		if j+w >= len(prompt) {
			break
		}
		h = (h-uint64(prompt[j])*pow)*base + uint64(prompt[j+w])
	}
	if covered == nil {
		return msg
	}
	return replaceCovered(msg, covered)
}

// replaceCovered is msg with each run of its covered bytes replaced by
// PromptEcho.
func replaceCovered(msg string, covered []bool) string {
	var b strings.Builder
	for i := 0; i < len(msg); {
		if !covered[i] {
			b.WriteByte(msg[i])
			i++
			continue
		}
		b.WriteString(PromptEcho)
		for i < len(msg) && covered[i] {
			i++
		}
	}
	return b.String()
}
