package client

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/common/config"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/llmprobe/llmprobe/prober/bounded"
)

// MaxTokenResponseBytes caps an OAuth2 token endpoint's answer (x/oauth2
// reads at most 1 MiB of it as well).
const MaxTokenResponseBytes = 1 << 20

// tokenTimeout bounds one access-token fetch: x/oauth2 does not pass the
// probe's context to the token request.
const tokenTimeout = 30 * time.Second

// grantTypeJWTBearer is RFC 7523's grant type, as prometheus/common spells
// it.
const grantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// oauth2Transport adds an OAuth2 access token to each request, as
// prometheus/common's OAuth2 round tripper does (client credentials, or
// RFC 7523's JWT bearer grant with the same settings), but fetches the
// token with a client of llmprobe's own: it follows no redirect
// (bounded.NoRedirects), so the client secret or signed assertion never
// goes to an address a token endpoint's Location names, bounds the answer
// and times out. The client secret or key file is re-read when it changed
// (a stat per request), and the token source rebuilt from the new value.
type oauth2Transport struct {
	next  http.RoundTripper
	cfg   config.OAuth2
	fetch *http.Client // the token endpoint's client

	mu     sync.Mutex
	stamp  fileStamp // of the secret file as last read
	secret string
	src    oauth2.TokenSource
}

// newOAuth2Transport returns next with o's access tokens. The token client
// has o's own tls_config and proxy settings, as prometheus/common's.
func newOAuth2Transport(next http.RoundTripper, o config.OAuth2, name string, opts ...config.HTTPClientOption) (*oauth2Transport, error) {
	if o.ClientSecretRef != "" || o.ClientCertificateKeyRef != "" {
		return nil, fmt.Errorf("oauth2: secret references need a secret manager, which llmprobe has not: use the *_file form")
	}
	hc := config.HTTPClientConfig{TLSConfig: o.TLSConfig, ProxyConfig: o.ProxyConfig}
	rt, err := config.NewRoundTripperFromConfig(hc, name+"_oauth2", opts...)
	if err != nil {
		return nil, fmt.Errorf("oauth2: %w", err)
	}
	fetch := bounded.NewClient(&bounded.Transport{Next: rt, Limit: MaxTokenResponseBytes, Input: "OAuth2 token answer"}, tokenTimeout)
	return &oauth2Transport{next: next, cfg: o, fetch: fetch}, nil
}

// secretFile returns the file the credential is read from ("" when inline).
func (t *oauth2Transport) secretFile() string {
	if t.cfg.GrantType == grantTypeJWTBearer {
		return t.cfg.ClientCertificateKeyFile
	}
	return t.cfg.ClientSecretFile
}

// source returns the token source for the current credential, rebuilt
// when its file changed.
func (t *oauth2Transport) source() (oauth2.TokenSource, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	path := t.secretFile()
	if t.src != nil && path == "" {
		return t.src, nil
	}
	secret := string(t.cfg.ClientSecret)
	if t.cfg.GrantType == grantTypeJWTBearer {
		secret = string(t.cfg.ClientCertificateKey)
	}
	if path != "" {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("oauth2: unable to read the client credential: %w", err)
		}
		st := stampOf(fi)
		if t.src != nil && st == t.stamp {
			return t.src, nil
		}
		if secret, err = readSecretFile(path); err != nil {
			return nil, fmt.Errorf("oauth2: unable to read the client credential: %w", err)
		}
		t.stamp = st
		if t.src != nil && secret == t.secret {
			return t.src, nil
		}
	}
	t.secret, t.src = secret, t.newSource(secret)
	return t.src, nil
}

// newSource is prometheus/common's token source for the credential, with
// the token client in its context.
func (t *oauth2Transport) newSource(credential string) oauth2.TokenSource {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, t.fetch)
	o := t.cfg
	params := make(map[string][]string, len(o.EndpointParams))
	for k, v := range o.EndpointParams {
		params[k] = []string{v}
	}
	if o.GrantType == grantTypeJWTBearer {
		sig := jwt.SigningMethodRS256
		switch o.SignatureAlgorithm {
		case jwt.SigningMethodRS384.Name:
			sig = jwt.SigningMethodRS384
		case jwt.SigningMethodRS512.Name:
			sig = jwt.SigningMethodRS512
		}
		iss := o.Iss
		if iss == "" {
			iss = o.ClientID
		}
		c := &config.JwtGrantTypeConfig{
			PrivateKey: []byte(credential), PrivateKeyID: o.ClientCertificateKeyID, Scopes: o.Scopes,
			TokenURL: o.TokenURL, SigningAlgorithm: sig, Iss: iss, Subject: o.ClientID, Audience: o.Audience,
			PrivateClaims: o.Claims, EndpointParams: params,
		}
		return c.TokenSource(ctx)
	}
	c := &clientcredentials.Config{ClientID: o.ClientID, ClientSecret: credential, Scopes: o.Scopes,
		TokenURL: o.TokenURL, EndpointParams: params}
	return c.TokenSource(ctx)
}

// RoundTrip sends a copy of req with the access token.
func (t *oauth2Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	src, err := t.source()
	if err == nil {
		var tok *oauth2.Token
		if tok, err = src.Token(); err == nil {
			r2 := req.Clone(req.Context())
			tok.SetAuthHeader(r2)
			return t.next.RoundTrip(r2)
		}
		err = fmt.Errorf("oauth2: %w", err)
	}
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, err
}

// CloseIdleConnections closes the idle connections of both clients.
func (t *oauth2Transport) CloseIdleConnections() {
	t.fetch.CloseIdleConnections()
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
