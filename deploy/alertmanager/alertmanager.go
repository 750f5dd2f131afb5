// Package alertmanager embeds the shipped Alertmanager configuration
// (alertmanager.yml: the routing llmprobe's alerts assume and their
// inhibition rules) for the generators that derive other forms from it,
// such as the Helm chart's AlertmanagerConfig (dashboards/gen).
package alertmanager

import _ "embed"

// Config is alertmanager.yml as committed.
//
//go:embed alertmanager.yml
var Config []byte
