package artifacts

import (
	"slices"

	"github.com/llmprobe/llmprobe/prober"
)

// appendAttribution appends the attribution fields of r (request_id_echo,
// attribution with its keys sorted, backend: all omitted when empty) as
// encoding/json does.
func appendAttribution(b []byte, r *prober.Record) []byte {
	if r.RequestIDEcho != "" {
		b = append(b, `,"request_id_echo":`...)
		b = appendJSONString(b, r.RequestIDEcho)
	}
	if len(r.Attribution) > 0 {
		keys := make([]string, 0, len(r.Attribution))
		for k := range r.Attribution {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"attribution":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, r.Attribution[k])
		}
		b = append(b, '}')
	}
	if r.Backend != "" {
		b = append(b, `,"backend":`...)
		b = appendJSONString(b, r.Backend)
	}
	return b
}
