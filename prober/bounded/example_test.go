package bounded_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/llmprobe/llmprobe/prober/bounded"
)

// ExampleReadBody reads a reply through the one client policy and the one
// body reader: the redirect is answered as it is, and a body announcing
// more than the bound is refused before a byte of it is read.
func ExampleReadBody() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "http://elsewhere.example/steal", http.StatusFound)
		case "/big":
			w.Header().Set("Content-Length", "104857600")
			w.WriteHeader(http.StatusOK)
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	hc := bounded.NewClient(nil, 0)
	for _, path := range []string{"/ok", "/moved", "/big"} {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			continue
		}
		b, err := bounded.ReadBody(resp, "reply", 1<<20)
		resp.Body.Close()
		if err != nil {
			fmt.Println(resp.StatusCode, err)
			continue
		}
		fmt.Println(resp.StatusCode, strings.TrimSpace(string(b))[:min(len(b), 12)])
	}
	// Output:
	// 200 ok
	// 302 <a href="htt
	// 200 reply announced 104857600 bytes (Content-Length), more than the 1048576 allowed; not read
}
