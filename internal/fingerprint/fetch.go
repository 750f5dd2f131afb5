package fingerprint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// DefaultFetchTimeout bounds each Fetcher request when Fetcher.Client is nil.
const DefaultFetchTimeout = 5 * time.Second

// maxBody caps how much of a response the Fetcher reads.
const maxBody = 4 << 20

// Fetcher reads target facts for the fingerprint from an OpenAI-compatible
// server. Every method returns NotRecorded values on any failure (connection
// refused, non-2xx status, bad JSON, missing field) and never an error: a
// fingerprint field that cannot be read is not-recorded, never a guess.
// A Fetcher is safe for concurrent use if its Client is.
type Fetcher struct {
	// Client sends the requests; nil means a client with DefaultFetchTimeout.
	Client *http.Client
	// BaseURL is the target's base URL, with or without a trailing "/v1"
	// ("http://127.0.0.1:8000" and "http://127.0.0.1:8000/v1" are the same).
	BaseURL string
	// Header is added to every request (e.g. Authorization). It is never
	// recorded anywhere.
	Header http.Header
}

// ModelInfo is what GET /v1/models says about one model.
type ModelInfo struct {
	// ID is the served model id, Root the model path or name it was loaded
	// from (vLLM's "root"), MaxModelLen its context length.
	ID          string
	Root        string
	MaxModelLen Int
}

// urls returns the /v1/models and /version URLs for BaseURL.
func (f Fetcher) urls() (models, version string) {
	base := strings.TrimRight(f.BaseURL, "/")
	root := strings.TrimSuffix(base, "/v1")
	return root + "/v1/models", root + "/version"
}

func (f Fetcher) get(ctx context.Context, url string, v any) error {
	c := f.Client
	if c == nil {
		c = &http.Client{Timeout: DefaultFetchTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	for k, vs := range f.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", RedactText(url), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("read %s: %w", RedactText(url), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("get %s: status %d", RedactText(url), resp.StatusCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w", RedactText(url), err)
	}
	return nil
}

// Model fetches GET /v1/models and returns the entry whose id is model, or
// the first entry when model is empty. Any field the server does not give
// (root and max_model_len are vLLM extensions) is NotRecorded; a failed
// request or a model not listed makes every field NotRecorded.
func (f Fetcher) Model(ctx context.Context, model string) ModelInfo {
	out := ModelInfo{ID: NotRecorded, Root: NotRecorded}
	modelsURL, _ := f.urls()
	var list struct {
		Data []struct {
			ID          string          `json:"id"`
			Root        *string         `json:"root"`
			MaxModelLen json.RawMessage `json:"max_model_len"`
		} `json:"data"`
	}
	if err := f.get(ctx, modelsURL, &list); err != nil {
		return out
	}
	for _, m := range list.Data {
		if model != "" && m.ID != model {
			continue
		}
		out.ID = OrNotRecorded(m.ID)
		if m.Root != nil {
			out.Root = OrNotRecorded(*m.Root)
		}
		var n int64
		if len(m.MaxModelLen) > 0 && json.Unmarshal(m.MaxModelLen, &n) == nil && n > 0 {
			out.MaxModelLen = Known(n)
		}
		return out
	}
	return out
}

// ServerVersion fetches GET /version (vLLM answers {"version": "0.11.0"})
// and returns the version, or NotRecorded.
func (f Fetcher) ServerVersion(ctx context.Context) string {
	_, versionURL := f.urls()
	var v struct {
		Version any `json:"version"`
	}
	if err := f.get(ctx, versionURL, &v); err != nil {
		return NotRecorded
	}
	s, ok := v.Version.(string)
	if !ok {
		return NotRecorded
	}
	return OrNotRecorded(strings.TrimSpace(s))
}

// CacheConfigMetric is vLLM's info-style gauge whose labels describe the
// engine's cache configuration.
const CacheConfigMetric = "vllm:cache_config_info"

// EngineConfig returns the labels of vllm:cache_config_info from a /metrics
// exposition in the Prometheus text format, or nil (encoded "not-recorded")
// when the metric is absent or cannot be parsed. With several engines (data
// parallel) the series of the lowest "engine" label is taken. Only the
// metric's own lines are parsed, so unrelated lines the parser rejects do
// not matter.
func EngineConfig(metrics []byte) Labels {
	var lines bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, CacheConfigMetric+"{") || strings.HasPrefix(l, CacheConfigMetric+" ") {
			lines.WriteString(l)
			lines.WriteByte('\n')
		}
	}
	if lines.Len() == 0 {
		return nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&lines)
	if err != nil {
		return nil
	}
	fam, ok := fams[CacheConfigMetric]
	if !ok || len(fam.GetMetric()) == 0 {
		return nil
	}
	all := make([]Labels, 0, len(fam.GetMetric()))
	for _, m := range fam.GetMetric() {
		l := Labels{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		all = append(all, l)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i]["engine"] < all[j]["engine"] })
	return all[0]
}
