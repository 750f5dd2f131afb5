package endpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober"
)

// NotListed returns the error of a model that a non-empty /v1/models list
// does not hold — the configured model in Discover, a LoRA adapter named
// by a request feature in the daemon's probes — classified as
// prober.ClassInvalidResponse with ErrModelNotListed as its cause and the
// message "GET /v1/models: model M not listed (it serves: A, B)",
// redacted. It returns nil when models holds model or is empty (nothing
// is known to be missing).
func (e *Endpoint) NotListed(model string, models []string) *Error {
	if len(models) == 0 || slices.Contains(models, model) {
		return nil
	}
	return &Error{Class: prober.ClassInvalidResponse, Err: ErrModelNotListed,
		Msg: e.Redact(fmt.Sprintf("GET /v1/models: model %s not listed (it serves: %s)", model, e.short(strings.Join(models, ", "))))}
}
