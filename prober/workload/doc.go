// Package workload owns what llmprobe sends: the workload spec (input and
// output token-length distributions, a shared prefix, ignore_eos), seeded
// length samplers (fixed, uniform with vLLM's range ratio or min/max,
// lognormal, weighted choice), and the Generator that turns a spec and a
// seed into deterministic per-request Items whose prompts are sized with the
// target's own tokenizer: the server's POST /tokenize when it has one
// (ServerTokenizer), otherwise an estimate calibrated from the server's
// usage.prompt_tokens (Calibrate). The sizing method is reported for the
// run's fingerprint (Info.Method). Every prompt begins, after the shared
// prefix, with the item's nonce, so no two items of a run share more than
// the prefix whatever the tokenizer (Generator.DistinctPrompts counts the
// distinct prompts served). Every length is bounded (MaxLength), and
// the Generator's prompt cache is held within a byte budget
// (DefaultCacheBudget, least recently used evicted first).
//
// Token counts here are the server's: special tokens (BOS) and, for chat,
// the chat template count as part of the input, so a prompt of
// PrefixTokens + InputTokens tokens is what the server reports as
// usage.prompt_tokens. docs/workload.md describes the distributions and the
// sizing algorithm.
package workload
