package sweep

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// prepareFeatures builds the plan of the workload's request features
// (validated already) and, before any load is sent, refuses a LoRA adapter
// that /v1/models does not list: every request naming it would fail.
func (r *runner) prepareFeatures() error {
	plan, err := workload.NewRequestPlan(r.cfg.Workload.Request)
	if err != nil {
		return fieldErr("Workload", "%w", err)
	}
	plan.SetNonce(uint64(r.cfg.PromptNonce))
	r.features = plan
	for i, m := range plan.LoRAModels() {
		if len(r.info.Models) > 0 && !slices.Contains(r.info.Models, m) {
			return fmt.Errorf("workload request feature lora %d: adapter %q is not served by the target (/v1/models lists: %s)",
				i, m, strings.Join(r.info.Models, ", "))
		}
	}
	return nil
}
