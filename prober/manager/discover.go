package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober"
)

// serverInfo is what the manager learns about a target from /v1/models and
// /version. Empty strings mean "not known".
type serverInfo struct {
	Model       string
	MaxModelLen string
	Version     string
}

// discoverError is a failed discovery, classified like a failed request so
// that a down endpoint shows up in the probe metrics with its real class.
type discoverError struct {
	class prober.ErrorClass
	msg   string
}

func (e *discoverError) Error() string { return e.msg }

func getJSON(ctx context.Context, hc *http.Client, url string, key config.Secret, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, &discoverError{prober.ClassConnect, err.Error()}
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+string(key))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, &discoverError{classifyErr(ctx, err), "GET " + redactedPath(url) + ": " + shortErr(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, &discoverError{prober.ClassStream, "reading " + redactedPath(url) + ": " + shortErr(err)}
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, &discoverError{prober.ClassForStatus(resp.StatusCode), fmt.Sprintf("GET %s: HTTP %d", redactedPath(url), resp.StatusCode)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return resp.StatusCode, &discoverError{prober.ClassInvalidResponse, "GET " + redactedPath(url) + ": bad JSON: " + shortErr(err)}
	}
	return resp.StatusCode, nil
}

// classifyErr classifies a transport error of a discovery request.
func classifyErr(ctx context.Context, err error) prober.ErrorClass {
	var ne net.Error
	var he interface{ StatusCode() int }
	switch {
	case ctx.Err() != nil:
		return prober.ClassCanceled
	case errors.As(err, &ne) && ne.Timeout():
		return prober.ClassTimeout
	case errors.As(err, &he):
		return prober.ClassForStatus(he.StatusCode())
	}
	return prober.ClassConnect
}

// listModel reads GET /v1/models and returns the entry named want, or the
// first one when want is empty, with its max_model_len (vLLM adds it to each
// model object; "" when absent or not an integer).
func listModel(ctx context.Context, hc *http.Client, baseURL string, key config.Secret, want string) (model, maxLen string, err error) {
	var resp struct {
		Data []struct {
			ID          string          `json:"id"`
			MaxModelLen json.RawMessage `json:"max_model_len"`
		} `json:"data"`
	}
	if _, err := getJSON(ctx, hc, baseURL+"/v1/models", key, &resp); err != nil {
		return "", "", err
	}
	for _, d := range resp.Data {
		if d.ID == "" || (want != "" && d.ID != want) {
			continue
		}
		ml := strings.Trim(string(d.MaxModelLen), `"`)
		if _, err := strconv.Atoi(ml); err != nil {
			ml = ""
		}
		return d.ID, ml, nil
	}
	if want != "" {
		return "", "", &discoverError{prober.ClassInvalidResponse, "GET /v1/models: model " + want + " not listed"}
	}
	return "", "", &discoverError{prober.ClassInvalidResponse, "GET /v1/models: no model listed"}
}

// discoverVersion reads GET /version ({"version": "..."}), "" when absent.
func discoverVersion(ctx context.Context, hc *http.Client, baseURL string, key config.Secret) string {
	var resp struct {
		Version string `json:"version"`
	}
	if _, err := getJSON(ctx, hc, baseURL+"/version", key, &resp); err != nil {
		return ""
	}
	return resp.Version
}

func redactedPath(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return rest[j:]
		}
	}
	return u
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
