// Package dashboards owns llmprobe's Grafana dashboards: their definitions
// in Go (All), the JSON model they are rendered to (Render), and the
// rendered files committed in this directory, which are the product (import
// them into Grafana, or use the ConfigMap in deploy/kubernetes/monitoring).
// `go run ./dashboards/gen` rewrites the JSON files and the Kubernetes forms
// from the definitions; a test fails when the committed files are stale.
//
// Every dashboard uses a ${datasource} variable and model, target and probe
// variables, and no UID of any other installation.
package dashboards

import (
	"embed"
	"io/fs"
)

//go:embed *.json
var files embed.FS

// FS holds the committed dashboard JSON files, read-only.
var FS fs.FS = files
