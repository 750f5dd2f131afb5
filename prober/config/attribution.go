package config

import (
	"fmt"

	"github.com/llmprobe/llmprobe/prober/client"
)

// validateAttributionHeaders checks a target's attribution_headers: at
// most client.MaxAttributionHeaders HTTP header names, none twice
// (case-insensitive); client.NewAttribution is the one check.
func validateAttributionHeaders(names []string) error {
	if len(names) == 0 {
		return nil
	}
	if _, err := client.NewAttribution(names); err != nil {
		return fmt.Errorf("%w", err)
	}
	return nil
}
