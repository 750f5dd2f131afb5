//go:build tools

// Package tools pins the project's planned dependencies in go.mod so that
// packages developed in parallel share one module graph. It is never built.
package tools

import (
	_ "github.com/VictoriaMetrics/metrics"
	_ "github.com/alecthomas/kingpin/v2"
	_ "github.com/go-kit/log"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/prometheus/common/config"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/prometheus/common/version"
	_ "github.com/prometheus/exporter-toolkit/web"
	_ "github.com/prometheus/exporter-toolkit/web/kingpinflag"
	_ "github.com/prometheus/prometheus/model/rulefmt"
	_ "github.com/prometheus/prometheus/promql/parser"
	_ "github.com/schollz/progressbar/v3"
	_ "go.uber.org/goleak"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/term"
	_ "gonum.org/v1/plot"
)
