package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writeImages writes each step's images figures (the images feature:
// requests with images, images, their encoded bytes, images/s) beside the
// server's multimodal cache hit rate where the server exposes its
// counters. It writes nothing when no step has either.
func writeImages(b *bytes.Buffer, res *sweep.Result) {
	have := false
	for _, st := range res.Steps {
		have = have || st.Stats.Images != nil || st.Server.MultimodalCache != nil && st.Server.MultimodalCache.Queries > 0
	}
	if !have {
		return
	}
	b.WriteString("### Images\n\nImages sent by the successful requests of the images feature (bytes encoded, before base64), " +
		"and the server's multimodal cache over the measured part (vLLM's `vllm:mm_cache_queries_total` and " +
		"`vllm:mm_cache_hits_total`, in images; not-recorded when the server does not expose them).\n\n" +
		"| step | requests with images | images | images / req | image MB | images / s | mm cache queries | mm cache hits | mm cache hit rate |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		im := st.Stats.Images
		if im == nil {
			im = &sweep.ImageStats{}
		}
		per := fingerprint.NotRecorded
		if im.Requests > 0 {
			per = num(float64(im.Images) / float64(im.Requests))
		}
		q, h, rate := fingerprint.NotRecorded, fingerprint.NotRecorded, fingerprint.NotRecorded
		if mm := st.Server.MultimodalCache; mm != nil {
			q, h, rate = num(mm.Queries), num(mm.Hits), valPct(mm.HitRate)
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", stepName(st), im.Requests, im.Images, per,
			num(float64(im.Bytes)/1e6), num(im.Throughput), q, h, rate)
	}
	b.WriteString("\n")
}
