package workload

// ReservedBodyKeys are the request body keys extra_body may not set: the
// client owns them, or the Request has a field for them.
var ReservedBodyKeys = []string{
	"model", "prompt", "messages", "max_tokens", "max_completion_tokens", "min_tokens",
	"ignore_eos", "stream", "stream_options", "logprobs", "top_logprobs", "response_format",
	"temperature", "top_p", "seed", "stop", "reasoning_effort", "reasoning", "chat_template_kwargs",
	"tools", "tool_choice",
}

// MultiplyingBodyKeys are request body keys extra_body may not set either,
// with the reason: each makes one request cost the server more than the
// request llmprobe measures and counts against max_sweep_rate (several
// sequences: n, best_of, beam search), or sets the output length that
// llmprobe owns as max_tokens under another server's name.
var MultiplyingBodyKeys = map[string]string{
	"n":                    "it makes the server generate several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate",
	"best_of":              "it makes the server generate several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate",
	"num_return_sequences": "it makes the server generate several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate",
	"use_beam_search":      "beam search generates several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate",
	"beam_width":           "beam search generates several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate",
	"num_beams":            "beam search generates several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate",
	"max_new_tokens":       "it bounds the output under another server's name: llmprobe sets the output length as max_tokens (output_tokens)",
	"min_new_tokens":       "it bounds the output under another server's name: llmprobe sets the output length as max_tokens (output_tokens)",
	"max_length":           "it bounds the output under another server's name: llmprobe sets the output length as max_tokens (output_tokens)",
	"max_output_tokens":    "it bounds the output under another server's name: llmprobe sets the output length as max_tokens (output_tokens)",
}
