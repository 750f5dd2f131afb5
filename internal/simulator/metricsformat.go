package simulator

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The exposition formats /metrics serves (Config.MetricsFormat).
const (
	// MetricsFormatText serves the Prometheus text format 0.0.4 whatever
	// Accept says, as Python's prometheus_client does unless asked for
	// OpenMetrics (the default).
	MetricsFormatText = "text"
	// MetricsFormatOpenMetrics serves OpenMetrics 1.0 whatever Accept
	// says (the format of vLLM's Rust frontend, VLLM_USE_RUST_FRONTEND=1;
	// its families are VLLMFrontendRust's): counters typed by their base
	// name with _total and _created samples, and a final "# EOF". The
	// families stay the persona's.
	MetricsFormatOpenMetrics = "openmetrics"
	// MetricsFormatProtobuf serves the delimited protobuf format when
	// Accept asks for it and the text format otherwise, as a Go server's
	// promhttp does.
	MetricsFormatProtobuf = "protobuf"
)

// MetricsFormats are the values of --metrics-format.
var MetricsFormats = []string{MetricsFormatText, MetricsFormatOpenMetrics, MetricsFormatProtobuf}

// validateMetricsFormat checks --metrics-format ("" is the text format).
func validateMetricsFormat(f string) error {
	if f != "" && !slices.Contains(MetricsFormats, f) {
		return fmt.Errorf("--metrics-format must be one of %s, got %q", strings.Join(MetricsFormats, ", "), f)
	}
	return nil
}

// metricsHandler serves reg's exposition in format (Config.MetricsFormat).
// promhttp encodes every format and negotiates compression; a forced
// format replaces the request's Accept header.
func metricsHandler(reg prometheus.Gatherer, format string) http.Handler {
	switch format {
	case MetricsFormatOpenMetrics:
		h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, EnableOpenMetricsTextCreatedSamples: true})
		return forceAccept(h, "application/openmetrics-text;version=1.0.0")
	case MetricsFormatProtobuf:
		return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	default:
		return forceAccept(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), "text/plain;version=0.0.4")
	}
}

func forceAccept(h http.Handler, accept string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.Header.Set("Accept", accept)
		h.ServeHTTP(w, r)
	})
}
