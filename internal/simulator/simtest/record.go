package simtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Exchange is one request a Recorder passed on (or failed) and the response
// body the client received.
type Exchange struct {
	Path     string
	Header   http.Header // the request's headers
	Request  []byte
	Status   int
	Response []byte
}

// ChatMessage is one message of a recorded chat request.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Messages returns the "messages" of the recorded request (nil when it has
// none or is not JSON).
func (e Exchange) Messages() []ChatMessage {
	var body struct {
		Messages []ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(e.Request, &body)
	return body.Messages
}

// Reply returns the text the response streamed: the concatenated
// choices[0].delta.content (chat) or choices[0].text (completions) of its
// SSE events.
func (e Exchange) Reply() string {
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(e.Response))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && len(ev.Choices) > 0 {
			b.WriteString(ev.Choices[0].Text)
			b.WriteString(ev.Choices[0].Delta.Content)
		}
	}
	return b.String()
}

// Recorder is a reverse proxy in front of a server (the simulator) that
// records every POST it passes on, with the response body as streamed. Its
// Fail, when set before the first request, may answer a POST itself with
// the status it returns (0: pass it on); n counts the POSTs from 1.
type Recorder struct {
	URL  string
	Fail func(n int, body []byte) int

	target string
	mu     sync.Mutex
	n      int
	log    []Exchange
}

// Record starts a Recorder for target (a base URL) on a loopback port,
// closed with t.Cleanup. GETs are passed on unrecorded.
func Record(t testing.TB, target string) *Recorder {
	t.Helper()
	r := &Recorder{target: strings.TrimRight(target, "/")}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Exchanges returns the POSTs recorded so far, in the order they ended.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.log...)
}

// ServeHTTP implements http.Handler.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	post := req.Method == http.MethodPost
	n := 0
	if post {
		r.mu.Lock()
		r.n++
		n = r.n
		r.mu.Unlock()
	}
	if post && r.Fail != nil {
		if code := r.Fail(n, body); code != 0 {
			msg := []byte(`{"object":"error","message":"failed by the test recorder","type":"InternalServerError","code":` + itoa(code) + `}`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write(msg)
			r.add(Exchange{Path: req.URL.Path, Header: req.Header.Clone(), Request: body, Status: code, Response: msg})
			return
		}
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, r.target+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	var got bytes.Buffer
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			got.Write(buf[:k])
			if _, werr := w.Write(buf[:k]); werr != nil {
				break
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if rerr != nil {
			break
		}
	}
	if post {
		r.add(Exchange{Path: req.URL.Path, Header: req.Header.Clone(), Request: body, Status: resp.StatusCode, Response: got.Bytes()})
	}
}

func (r *Recorder) add(e Exchange) {
	r.mu.Lock()
	r.log = append(r.log, e)
	r.mu.Unlock()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
