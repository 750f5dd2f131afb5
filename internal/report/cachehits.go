package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writeCacheHits writes the prompt tokens each step found in the server's
// prefix or prompt cache: the server's counters and the responses' usage
// (prompt_tokens_details.cached_tokens), with the run's prompt nonce. It
// writes nothing when no step has either figure.
func writeCacheHits(b *bytes.Buffer, res *sweep.Result) {
	have := false
	for _, st := range res.Steps {
		have = have || st.Server.PrefixCacheHits.Known || st.Stats.CachedTokensReports > 0
	}
	if !have {
		return
	}
	b.WriteString("### Cache hits\n\nPrompt tokens the server served from its prefix or prompt cache during each step's " +
		"measured part: its counters' deltas (hits of the tokens looked up) and the cached tokens its responses' usage " +
		"reported. With a fresh prompt nonce they are what the shared prefix explains; more is flagged unintended-prefix-cache.")
	if res.PromptNonce != 0 {
		fmt.Fprintf(b, " Prompt nonce %d (`--prompt-nonce %d` repeats these prompts).", res.PromptNonce, res.PromptNonce)
	}
	b.WriteString("\n\n| step | server cache hits | of tokens looked up | per request | usage cached tokens | requests reporting |\n" +
		"|---|--:|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		sv, x := st.Server, &st.Stats
		per := fingerprint.NotRecorded
		if sv.PrefixCacheHits.Known && x.Requests > 0 {
			per = num(sv.PrefixCacheHits.Value / float64(x.Requests))
		}
		usage, reports := fingerprint.NotRecorded, "0"
		if x.CachedTokensReports > 0 {
			usage, reports = fmt.Sprint(x.CachedTokens), fmt.Sprintf("%d of %d", x.CachedTokensReports, x.Requests)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", stepName(st), val(sv.PrefixCacheHits), val(sv.PrefixCacheQueries),
			per, usage, reports)
	}
	b.WriteString("\n")
}
