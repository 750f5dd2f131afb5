package client

import (
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/redact"
)

// NewRedactor returns the Redactor of one target: it knows the API key and
// every secret of cfg as HTTPSecrets reads them now (files read once), the
// user:password pairs of basic auth and of proxy_url with their base64 (as
// the Authorization and Proxy-Authorization headers carry them), and the
// base64 client_id:client_secret an OAuth2 token request sends. What the
// client sends later (OAuth2 access tokens, rotated files) is added by the
// transport of NewHTTPClient as it is sent. An unreadable file is an
// *HTTPConfigError, as from HTTPSecrets; the Redactor is returned anyway
// with what could be read.
func NewRedactor(apiKey config.Secret, cfg config.HTTPClientConfig) (*redact.Redactor, error) {
	secrets, err := HTTPSecrets(cfg)
	red := redact.New(append([]string{string(apiKey)}, SecretValues(secrets)...)...)
	if b := cfg.BasicAuth; b != nil {
		user, pw := b.Username, string(b.Password)
		for _, s := range secrets {
			switch s.Field {
			case "basic_auth.password", "basic_auth.password_file":
				pw = s.Value
			}
		}
		if b.UsernameFile != "" {
			if v, err := readSecretFile(b.UsernameFile); err == nil {
				user = v
			}
		}
		if pw != "" {
			red.AddUserPassword(user + ":" + pw)
		}
	}
	if o := cfg.OAuth2; o != nil {
		for _, s := range secrets {
			if s.Field == "oauth2.client_secret" || s.Field == "oauth2.client_secret_file" {
				red.AddUserPassword(url.QueryEscape(o.ClientID) + ":" + url.QueryEscape(s.Value))
			}
		}
	}
	if u := cfg.ProxyURL.URL; u != nil {
		addProxyUser(red, u)
	}
	return red, err
}

// addProxyUser registers the userinfo of a proxy URL as the transport
// sends it (Proxy-Authorization: Basic base64(user:password)).
func addProxyUser(red *redact.Redactor, u *url.URL) {
	if u == nil || u.User == nil {
		return
	}
	pw, _ := u.User.Password()
	red.AddUserPassword(u.User.Username() + ":" + pw)
}

// secretFile is a secret file the transport re-reads when it changes: one
// whose content does not pass through a header it writes (the OAuth2
// client secret, sent to the token endpoint by a client of its own).
type secretFile struct {
	path  string
	stamp atomic.Pointer[fileStamp] // as last read
}

// fileStamp tells a changed file from the one last read: a rotation
// writes a new file (inode), or rewrites it (size, modification time).
type fileStamp struct {
	mod       time.Time
	size, ino int64
}

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}
}

// refresh registers the file's content with red when it changed since the
// last read: one stat per request, a read only on a change, so the
// redactor knows a rotated secret before the request that sends it.
func (f *secretFile) refresh(red *redact.Redactor) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return
	}
	st := stampOf(fi)
	if old := f.stamp.Load(); old != nil && *old == st {
		return
	}
	if v, err := readSecretFile(f.path); err == nil {
		red.Add(v)
		f.stamp.Store(&st)
	}
}

// secretsTransport is the outermost RoundTripper of NewHTTPClient: it
// registers with red every credential the request carries as it is
// written to the wire. It puts an httptrace hook (WroteHeaderField) into
// the request's context, which the innermost http.Transport calls for
// every header line it writes, after prometheus/common's round trippers
// added theirs: so the registered values are those actually sent (the
// Authorization of an API key, bearer token, basic auth or an OAuth2
// access token as fetched, a credentials file as read for this request,
// the http_headers secrets, the Proxy-Authorization the transport adds for
// an http target behind proxy_url). The userinfo of the proxy chosen for
// the request (proxy_url or the environment) is registered before it is
// sent, since the CONNECT request of an https target is written without
// the hook.
type secretsTransport struct {
	next    http.RoundTripper
	red     *redact.Redactor
	proxy   func(*http.Request) (*url.URL, error)
	headers map[string]bool        // canonical names of http_headers with secrets or files
	hook    func(string, []string) // wroteHeaderField, bound once
	files   []*secretFile          // secret files re-read when they change
}

func newSecretsTransport(next http.RoundTripper, cfg config.HTTPClientConfig, red *redact.Redactor) *secretsTransport {
	t := &secretsTransport{next: next, red: red, headers: map[string]bool{}}
	if cfg.ProxyURL.URL != nil || cfg.ProxyFromEnvironment {
		t.proxy = cfg.Proxy()
	}
	if h := cfg.HTTPHeaders; h != nil {
		for n, hdr := range h.Headers {
			if len(hdr.Secrets) > 0 || len(hdr.Files) > 0 {
				t.headers[http.CanonicalHeaderKey(n)] = true
			}
		}
	}
	if o := cfg.OAuth2; o != nil {
		for _, f := range []string{o.ClientSecretFile, o.ClientCertificateKeyFile} {
			if f != "" {
				t.files = append(t.files, &secretFile{path: f})
			}
		}
	}
	for _, vs := range cfg.ProxyConnectHeader {
		for _, v := range vs {
			red.Add(string(v)) // sent with the CONNECT request, which the hook does not see
		}
	}
	t.hook = t.wroteHeaderField
	return t
}

// RoundTrip registers the proxy's userinfo and re-read files, then sends
// req with the header hook in its context.
func (t *secretsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.proxy != nil {
		if u, err := t.proxy(req); err == nil {
			addProxyUser(t.red, u)
		}
	}
	for _, f := range t.files {
		f.refresh(t.red)
	}
	// A new ClientTrace per request: WithClientTrace composes an existing
	// trace into the one it is given, which must not be shared.
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{WroteHeaderField: t.hook})
	return t.next.RoundTrip(req.WithContext(ctx))
}

// CloseIdleConnections closes the idle connections of the wrapped
// transport (http.Client.CloseIdleConnections reaches it through here).
func (t *secretsTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// wroteHeaderField registers the values of a credential header line.
func (t *secretsTransport) wroteHeaderField(key string, values []string) {
	switch key {
	case "Authorization", "Proxy-Authorization":
		for _, v := range values {
			t.red.AddCredential(v)
		}
		return
	case "Cookie", "X-Api-Key", "Api-Key":
	default:
		if !t.headers[http.CanonicalHeaderKey(key)] {
			return
		}
	}
	for _, v := range values {
		t.red.Add(v)
	}
}

// WithRedactor returns a copy of hc whose transport registers with red
// every credential it sends, as NewHTTPClient's does (for a client a
// caller built itself; cfg says which headers carry secrets and which
// proxy is used). Redirects are off in the copy.
func WithRedactor(hc *http.Client, cfg config.HTTPClientConfig, red *redact.Redactor) *http.Client {
	c := *hc
	c.CheckRedirect = NoRedirects
	if red == nil {
		return &c
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = newSecretsTransport(next, cfg, red)
	return &c
}
