package sweep

import "github.com/llmprobe/llmprobe/prober/workload"

// WithPromptRewrite sets the test-only seam of o: f replaces every item
// (warmups, measured, probe) just before its request is built, e.g. to make
// prompts repeat. It exists only in this package's test binary.
func WithPromptRewrite(o *Options, f func(workload.Item) workload.Item) { o.rewritePrompt = f }
