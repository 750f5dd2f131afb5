package sweep

import "strings"

// PromptEcho replaces the pieces of a prompt that scrubPrompt cuts out of
// an error message.
const PromptEcho = "<prompt text>"

// minPromptEcho is the shortest piece of a prompt scrubPrompt removes: a
// message may share a word or two with a prompt by chance, not 17
// characters.
const minPromptEcho = 17

// scrubPrompt returns msg with every substring of at least minPromptEcho
// characters that also occurs in prompt replaced by PromptEcho (runs that
// touch or overlap become one). A server that echoes the request in its
// error ("... your prompt 'the quick brown ...' is too long") must not put
// prompt text into records.jsonl or errors-redacted.jsonl without
// --save-prompts. It costs one pass over the prompt per message.
func scrubPrompt(msg, prompt string) string {
	if len(msg) < minPromptEcho || len(prompt) < minPromptEcho {
		return msg
	}
	// Index the message's windows, then slide over the prompt once.
	windows := make(map[string][]int, len(msg)-minPromptEcho+1)
	for i := 0; i+minPromptEcho <= len(msg); i++ {
		w := msg[i : i+minPromptEcho]
		windows[w] = append(windows[w], i)
	}
	covered := make([]bool, len(msg))
	hit := false
	for j := 0; j+minPromptEcho <= len(prompt); j++ {
		for _, i := range windows[prompt[j:j+minPromptEcho]] {
			hit = true
			for k := i; k < i+minPromptEcho; k++ {
				covered[k] = true
			}
		}
	}
	if !hit {
		return msg
	}
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
