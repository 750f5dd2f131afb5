package sweep

import (
	"time"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/redact"
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
	red, err := client.NewRedactor(r.cfg.APIKey, r.cfg.HTTPConfig)
	if err != nil {
		return nil, fieldErr("HTTPConfig", "%w", err)
	}
	r.red = red
	if r.loadClient, err = client.NewHTTPClient(r.cfg.HTTPConfig, "llmprobe-sweep", red); err != nil {
		return nil, fieldErr("HTTPConfig", "%w", err)
	}
	closers := []func(){r.loadClient.CloseIdleConnections}
	if r.http != nil {
		r.http = client.WithRedactor(r.http, r.cfg.HTTPConfig, red)
		return closers, nil
	}
	if r.http, err = client.NewHTTPClient(r.cfg.HTTPConfig, "llmprobe-sweep-metrics", red); err != nil {
		return closers, fieldErr("HTTPConfig", "%w", err)
	}
	r.http.Timeout = metricsTimeout
	return append(closers, r.http.CloseIdleConnections), nil
}

// redact removes credentials from text that may quote a server (an error
// message, a reason): the secrets of the sweep's Redactor (the API key,
// those of the HTTP config, every credential its clients sent) and
// whatever redact.Text removes.
func (r *runner) redact(s string) string { return r.red.Redact(s) }

// redactBody removes the secrets of the sweep's Redactor from a /metrics
// body before it reaches an artifact: a server that echoes request headers
// into a label value (or a proxy that does) must not put them into
// metrics-*.txt. Only the literal secrets go (the exposition stays
// parseable).
func (r *runner) redactBody(b []byte) []byte { return r.red.RedactBytes(b) }

// Redactor returns the sweep's registry of secrets (nil before Prepare
// built the clients), for callers that write what the sweep did not
// produce (a copy of the server's log).
func (p *Prepared) Redactor() *redact.Redactor { return p.r.red }

// Secrets returns the literal secrets the sweep sends: the API key and
// those of HTTPConfig (client.HTTPSecrets, files read now; an unreadable
// one is left out), longest first. Callers redact text the sweep did not
// produce with them (redact.Secrets), e.g. an error before
// Prepare.
func (c Config) Secrets() []string {
	secrets, _ := client.HTTPSecrets(c.HTTPConfig)
	return redact.SortSecrets(append([]string{string(c.APIKey)}, client.SecretValues(secrets)...))
}

// CheckClient returns the prepared sweep's client of its model, its API
// (completions or chat) and the redaction of its endpoint's secrets: the
// same request path as its load, for requests outside the load (compare's
// answer checks: answer.Send).
func (p *Prepared) CheckClient() (c *client.Client, api string, redact func(string) string) {
	return p.r.client, p.r.cfg.API, p.r.ep.Redact
}
