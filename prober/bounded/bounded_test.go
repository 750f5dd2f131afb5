package bounded

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRead(t *testing.T) {
	f := func(body string, size, limit int64, want string) {
		t.Helper()
		b, err := Read(strings.NewReader(body), size, "test input", limit)
		got := string(b)
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("Read(%q, %d, %d) = %q, want %q", body, size, limit, got, want)
		}
	}
	f("hello", 5, 5, "hello")
	f("hello", -1, 5, "hello")
	f("", -1, 5, "")
	f("hello!", -1, 5, "test input larger than 5 bytes")
	f("hello!", 3, 5, "test input larger than 5 bytes") // a wrong announcement is no licence
	f("hello!", 6, 5, "test input announced 6 bytes (Content-Length), more than the 5 allowed; not read")
	f(strings.Repeat("x", 5000), -1, 5000, strings.Repeat("x", 5000))
	f(strings.Repeat("x", 5001), -1, 5000, "test input larger than 5000 bytes")
}

// endless never ends; it counts what was taken.
type endless struct{ n atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) { e.n.Add(int64(len(p))); return len(p), nil }

func TestReadEndless(t *testing.T) {
	var e endless
	_, err := Read(&e, -1, "", 1<<20)
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != "response body larger than 1048576 bytes" {
		t.Fatalf("err %v", err)
	}
	if e.n.Load() > 1<<20+1<<16 {
		t.Errorf("took %d bytes for a 1 MiB bound", e.n.Load())
	}
}

// TestTransport: a body announced over the bound is refused before it is
// read, an unannounced one fails once past the bound, a redirect is
// neither followed by NewClient nor sent by Transport under a client that
// would follow it.
func TestTransport(t *testing.T) {
	var other atomic.Int32
	dst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer dst.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/announced":
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(200)
		case "/chunked":
			for range 100 {
				fmt.Fprint(w, strings.Repeat("y", 100))
				w.(http.Flusher).Flush()
			}
		case "/redirect":
			http.Redirect(w, r, dst.URL+"/x", http.StatusTemporaryRedirect)
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	tr := &Transport{Limit: 500, Input: "test answer"}
	hc := NewClient(tr, 0)
	get := func(path string) string {
		resp, err := hc.Get(srv.URL + path + "?key=sekrit")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Sprint(resp.StatusCode, " ", err)
		}
		return fmt.Sprint(resp.StatusCode, " ", string(b))
	}
	for path, want := range map[string]string{
		"/ok":        "200 ok",
		"/announced": `Get "` + srv.URL + `/announced?key=sekrit": test answer of ` + srv.URL + "/announced?<redacted> announced 1000 bytes (Content-Length), more than the 500 allowed; not read",
		"/chunked":   "200 test answer of " + srv.URL + "/chunked?<redacted> larger than 500 bytes",
		"/redirect":  "307 <a href",
	} {
		if got := get(path); !strings.HasPrefix(got, want) {
			t.Errorf("GET %s: %q, want %q", path, got, want)
		}
	}
	follows := &http.Client{Transport: tr} // a library's client: follows redirects
	resp, err := follows.Get(srv.URL + "/redirect")
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrRedirect) {
		t.Errorf("a following client: %v, want ErrRedirect", err)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}
