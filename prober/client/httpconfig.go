package client

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/capfile"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// MaxSecretFileBytes caps what HTTPSecrets reads from one secret file of an
// HTTP config (a bearer token, a password, a header value): a larger file
// is an error naming it.
const MaxSecretFileBytes = 64 << 10

// NewHTTPClient returns the HTTP client that carries every request of one
// target (generation, discovery, /tokenize, calibration, /metrics), built
// from cfg with prometheus/common's config.NewRoundTripperFromConfig: TLS
// (CA, client certificate, server name, insecure_skip_verify), bearer token
// or authorization credentials (inline or from a file read at each
// request), basic auth, OAuth2, proxy_url and http_headers. name labels the
// connections (go-conntrack's dialer name).
//
// The transport keeps the properties of NewTransport where
// prometheus/common lets it: HTTP/1.1 only (one stream per connection, as
// vllm bench serve; enable_http2 is ignored), keep-alive with up to 1000
// idle connections per host (prometheus/common's figure), no transparent
// compression, a 30 s dial timeout, a 90 s idle timeout, and no proxy unless
// proxy_url or proxy_from_environment says so. Redirects are never
// followed, whatever follow_redirects says: CheckRedirect is NoRedirects,
// so a redirect is answered as it is (a failure naming its Location) and
// no credential ever goes to another address; that holds for the OAuth2
// token endpoint too (oauth2Transport fetches tokens with a client of
// llmprobe's own).
//
// Every credential the client sends is registered with red as it is sent
// (secretsTransport: the Authorization and Proxy-Authorization values, the
// http_headers secrets, the proxy's userinfo), so that red removes them
// from whatever may echo them; red is usually NewRedactor's for the same
// cfg, and may be nil (nothing is registered).
//
// A zero cfg gives a plain client with no credentials. The client is safe
// for concurrent use; CloseIdleConnections releases its pool.
func NewHTTPClient(cfg config.HTTPClientConfig, name string, red *redact.Redactor) (*http.Client, error) {
	cfg.FollowRedirects = false
	cfg.EnableHTTP2 = false
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	opts := []config.HTTPClientOption{
		config.WithDialContextFunc(d.DialContext),
		config.WithHTTP2Disabled(),
		config.WithIdleConnTimeout(90 * time.Second),
	}
	// OAuth2 is llmprobe's own transport (its token client follows no
	// redirect); prometheus/common builds the rest.
	o := cfg.OAuth2
	cfg.OAuth2 = nil
	rt, err := config.NewRoundTripperFromConfig(cfg, name, opts...)
	if err != nil {
		return nil, err
	}
	if o != nil {
		if rt, err = newOAuth2Transport(rt, *o, name, opts...); err != nil {
			return nil, err
		}
		cfg.OAuth2 = o
	}
	if red != nil {
		rt = newSecretsTransport(rt, cfg, red)
	}
	return bounded.NewClient(rt, 0), nil
}

// HTTPSecret is one secret an HTTP config sends, as HTTPSecrets found it.
type HTTPSecret struct {
	// Field is where it is set in the http_config, e.g.
	// "basic_auth.password_file" or "http_headers.X-Key.secrets".
	Field string
	// File is the file it was read from; "" for an inline value.
	File string
	// Value is the secret as it is sent (a file's content trimmed of
	// surrounding space, as prometheus/common sends it).
	Value string
}

// HTTPConfigError is an HTTPSecrets failure: the field of the http_config
// whose file could not be read.
type HTTPConfigError struct {
	Field string
	Err   error
}

// Error names the field and the cause.
func (e *HTTPConfigError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *HTTPConfigError) Unwrap() error { return e.Err }

// HTTPSecrets returns every secret cfg sends, so that they can be redacted
// from whatever may echo them (error messages, a server's answer): the
// bearer token or authorization credentials, the basic-auth password (and
// the base64 user:password of its header when the username is known), the
// OAuth2 client secret, the secret values of http_headers and the content
// of their files, proxy_connect_header values, the password of proxy_url
// and an inline TLS key. Each
// file is read once, now (at most MaxSecretFileBytes): a file rotated later
// is known again when the client is rebuilt (a reload, the next sweep).
// Secrets named by reference (*_ref, a secret manager) are not known and
// not supported. The order is deterministic; empty values are left out.
// An unreadable file is an *HTTPConfigError naming the field.
func HTTPSecrets(cfg config.HTTPClientConfig) ([]HTTPSecret, error) {
	var out []HTTPSecret
	var errs []error
	add := func(field string, inline config.Secret, file string) string {
		if inline != "" {
			out = append(out, HTTPSecret{Field: field, Value: string(inline)})
			return string(inline)
		}
		if file == "" {
			return ""
		}
		v, err := readSecretFile(file)
		if err != nil {
			errs = append(errs, &HTTPConfigError{Field: field + "_file", Err: err})
			return ""
		}
		if v != "" {
			out = append(out, HTTPSecret{Field: field + "_file", File: file, Value: v})
		}
		return v
	}
	add("bearer_token", cfg.BearerToken, cfg.BearerTokenFile)
	if a := cfg.Authorization; a != nil {
		add("authorization.credentials", a.Credentials, a.CredentialsFile)
	}
	if b := cfg.BasicAuth; b != nil {
		user := b.Username
		if b.UsernameFile != "" {
			if v, err := readSecretFile(b.UsernameFile); err != nil {
				errs = append(errs, &HTTPConfigError{Field: "basic_auth.username_file", Err: err})
			} else {
				user = v
			}
		}
		if pw := add("basic_auth.password", b.Password, b.PasswordFile); pw != "" {
			out = append(out, HTTPSecret{Field: "basic_auth", Value: base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))})
		}
	}
	if o := cfg.OAuth2; o != nil {
		add("oauth2.client_secret", o.ClientSecret, o.ClientSecretFile)
		add("oauth2.client_certificate_key", o.ClientCertificateKey, "")
	}
	add("tls_config.key", cfg.TLSConfig.Key, "")
	if h := cfg.HTTPHeaders; h != nil {
		names := make([]string, 0, len(h.Headers))
		for n := range h.Headers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			for _, s := range h.Headers[n].Secrets {
				add("http_headers."+n+".secrets", s, "")
			}
			for _, f := range h.Headers[n].Files {
				v, err := readSecretFile(f)
				if err != nil {
					errs = append(errs, &HTTPConfigError{Field: "http_headers." + n + ".files", Err: err})
					continue
				}
				if v != "" {
					out = append(out, HTTPSecret{Field: "http_headers." + n + ".files", File: f, Value: v})
				}
			}
		}
	}
	if u := cfg.ProxyURL.URL; u != nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, HTTPSecret{Field: "proxy_url", Value: pw})
		}
	}
	names := make([]string, 0, len(cfg.ProxyConnectHeader))
	for n := range cfg.ProxyConnectHeader {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, s := range cfg.ProxyConnectHeader[n] {
			add("proxy_connect_header."+n, s, "")
		}
	}
	return out, errors.Join(errs...)
}

// SecretValues returns the values of secrets (for redact.Secrets and
// Options.Secrets).
func SecretValues(secrets []HTTPSecret) []string {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		out = append(out, s.Value)
	}
	return out
}

// readSecretFile reads a secret file as prometheus/common does (content
// trimmed of surrounding space), at most MaxSecretFileBytes.
func readSecretFile(path string) (string, error) {
	// A FIFO or device would block or stream forever: regular files only
	// (a symlink is followed, so Kubernetes secret mounts work), read
	// through the bounded reader.
	if _, err := os.Stat(path); err != nil {
		return "", err // "stat PATH: ...", as prometheus/common's checks of the other files say
	}
	b, err := capfile.ReadRegular(path, MaxSecretFileBytes)
	var ne *capfile.NotRegularError
	var te *capfile.TooLargeError
	switch {
	case errors.As(err, &ne):
		return "", fmt.Errorf("%s is not a regular file", path)
	case errors.As(err, &te):
		return "", fmt.Errorf("%s: the file is larger than %d bytes, the cap on a secret file", path, MaxSecretFileBytes)
	case err != nil:
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
