package workload

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// tokenizeServer is a tiny vLLM-shaped /tokenize: chunkCount for prompts,
// chatCount for messages. status overrides the answer when non-zero.
type tokenizeServer struct {
	*httptest.Server
	calls  atomic.Int64
	status atomic.Int64
	body   atomic.Value // string: raw body to send instead of JSON
	last   atomic.Value // http.Header of the last request
}

func newTokenizeServer(t *testing.T) *tokenizeServer {
	t.Helper()
	ts := &tokenizeServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		ts.calls.Add(1)
		ts.last.Store(r.Header.Clone())
		if s := ts.status.Load(); s != 0 {
			w.WriteHeader(int(s))
			if b, _ := ts.body.Load().(string); b != "" {
				w.Write([]byte(b)) // the error body given
				return
			}
			w.Write([]byte(`{"object":"error","message":"model   \"x\" does not exist","type":"NotFoundError","code":404}`))
			return
		}
		if b, _ := ts.body.Load().(string); b != "" {
			w.Write([]byte(b))
			return
		}
		var req struct {
			Model    string  `json:"model"`
			Prompt   *string `json:"prompt"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var n int
		switch {
		case req.Prompt != nil:
			n = chunkCount(*req.Prompt)
		case len(req.Messages) == 1 && req.Messages[0].Role == "user":
			n = chatCount(req.Messages[0].Content)
		default:
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"count": n, "max_model_len": 4096, "tokens": make([]int, n)})
	})
	ts.Server = httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func TestServerTokenizer(t *testing.T) {
	ts := newTokenizeServer(t)
	ctx := context.Background()
	tests := []struct {
		name string
		base string
		chat bool
		text string
		want int
	}{
		{name: "completions", base: ts.URL, text: "the quick brownish fox", want: chunkCount("the quick brownish fox")},
		{name: "trailing /v1/ trimmed", base: ts.URL + "/v1/", text: "a b c", want: 4},
		{name: "chat messages", base: ts.URL, chat: true, text: "a b c", want: 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := NewServerTokenizer(ServerTokenizerOptions{BaseURL: tc.base, Model: "m", Chat: tc.chat,
				Header: http.Header{"Authorization": {"Bearer sekret"}}})
			if err != nil {
				t.Fatal(err)
			}
			n, err := tok.Count(ctx, tc.text)
			if err != nil || n != tc.want {
				t.Fatalf("Count = %d, %v; want %d", n, err, tc.want)
			}
			if tok.MaxModelLen() != 4096 || Method(tok) != MethodServerTokenize {
				t.Fatalf("MaxModelLen %d, Method %q", tok.MaxModelLen(), Method(tok))
			}
			if h := ts.last.Load().(http.Header); h.Get("Authorization") != "Bearer sekret" || h.Get("Content-Type") != "application/json" {
				t.Fatalf("request headers %v", h)
			}
		})
	}
}

func TestServerTokenizerErrors(t *testing.T) {
	ts := newTokenizeServer(t)
	tests := []struct {
		name          string
		status        int
		body          string
		model         string
		maxBytes      int64
		wantErr       string
		unsupported   bool
		modelNotFound bool
	}{
		{name: "404 is unsupported", status: 404, wantErr: "tokenize: HTTP 404: server has no /tokenize endpoint", unsupported: true},
		{name: "405 is unsupported", status: 405, wantErr: "tokenize: HTTP 405", unsupported: true},
		{name: "404 naming the model is a wrong model", status: 404, model: "wrong",
			body:    `{"object":"error","message":"The model ` + "`wrong`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
			wantErr: "tokenize: HTTP 404: The model `wrong` does not exist.: the server does not serve this model", modelNotFound: true},
		{name: "500 short message", status: 500, wantErr: `tokenize: HTTP 500: model "x" does not exist`},
		{name: "400 from the server", model: "other", wantErr: "tokenize: HTTP 400: bad request"},
		{name: "bad json", body: "{", wantErr: "tokenize: bad response"},
		{name: "no count", body: `{"tokens":[]}`, wantErr: "tokenize: response has no valid count"},
		{name: "negative count", body: `{"count":-1}`, wantErr: "tokenize: response has no valid count"},
		{name: "too large", body: `{"count":1,"tokens":[1,2,3,4,5,6,7,8,9]}`, maxBytes: 10, wantErr: "tokenize: response larger than 10 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts.status.Store(int64(tc.status))
			ts.body.Store(tc.body)
			model := "m"
			if tc.model != "" {
				model = tc.model
			}
			tok, err := NewServerTokenizer(ServerTokenizerOptions{BaseURL: ts.URL, Model: model, MaxResponseBytes: tc.maxBytes,
				Header: http.Header{"Authorization": {"Bearer sekret"}}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tok.Count(context.Background(), "hello")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "sekret") {
				t.Fatal("error leaks the API key")
			}
			if got := errors.Is(err, ErrTokenizeUnsupported); got != tc.unsupported {
				t.Fatalf("errors.Is(ErrTokenizeUnsupported) = %v", got)
			}
			if got := errors.Is(err, ErrModelNotFound); got != tc.modelNotFound {
				t.Fatalf("errors.Is(ErrModelNotFound) = %v", got)
			}
		})
	}
	if _, err := NewServerTokenizer(ServerTokenizerOptions{BaseURL: "127.0.0.1:8000"}); err == nil {
		t.Fatal("base url without scheme accepted")
	}
	tok, _ := NewServerTokenizer(ServerTokenizerOptions{BaseURL: "http://127.0.0.1:1"})
	if _, err := tok.Count(context.Background(), "x"); err == nil || errors.Is(err, ErrTokenizeUnsupported) {
		t.Fatalf("connection refused: %v", err)
	}
}

func TestGeneratorWithServerTokenizer(t *testing.T) {
	ts := newTokenizeServer(t)
	for _, chat := range []bool{false, true} {
		tok, err := NewServerTokenizer(ServerTokenizerOptions{BaseURL: ts.URL, Model: "m", Chat: chat})
		if err != nil {
			t.Fatal(err)
		}
		g := newGen(t, Spec{InputTokens: Fixed(128), OutputTokens: Fixed(16), PrefixTokens: 16}, 9)
		before := ts.calls.Load()
		its := items(t, g, tok, 400) // 100 s of a 4 req/s probe
		calls := ts.calls.Load() - before
		if calls > 12 {
			t.Fatalf("chat=%v: %d /tokenize calls for 400 items of one length", chat, calls)
		}
		for _, it := range its {
			if !it.Exact() {
				t.Fatalf("chat=%v: item %d has %d tokens, want %d", chat, it.Index, it.PromptTokens, 144)
			}
		}
		if n, _ := tok.Count(context.Background(), its[399].Prompt); n != 144 {
			t.Fatalf("chat=%v: server counts %d tokens in a salted prompt, want 144", chat, n)
		}
		if info := g.Info(); info.Method != MethodServerTokenize || info.TokenizeCalls != calls {
			t.Fatalf("info %+v, server saw %d calls", info, calls)
		}
	}
}

func TestCalibrate(t *testing.T) {
	text32, text256 := CalibrationText(32), CalibrationText(256)
	tests := []struct {
		name          string
		obs           []Observation
		intercept, pw float64
		wantErr       string
	}{
		{name: "one observation", obs: []Observation{{text256, 320}}, pw: 1.25},
		{name: "two lengths fit the overhead", obs: []Observation{{text32, 1 + 40}, {text256, 1 + 320}}, intercept: 1, pw: 1.25},
		{name: "same length twice", obs: []Observation{{text32, 40}, {text32, 44}}, pw: 42.0 / 32},
		{name: "none", wantErr: "calibrate: no observation"},
		{name: "empty text", obs: []Observation{{" ", 3}}, wantErr: "calibrate: observation 0 has no words"},
		{name: "zero tokens", obs: []Observation{{text32, 0}}, wantErr: "calibrate: observation 0 has prompt_tokens 0, want > 0"},
		{name: "decreasing fit", obs: []Observation{{text32, 100}, {text256, 50}}, wantErr: "calibrate: fitted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Calibrate(tc.obs...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(c.Intercept-tc.intercept) > 1e-9 || math.Abs(c.PerWord-tc.pw) > 1e-9 {
				t.Fatalf("fit %+v, want intercept %v per word %v", c, tc.intercept, tc.pw)
			}
		})
	}
	if n := len(strings.Fields(text256)); n != 256 || CalibrationText(256) != text256 {
		t.Fatalf("CalibrationText(256) has %d words or is not deterministic", n)
	}
}

func TestGeneratorCalibrated(t *testing.T) {
	// The server (chunkCount) has no /tokenize: calibrate from two usage
	// figures, then size prompts with the estimate.
	obs := []Observation{{CalibrationText(32), chunkCount(CalibrationText(32))}, {CalibrationText(256), chunkCount(CalibrationText(256))}}
	c, err := Calibrate(obs...)
	if err != nil {
		t.Fatal(err)
	}
	g := newGen(t, Spec{InputTokens: LengthSpec{Dist: DistUniform, Value: 300, RangeRatio: 0.3}, OutputTokens: Fixed(16)}, 4)
	its := items(t, g, c, 200)
	var relErr float64
	for _, it := range its {
		// The estimate moves in steps of PerWord (~1.6 here): some targets
		// are only reachable within one token.
		if abs(it.PromptTokens-it.InputTokens) > 1 {
			t.Fatalf("item %d: estimate %d, target %d", it.Index, it.PromptTokens, it.InputTokens)
		}
		relErr += math.Abs(float64(chunkCount(it.Prompt)-it.InputTokens)) / float64(it.InputTokens)
	}
	// The true count of a calibrated prompt is close, not exact.
	if m := relErr / 200; m > 0.05 {
		t.Fatalf("mean relative error of the true count %.3f, want < 5%%", m)
	}
	if g.Info().Method != MethodCalibrated {
		t.Fatalf("method %q", g.Info().Method)
	}
}
