package endpoint

import (
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// WithFeatures adds to req what its draw of the workload's request
// features carries (workload.RequestPlan.Draw): "stream": false, logprobs,
// response_format with its check, a LoRA adapter as the model, min_tokens,
// the reasoning effort, the tools with their check, the images,
// the sampling parameters and extra_body, and the feature names for
// Record.Features. It is the one place where features reach a request, for
// the daemon's probes and sweeps alike; a zero draw changes nothing.
func WithFeatures(req *client.Request, d workload.RequestDraw) {
	req.NoStream = d.NoStream
	req.Logprobs, req.TopLogprobs = d.Logprobs, d.TopLogprobs
	req.Body = d.Body
	req.Features = d.Names
	if d.Model != "" {
		req.Model = d.Model
	}
	if d.MinTokens > 0 {
		req.MinTokens = d.MinTokens
	}
	if d.Schema != nil {
		req.Check = d.Schema.Check
	}
	req.ReasoningEffort = d.ReasoningEffort
	if d.Tools != nil {
		req.Tools = make([]client.Tool, len(d.Tools.Tools))
		for i, t := range d.Tools.Tools {
			req.Tools[i] = client.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		}
		req.ToolChoice, req.CheckTool = d.Tools.Choice, d.Tools.Check
	}
	if d.Images != nil {
		req.Images = make([]client.Image, len(d.Images))
		for i, im := range d.Images {
			req.Images[i] = client.Image(im)
		}
	}
}
