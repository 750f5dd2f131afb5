package sweep

import (
	"bytes"
	"time"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
)

// metricsTimeout bounds each /metrics read of the sweep's own client.
const metricsTimeout = 10 * time.Second

// httpClients builds the sweep's HTTP clients from Config.HTTPConfig
// (client.NewHTTPClient): one for the endpoint's requests (generation,
// discovery, /tokenize, calibration) and, unless Options.HTTPClient is
// given, one for /metrics with a 10 s timeout, each with its own pool. A
// given Options.HTTPClient is copied with redirects off. It reads the
// config's secrets once, for redaction. It returns the closers of what it
// built; an error is a *FieldError of HTTPConfig.
func (r *runner) httpClients() ([]func(), error) {
	secrets, err := client.HTTPSecrets(r.cfg.HTTPConfig)
	if err != nil {
		return nil, fieldErr("HTTPConfig", "%w", err)
	}
	r.secrets = fingerprint.SortSecrets(append([]string{string(r.cfg.APIKey)}, client.SecretValues(secrets)...))
	if r.loadClient, err = client.NewHTTPClient(r.cfg.HTTPConfig, "llmprobe-sweep"); err != nil {
		return nil, fieldErr("HTTPConfig", "%w", err)
	}
	closers := []func(){r.loadClient.CloseIdleConnections}
	if r.http != nil {
		c := *r.http
		c.CheckRedirect = client.NoRedirects
		r.http = &c
		return closers, nil
	}
	if r.http, err = client.NewHTTPClient(r.cfg.HTTPConfig, "llmprobe-sweep-metrics"); err != nil {
		return closers, fieldErr("HTTPConfig", "%w", err)
	}
	r.http.Timeout = metricsTimeout
	return append(closers, r.http.CloseIdleConnections), nil
}

// redact removes credentials from text that may quote a server (an error
// message, a reason): fingerprint.RedactText plus the literal API key and
// the secrets of the HTTP config.
func (r *runner) redact(s string) string {
	return fingerprint.RedactSecrets(s, r.secrets...)
}

// redactBody removes the API key and the HTTP config's secrets from a
// /metrics body before it reaches an artifact: a server that echoes
// request headers into a label value (or a proxy that does) must not put
// them into metrics-*.txt.
func (r *runner) redactBody(b []byte) []byte {
	for _, sec := range r.secrets {
		if bytes.Contains(b, []byte(sec)) {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(fingerprint.Redacted))
		}
	}
	return b
}

// Secrets returns the literal secrets the sweep sends: the API key and
// those of HTTPConfig (client.HTTPSecrets, files read now; an unreadable
// one is left out), longest first. Callers redact text the sweep did not
// produce with them (fingerprint.RedactSecrets), e.g. an error before
// Prepare.
func (c Config) Secrets() []string {
	secrets, _ := client.HTTPSecrets(c.HTTPConfig)
	return fingerprint.SortSecrets(append([]string{string(c.APIKey)}, client.SecretValues(secrets)...))
}
