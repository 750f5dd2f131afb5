package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/capfile"
)

// maxCollectorReplyBytes bounds an OTLP collector's answer to an export
// (a partial-success message at most).
const maxCollectorReplyBytes = 1 << 20

// maxCertFileBytes bounds a certificate or key file named by an
// OTEL_EXPORTER_OTLP_*CERTIFICATE / *CLIENT_KEY variable.
const maxCertFileBytes = 1 << 20

// exportClient is the OTLP HTTP exporter's client: llmprobe's, as the
// exporter's own follows redirects, with the export's custom headers (a
// tenant, an API key) and to the address a Location names. It follows
// none (bounded.NoRedirects: a 3xx is a failed export), bounds the
// collector's answer (bounded.Transport), takes the proxy from the
// environment as the exporter does, and its TLS from o.TLS or, when nil,
// from the OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE, _CLIENT_CERTIFICATE
// and _CLIENT_KEY variables, which the exporter reads only into its own
// client.
func exportClient(o Options) (*http.Client, error) { return exportClientFor(o, "TRACES") }

// exportClientFor is exportClient for one OTLP signal: "TRACES" or
// "METRICS", whose OTEL_EXPORTER_OTLP_<signal>_* certificate variables
// come before the general ones.
func exportClientFor(o Options, signal string) (*http.Client, error) {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("http.DefaultTransport is not an *http.Transport")
	}
	t := base.Clone()
	t.TLSClientConfig = o.TLS
	if o.TLS == nil && !o.Insecure {
		c, err := envTLS(signal)
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = c
	}
	hc := bounded.NewClient(&bounded.Transport{Next: t, Limit: maxCollectorReplyBytes, Input: "OTLP collector answer"}, o.Timeout)
	return hc, nil
}

// firstEnv returns the first non-empty variable of names, and its name.
func firstEnv(names ...string) (string, string) {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v, n
		}
	}
	return "", ""
}

// envTLS is the TLS configuration the OTEL_EXPORTER_OTLP_* certificate
// variables ask for (nil when none is set), their files read through the
// bounded reader.
func envTLS(signal string) (*tls.Config, error) {
	ca, caVar := firstEnv("OTEL_EXPORTER_OTLP_"+signal+"_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE")
	cert, certVar := firstEnv("OTEL_EXPORTER_OTLP_"+signal+"_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")
	key, keyVar := firstEnv("OTEL_EXPORTER_OTLP_"+signal+"_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	read := func(path, v string) ([]byte, error) {
		b, err := capfile.ReadRegular(path, maxCertFileBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		return b, nil
	}
	if ca != "" {
		pem, err := read(ca, caVar)
		if err != nil {
			return nil, err
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", caVar, ca)
		}
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together")
		}
		cb, err := read(cert, certVar)
		if err != nil {
			return nil, err
		}
		kb, err := read(key, keyVar)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(cb, kb)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certVar, keyVar, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// exporterOptions are one OTLP exporter package's option constructors
// (otlptracehttp, otlptracegrpc, otlpmetrichttp, otlpmetricgrpc), so that
// Options map to each the same way.
type exporterOptions[O any] struct {
	timeout  func(time.Duration) O
	endpoint func(string) O
	insecure func() O
	headers  func(map[string]string) O
	tls      func(*tls.Config) O
}

// of returns o's options: the timeout, the endpoint (url, when o has
// one), insecure, the headers, and the TLS configuration unless insecure.
func (e exporterOptions[O]) of(o Options, url string) []O {
	opts := []O{e.timeout(o.Timeout)}
	if o.Endpoint != "" {
		opts = append(opts, e.endpoint(url))
	}
	if o.Insecure {
		opts = append(opts, e.insecure())
	}
	if len(o.Headers) > 0 {
		opts = append(opts, e.headers(o.Headers))
	}
	if o.TLS != nil && !o.Insecure {
		opts = append(opts, e.tls(o.TLS))
	}
	return opts
}
