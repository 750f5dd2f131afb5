package artifacts

import "github.com/llmprobe/llmprobe/prober"

// appendFeatures appends the request-feature fields of r (features,
// images, image_bytes, no_stream, logprobs: all omitted when empty) as
// encoding/json does.
func appendFeatures(b []byte, r *prober.Record) []byte {
	if len(r.Features) > 0 {
		b = append(b, `,"features":[`...)
		for i, f := range r.Features {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f)
		}
		b = append(b, ']')
	}
	if r.Images != 0 {
		b = appendInt(b, `,"images":`, int64(r.Images))
	}
	if r.ImageBytes != 0 {
		b = appendInt(b, `,"image_bytes":`, r.ImageBytes)
	}
	if r.NoStream {
		b = append(b, `,"no_stream":true`...)
	}
	if r.Logprobs {
		b = append(b, `,"logprobs":true`...)
	}
	return b
}
