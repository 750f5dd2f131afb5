package scrape

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestFetchNeverFollowsRedirects: even with a client that follows
// redirects (http.DefaultClient, or nil), a redirect is a *StatusError
// naming its Location (credentials redacted) and nothing reaches it.
func TestFetchNeverFollowsRedirects(t *testing.T) {
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer other.Close()
	loc := strings.Replace(other.URL, "http://", "http://u:pw-secret@", 1) + "/metrics"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, loc, http.StatusFound)
	}))
	defer srv.Close()
	for _, hc := range []*http.Client{nil, http.DefaultClient} {
		_, err := Fetch(context.Background(), hc, srv.URL+"/metrics", WithBearerToken("tok-secret"))
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusFound || !strings.Contains(err.Error(), "redirect to http://<redacted>@") {
			t.Errorf("err = %v, want a 302 naming the redacted Location", err)
		}
		if strings.Contains(err.Error(), "pw-secret") {
			t.Errorf("the Location's password is in %v", err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests followed the redirect", n)
	}
}
